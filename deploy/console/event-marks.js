// What the map's event marks show, as plain functions (no DOM, no Leaflet; node tests them in
// Tests/Console/marks_test.mjs): which events have a mark (a position, the last hour), how old
// a mark is, how much it has faded, and which glyph its type gets. events-layer.js draws them.

/// Marks are shown for this long after their event, fading from MARK_OPACITY_NEW to MARK_OPACITY_OLD.
export const MARK_WINDOW_MS = 3600 * 1000;
export const MARK_OPACITY_NEW = 1;
export const MARK_OPACITY_OLD = 0.2;

/// Glyphs: enter (a triangle up), exit (down), dwell (a square), the alert types (a diamond),
/// anything else (trips, speed and types to come: a plain disc).
const GLYPHS = {
    enter: 'enter', exit: 'exit', dwell: 'dwell',
    offRoute: 'alert', late: 'alert', missed: 'alert', overspeed: 'alert',
};

export function markGlyph(type) {
    return Object.prototype.hasOwnProperty.call(GLYPHS, type) ? GLYPHS[type] : 'other';
}

/// When an event happened for the page (ms): when the gateway decided it (`emitted`), else its
/// position's fix time; NaN without either. (A `stale` exit's position is the last fix, which
/// may be long before: it counts from its decision.)
export function eventTime(e) {
    const emitted = typeof e.emitted === 'string' ? Date.parse(e.emitted) : NaN;
    if (!Number.isNaN(emitted)) return emitted;
    return e.position && typeof e.position.time === 'string' ? Date.parse(e.position.time) : NaN;
}

/// How opaque a mark of this age (ms) is: new ones full, fading linearly over the window, 0
/// (not shown) past it. A future time (the browser's clock behind the gateway's) counts as new.
export function markOpacity(age) {
    if (!(age <= MARK_WINDOW_MS)) return 0;
    if (age <= 0) return MARK_OPACITY_NEW;
    return MARK_OPACITY_NEW - (MARK_OPACITY_NEW - MARK_OPACITY_OLD) * (age / MARK_WINDOW_MS);
}

/// The marks to draw at `now` (ms) from events newest first (the store's marks): [{event, lat,
/// lon, glyph, opacity}], the ones of the last MARK_WINDOW_MS with a position. An event without
/// a time of its own counts from when the page got it (`received`, ms, set by the caller).
export function visibleMarks(events, now, received = () => NaN) {
    const out = [];
    for (const e of events) {
        const p = e.position;
        if (!p || typeof p.lat !== 'number' || typeof p.lon !== 'number') continue;
        let t = eventTime(e);
        if (Number.isNaN(t)) t = received(e);
        const opacity = markOpacity(now - t);
        if (opacity <= 0) continue;
        out.push({ event: e, lat: p.lat, lon: p.lon, glyph: markGlyph(e.type), opacity });
    }
    return out;
}
