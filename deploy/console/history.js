// The console's history, as plain code (no DOM, no Leaflet; node tests it in
// Tests/Console/history_test.mjs): a device's track from the gateway's `track` query and where
// the device was at a time (a binary search), queries paged by `offset` with a few pages in
// flight, the events of the `events` query merged with the live ones by id, an event's fix
// time, and the replay clock of the time slider (docs/console.md "The last hour").

/// The slider's window: the last hour.
export const HOUR_MS = 3600 * 1000;
/// Devices asked per `track` query of several devices: their positions come in parts of under
/// 4 KB (a position is about 60 bytes of JSON), a reply at most 900 KiB (about 15,000 positions:
/// 200 devices' hour at a position a minute fits; a reply cut short is continued).
export const TRACK_BATCH = 200;
/// Events asked per page of an `events` query (an event is some 400-700 bytes of JSON).
export const EVENTS_PAGE = 6;
/// History queries (pages) in flight at once: a gateway writes at most 4 replies at a time for
/// one querying user and answers more with "busy" (docs/control-plane.md).
export const IN_FLIGHT = 4;
/// A replay fetches each device's track from this long before the hour, so that a device has a
/// position at the hour's start.
export const TRACK_MARGIN_MS = 10 * 60 * 1000;

/// An event's fix time (ms): its position's `time`, else its own `time` (trip events), else
/// when the gateway decided it (`emitted`); NaN without any. The `events` query and the slider
/// go by it.
export function fixTime(e) {
    for (const t of [e && e.position && e.position.time, e && e.time, e && e.emitted]) {
        if (typeof t !== 'string') continue;
        const ms = Date.parse(t);
        if (!Number.isNaN(ms)) return ms;
    }
    return NaN;
}

/// The index of the last of `times` (ascending) that is <= t, or -1 when every one is later.
export function indexAt(times, t) {
    let low = 0, high = times.length; // the answer + 1 lies in [low, high]
    while (low < high) {
        const mid = (low + high) >>> 1;
        if (times[mid] <= t) low = mid + 1;
        else high = mid;
    }
    return low - 1;
}

/// A device's track: positions oldest first, kept as three plain arrays (a 10,000-device
/// replay searches them every frame).
export class Track {
    constructor() {
        this.times = [];
        this.lats = [];
        this.lons = [];
    }

    get length() { return this.times.length; }

    /// Appends the `positions` of a track reply ([{lat, lon, time}], oldest first), skipping
    /// any not later than the last one held or not well formed; returns how many were taken.
    append(positions) {
        let taken = 0;
        for (const p of positions || []) {
            if (!p || typeof p.lat !== 'number' || typeof p.lon !== 'number' || typeof p.time !== 'string') continue;
            const t = Date.parse(p.time);
            if (Number.isNaN(t) || (this.times.length && t <= this.times[this.times.length - 1])) continue;
            this.times.push(t);
            this.lats.push(p.lat);
            this.lons.push(p.lon);
            taken++;
        }
        return taken;
    }

    /// The last position at or before `t` (ms): {lat, lon, time (ms), index}, or null.
    at(t) {
        const i = indexAt(this.times, t);
        return i < 0 ? null : { lat: this.lats[i], lon: this.lons[i], time: this.times[i], index: i };
    }

    /// The last time held (ms), or NaN.
    get last() { return this.times.length ? this.times[this.times.length - 1] : NaN; }
}

/// A query paged by `offset`: `ask(offset, limit)` resolves to {items, truncated} or {error}.
/// Up to `inFlight` pages are asked at once (offset 0, limit, 2 x limit, ...); a page cut short
/// by the reply budget (fewer items, truncated) is asked again from where it stopped, and
/// asking stops at the first page that ends the list (not truncated). Resolves to {items (in
/// offset order), truncated (`max` items reached with more to come), error}.
export function paged(ask, { limit, inFlight = IN_FLIGHT, max = Infinity } = {}) {
    return new Promise((resolve) => {
        const pages = new Map(); // offset -> items
        const gaps = [];         // [offset, limit]: the rest of a page cut short
        let end = Infinity;      // the number of items, once a page said where they end
        let next = 0;            // the next offset not asked yet
        let running = 0;
        let error = null;
        let more = false;        // the page at `max` said more follow
        const finish = () => {
            const items = [];
            for (const offset of [...pages.keys()].sort((a, b) => a - b)) {
                if (offset !== items.length) break; // a hole: an error left it
                for (const item of pages.get(offset)) {
                    if (items.length >= end || items.length >= max) break;
                    items.push(item);
                }
            }
            resolve({ items, truncated: more && end === Infinity && items.length >= max, error });
        };
        const launch = () => {
            while (!error && running < inFlight) {
                let range;
                if (gaps.length) range = gaps.shift();
                else if (next < end && next < max) {
                    range = [next, Math.min(limit, max - next)];
                    next += range[1];
                } else break;
                running++;
                const [offset, n] = range;
                Promise.resolve()
                    .then(() => ask(offset, n))
                    .then((reply) => settle(offset, n, reply), (e) => settle(offset, n, { error: String(e && e.message ? e.message : e) }));
            }
            if (running === 0) finish();
        };
        const settle = (offset, n, reply) => {
            running--;
            if (!reply || typeof reply.error === 'string' || !Array.isArray(reply.items)) {
                error = error || (reply && typeof reply.error === 'string' ? reply.error : 'a reply of unknown shape');
            } else {
                const items = reply.items.slice(0, n);
                pages.set(offset, items);
                if (items.length < n) {
                    // Cut short by the budget: the rest again; else (or nothing fitted) the end.
                    if (reply.truncated === true && items.length > 0) gaps.push([offset + items.length, n - items.length]);
                    else end = Math.min(end, offset + items.length);
                } else if (reply.truncated !== true) {
                    end = Math.min(end, offset + items.length);
                } else if (offset + n >= max) {
                    more = true;
                }
            }
            launch();
        };
        launch();
    });
}

/// `list` (events newest first by fix time) with `incoming` events added: those whose `id` is
/// not among `known` (a Set of ids, updated), newest first, at most `limit`. Returns
/// {list, added, dropped} (dropped: the ids that fell off the end).
export function mergeEvents(list, incoming, known, limit) {
    const added = [];
    for (const e of incoming) {
        if (!e || typeof e.id !== 'string' || known.has(e.id)) continue;
        known.add(e.id);
        added.push(e);
    }
    if (!added.length) return { list, added, dropped: [] };
    const key = (e) => { const t = fixTime(e); return Number.isNaN(t) ? -Infinity : t; };
    const merged = list.concat(added).sort((a, b) => key(b) - key(a) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    const dropped = merged.length > limit ? merged.splice(limit).map((e) => e.id) : [];
    for (const id of dropped) known.delete(id);
    return { list: merged, added, dropped };
}

/// The replay clock: live (time null) or a time in the past (ms) that runs at `speed` times
/// the wall clock while playing. Wall times are the caller's (performance.now()).
export class ReplayClock {
    constructor() {
        this.time = null;
        this.speed = 1;
        this.playing = false;
        this.wall = 0;
    }

    get live() { return this.time === null; }

    /// To time `t` (ms), paused or playing as it was.
    seek(t, wall) {
        this.time = t;
        this.wall = wall;
    }

    play(wall) {
        if (this.time === null) return;
        this.advance(wall);
        this.playing = true;
        this.wall = wall;
    }

    pause(wall) {
        this.advance(wall);
        this.playing = false;
    }

    setSpeed(speed, wall) {
        this.advance(wall);
        this.speed = speed;
    }

    /// The replay time at `wall`, moved on by the wall time since the last call while playing;
    /// never past `until` (ms: the present): reaching it stops the clock there, and `ended`
    /// says so (the console then goes live).
    advance(wall, until = Infinity) {
        if (this.time === null) return null;
        if (this.playing) this.time += (wall - this.wall) * this.speed;
        this.wall = wall;
        this.ended = this.time >= until;
        if (this.ended) { this.time = until; this.playing = false; }
        return this.time;
    }

    goLive() {
        this.time = null;
        this.playing = false;
    }
}

/// The time a slider's "HH:MM:SS" (UTC) names within the hour before `now` (ms): the latest
/// such time not after now; null for text that is not a time of day.
export function timeOfDay(text, now) {
    const m = /^\s*(\d{1,2}):(\d{2})(?::(\d{2}))?\s*$/.exec(text || '');
    if (!m) return null;
    const [h, min, s] = [Number(m[1]), Number(m[2]), Number(m[3] || 0)];
    if (h > 23 || min > 59 || s > 59) return null;
    const day = new Date(now);
    let t = Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate(), h, min, s);
    if (t > now) t -= 24 * HOUR_MS;
    return t;
}
