// Trips (docs/trips.md): what the page draws of one, in plain functions (no DOM, no Leaflet):
// its route's line from the request (a GeoJSON LineString, or a line fence the page holds),
// the route cut at the progress's `along` (the part driven and the part ahead), the words of
// its state and ETA, and the request the page's form publishes.

function isObject(v) { return v !== null && typeof v === 'object' && !Array.isArray(v); }
function isNumber(v) { return typeof v === 'number' && Number.isFinite(v); }

/// A trip's states that end it (the gateway leaves such a progress for a day).
export const FINAL_STATES = new Set(['arrived', 'missed', 'cancelled']);

/// One trip id: what the gateway accepts ([A-Za-z0-9_-], at most 64).
export function validTripId(id) {
    return typeof id === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(id);
}

/// The [lon, lat] positions of a request's route: its GeoJSON LineString (a geometry or a
/// Feature holding one), or the LineString of the fence it names among `fences` (the store's
/// "LAYER/ID" -> {geometry}); null when the page cannot draw it.
export function routeCoordinates(request, fences) {
    if (!isObject(request) || !isObject(request.route)) return null;
    const route = request.route;
    let g = null;
    if (typeof route.layer === 'string' && typeof route.fence === 'string') {
        const f = fences && fences.get(`${route.layer}/${route.fence}`);
        g = f ? f.geometry : null;
    } else {
        g = route.type === 'Feature' ? route.geometry : route;
    }
    if (!isObject(g) || g.type !== 'LineString' || !Array.isArray(g.coordinates)) return null;
    const line = g.coordinates.filter((c) => Array.isArray(c) && isNumber(c[0]) && isNumber(c[1]));
    return line.length >= 2 ? line : null;
}

/// Metres between two [lon, lat] positions (haversine, mean radius: near enough to the
/// gateway's ellipsoid for drawing).
export function metresBetween(a, b) {
    const rad = Math.PI / 180;
    const dLat = (b[1] - a[1]) * rad;
    let dLon = (b[0] - a[0]) * rad;
    if (dLon > Math.PI) dLon -= 2 * Math.PI;
    if (dLon < -Math.PI) dLon += 2 * Math.PI;
    const h = Math.sin(dLat / 2) ** 2 + Math.cos(a[1] * rad) * Math.cos(b[1] * rad) * Math.sin(dLon / 2) ** 2;
    return 2 * 6371008.8 * Math.asin(Math.min(1, Math.sqrt(h)));
}

/// The route cut `along` metres from its start: {driven, ahead, at} ([lon, lat] lines and the
/// position at `along`; driven is empty at 0, ahead is empty past the end).
export function splitRoute(line, along) {
    const a = isNumber(along) && along > 0 ? along : 0;
    if (a === 0) return { driven: [], ahead: line.slice(), at: line[0] };
    let walked = 0;
    for (let i = 1; i < line.length; i++) {
        const d = metresBetween(line[i - 1], line[i]);
        if (walked + d >= a) {
            const t = d > 0 ? (a - walked) / d : 0;
            const at = [line[i - 1][0] + (line[i][0] - line[i - 1][0]) * t, line[i - 1][1] + (line[i][1] - line[i - 1][1]) * t];
            return { driven: [...line.slice(0, i), at], ahead: [at, ...line.slice(i)], at };
        }
        walked += d;
    }
    return { driven: line.slice(), ahead: [], at: line[line.length - 1] };
}

/// The trip in words for its label: "ID · STATE · ETA HH:MM:SS" (UTC; what is known of it).
export function tripLabel(id, progress) {
    const parts = [id, progress && typeof progress.state === 'string' ? progress.state : 'requested'];
    if (progress && typeof progress.eta === 'string') {
        const d = new Date(progress.eta);
        parts.push(`ETA ${Number.isNaN(d.getTime()) ? progress.eta : d.toISOString().slice(11, 19)}`);
    }
    if (progress && isNumber(progress.remaining)) parts.push(`${Math.round(progress.remaining)} m to go`);
    return parts.join(' · ');
}

/// The request the form publishes, or {error} in words. `route`: "LAYER/FENCE" or a GeoJSON
/// LineString; `to`: "LAYER/FENCE" or empty; `corridor` metres; `minutes` from `now` to `by`
/// (empty: no deadline).
export function tripRequest({ device, route, to, corridor, minutes }, now = Date.now()) {
    if (typeof device !== 'string' || !device) return { error: 'pick a device' };
    const request = { device };
    if (isObject(route) && route.type === 'LineString') request.route = route;
    else if (typeof route === 'string' && route.indexOf('/') > 0) request.route = { layer: route.slice(0, route.indexOf('/')), fence: route.slice(route.indexOf('/') + 1) };
    else return { error: 'pick a route (a line fence, or draw one)' };
    if (typeof to === 'string' && to) {
        const slash = to.indexOf('/');
        if (slash < 1) return { error: 'the destination is a fence: LAYER/FENCE' };
        request.to = { layer: to.slice(0, slash), fence: to.slice(slash + 1) };
    }
    if (corridor !== undefined && corridor !== '') {
        const c = Number(corridor);
        if (!(c > 0)) return { error: 'the corridor is metres either side of the route, above 0' };
        request.corridor = c;
    }
    if (minutes !== undefined && minutes !== '') {
        const m = Number(minutes);
        if (!(m > 0)) return { error: 'by: minutes from now, above 0' };
        request.by = new Date(now + m * 60000).toISOString().replace(/\.\d+Z$/, 'Z');
    }
    return request;
}
