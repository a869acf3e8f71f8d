// The console's history (deploy/console/history.js and the store's `history`): where a device
// was at a time (binary search over its track), a track appended page by page, queries paged
// by offset with pages in flight (cut short by the budget, ending, failing, at the most asked),
// events of the journal merged with the live ones by id (no duplicates, newest first, bounded),
// the replay clock at 1x and 60x stopping at the present, times of day typed in the slider; the
// track and events queries through the console's Actions against stand-in gateways.
// Run: node Tests/Console/history_test.mjs   (exit status 1 on a failure)
import { load } from './load.mjs';
const { indexAt, Track, paged, mergeEvents, fixTime, ReplayClock, timeOfDay, HOUR_MS } = await load('history.js');
const { Store, EVENT_LIMIT } = await load('store.js');

let failures = 0, checks = 0;
function same(name, actual, expected) {
    checks++;
    const a = JSON.stringify(actual), e = JSON.stringify(expected);
    if (a !== e) { failures++; console.log(`FAIL ${name}\n  got      ${a}\n  expected ${e}`); }
}

// Binary search: the last time <= t.
const times = [10, 20, 30, 40];
same('indexAt: before all, on each, between, after all', [5, 10, 15, 20, 39, 40, 99].map((t) => indexAt(times, t)), [-1, 0, 0, 1, 2, 3, 3]);
same('indexAt: an empty track', indexAt([], 5), -1);
// Against a linear scan over many times and probes.
const many = Array.from({ length: 1000 }, (_, i) => i * 10 + (i % 7));
let wrong = 0;
for (let t = -5; t < 10100; t += 3) {
    let linear = -1;
    for (let i = 0; i < many.length; i++) if (many[i] <= t) linear = i;
    if (indexAt(many, t) !== linear) wrong++;
}
same('indexAt agrees with a linear scan (3,368 probes)', wrong, 0);

// A track: appended page by page, older or equal times and bad rows skipped; at(t).
const iso = (s) => new Date(Date.UTC(2026, 11, 7, 14, 0, s)).toISOString();
const track = new Track();
same('a first page taken', track.append([{ lat: 1, lon: 2, time: iso(0) }, { lat: 1.1, lon: 2.1, time: iso(10) }]), 2);
same('a second page: a repeated time, a bad row, one new', track.append([{ lat: 9, lon: 9, time: iso(10) }, { lat: 'x', lon: 1, time: iso(15) }, { lat: 1.2, lon: 2.2, time: iso(20) }]), 1);
same('at(t): before, on, between, after', [track.at(Date.parse(iso(0)) - 1), track.at(Date.parse(iso(0))), track.at(Date.parse(iso(15))), track.at(Date.parse(iso(99)))].map((p) => p && [p.lat, p.index]),
    [null, [1, 0], [1.1, 1], [1.2, 2]]);
same('last', track.last, Date.parse(iso(20)));

// Paged queries against a stand-in: `total` items, pages of at most `budget` items (the reply budget).
function server(total, { budget = Infinity, failAt = -1, delay = (offset) => (offset * 7) % 5 } = {}) {
    const asked = [];
    let running = 0, most = 0;
    const ask = (offset, limit) => new Promise((resolve) => {
        asked.push([offset, limit]);
        running++;
        most = Math.max(most, running);
        setTimeout(() => {
            running--;
            if (offset === failAt) { resolve({ error: 'busy: too many' }); return; }
            const n = Math.max(0, Math.min(limit, budget, total - offset));
            const items = Array.from({ length: n }, (_, i) => offset + i);
            resolve({ items, truncated: offset + n < total });
        }, delay(offset));
    });
    return { ask, asked, most: () => most };
}
const all = (n) => Array.from({ length: n }, (_, i) => i);
{
    const s = server(23);
    const r = await paged(s.ask, { limit: 5, inFlight: 3 });
    same('paged: every item once, in order', r.items, all(23));
    same('paged: no more than 3 in flight, and stops soon after the end', [s.most() <= 3, s.asked.length <= 5 + 3], [true, true]);
    same('paged: not truncated, no error', [r.truncated, r.error], [false, null]);
}
{
    const s = server(40, { budget: 3 });
    const r = await paged(s.ask, { limit: 5, inFlight: 4 });
    same('paged: pages cut short by the budget are asked again from where they stopped', r.items, all(40));
}
{
    const s = server(10);
    const r = await paged(s.ask, { limit: 5 });
    same('paged: a list of exactly two pages', [r.items, r.truncated], [all(10), false]);
    const e = await paged(server(0).ask, { limit: 5 });
    same('paged: an empty list', [e.items, e.error], [[], null]);
}
{
    const s = server(100);
    const r = await paged(s.ask, { limit: 5, max: 12 });
    same('paged: at most `max`, truncated when more follow', [r.items, r.truncated, s.asked.every(([o, l]) => o + l <= 12)], [all(12), true, true]);
}
{
    const r = await paged(server(30, { failAt: 10 }).ask, { limit: 5, inFlight: 1 });
    same('paged: an error stops it, the items before it kept', [r.items, r.error], [all(10), 'busy: too many']);
}

// Merging by id: no duplicates, newest first by fix time, bounded.
const ev = (id, s) => ({ id, type: 'enter', position: { lat: 1, lon: 2, time: iso(s) }, emitted: iso(s + 1) });
{
    const known = new Set(['b']);
    const list = [ev('b', 20)];
    const r = mergeEvents(list, [ev('a', 10), ev('b', 20), ev('c', 30), ev('a', 10)], known, 10);
    same('mergeEvents: each id once, newest first', r.list.map((e) => e.id), ['c', 'b', 'a']);
    same('mergeEvents: what was added', r.added.map((e) => e.id), ['a', 'c']);
    const bounded = mergeEvents(r.list, [ev('d', 5), ev('e', 40)], known, 3);
    same('mergeEvents: bounded, the oldest drop (and are forgotten)', [bounded.list.map((e) => e.id), bounded.dropped, known.has('d'), known.has('a')], [['e', 'c', 'b'], ['a', 'd'], false, false]);
}
same('fixTime: the position\'s time, else the event\'s time, else emitted, else NaN',
    [fixTime(ev('x', 3)), fixTime({ time: iso(4), emitted: iso(9) }), fixTime({ emitted: iso(9) }), fixTime({})], [Date.parse(iso(3)), Date.parse(iso(4)), Date.parse(iso(9)), NaN]);

// The store: journal events merged with live ones by id; a live one seen again is not added.
{
    const s = new Store('gt');
    const raised = [];
    s.onEvent = (e) => raised.push(e.id);
    const bytes = (v) => new TextEncoder().encode(JSON.stringify(v));
    s.handle('gt/events/t/d', bytes(ev('live-1', 50)));
    const added = s.history([ev('old-2', 20), ev('live-1', 50), ev('old-1', 10), { id: 'no-type' }, ev('old-2', 20), { ...ev('odd', 5), fence: 'x' }]);
    same('store.history: only the new ones, once each', [added, s.events.map((e) => e.id), s.marks.map((e) => e.id)],
        [2, ['live-1', 'old-2', 'old-1'], ['live-1', 'old-2', 'old-1']]);
    same('store.history: the added go to onEvent oldest first (alerts)', raised, ['live-1', 'old-1', 'old-2']);
    s.handle('gt/events/t/d', bytes(ev('old-1', 10)));
    same('a live copy of a journal event is not added again', s.events.length, 3);
    const flood = Array.from({ length: EVENT_LIMIT + 20 }, (_, i) => ev(`f${i}`, 100 + i));
    s.history(flood);
    same('store.history: the list stays bounded, the marks keep more', [s.events.length, s.events[0].id, s.marks.length], [EVENT_LIMIT, `f${EVENT_LIMIT + 19}`, EVENT_LIMIT + 23]);
}

// The replay clock: seek, play at 1x and 60x, pause, stop at the present.
{
    const c = new ReplayClock();
    same('live at first', [c.live, c.advance(0)], [true, null]);
    c.seek(1000, 0);
    same('paused: time stands', c.advance(500), 1000);
    c.play(500);
    same('1x: a wall second is a second', c.advance(1500), 2000);
    c.setSpeed(60, 1500);
    same('60x: a wall second is a minute', c.advance(2500), 62000);
    c.pause(3000);
    same('paused after half a second more', [c.advance(9000), c.playing], [92000, false]);
    c.play(9000);
    same('reaching the present stops there, ended', [c.advance(10000, 100000), c.ended, c.playing], [100000, true, false]);
    c.goLive();
    same('live again', [c.live, c.time], [true, null]);
}
// The queries through Actions against stand-in gateways answering on the reply topic: tracks
// of several devices (the track query's `devices`), each from the gateway that knows it (another
// lists it `unknown`), replies in parts with a device running on across them, cut by the budget
// and continued from the device they stopped at, a "busy" reply asked again, TRACK_BATCH
// devices a query, never more than IN_FLIGHT history queries at once; the events of the last
// hour from every started gateway.
{
    const { Actions } = await load('actions.js');
    const { TRACK_BATCH, IN_FLIGHT } = await load('history.js');
    const store = new Store('gt');
    const bytes = (v) => new TextEncoder().encode(JSON.stringify(v));
    for (const id of ['gw-a', 'gw-b']) store.handle(`gt/status/${id}`, bytes({ status: 'started' }));
    const walk = (n, lat) => Array.from({ length: n }, (_, i) => ({ lat: lat + i * 1e-4, lon: 2, time: iso(10 * i) }));
    // gw-b knows the walker (107 positions), the runner (30) and 450 parked vans (1 each).
    const known = new Map([['walker', walk(107, 1)], ['runner', walk(30, 5)]]);
    for (let i = 0; i < 450; i++) known.set(`van-${i}`, walk(1, 10 + i * 1e-3));
    const journal = { 'gw-a': [ev('a1', 1), ev('a2', 2)], 'gw-b': Array.from({ length: 13 }, (_, i) => ev(`b${i}`, 100 + i)) };
    const asked = [];
    let running = 0, most = 0, busyOnce = true;
    let actions;
    /// A track reply of gw-b: at most 40 positions (then truncated), in parts of at most 15.
    function trackParts(q) {
        const since = q.since ? Date.parse(q.since) : -Infinity;
        const entries = [];
        let room = 40, truncated = false;
        for (const device of q.devices) {
            if (!known.has(device)) { entries.push({ device, unknown: true }); continue; }
            const positions = known.get(device).filter((p) => Date.parse(p.time) >= since);
            entries.push({ device, positions: positions.slice(0, room) });
            room -= Math.min(room, positions.length);
            if (room === 0 && (positions.length > entries[entries.length - 1].positions.length || device !== q.devices[q.devices.length - 1])) {
                truncated = true;
                break;
            }
        }
        const parts = [[]];
        let inPart = 0;
        for (const e of entries) {
            if (e.unknown) { parts[parts.length - 1].push(e); continue; }
            let rest = e.positions;
            do {
                if (inPart >= 15) { parts.push([]); inPart = 0; }
                const take = rest.slice(0, 15 - inPart);
                parts[parts.length - 1].push({ device: e.device, positions: take });
                inPart += take.length;
                rest = rest.slice(take.length);
            } while (rest.length);
        }
        return parts.map((tracks, i) => ({ tracks, truncated, part: i + 1, parts: parts.length }));
    }
    const client = {
        publish(topic, payload) {
            const q = JSON.parse(payload);
            const gw = topic.split('/').pop();
            asked.push([gw, q]);
            running++;
            most = Math.max(most, running);
            setTimeout(() => {
                running--;
                let replies;
                if (q.track) {
                    if (gw !== 'gw-b') replies = [{ tracks: q.track.devices.map((device) => ({ device, unknown: true })), truncated: false }];
                    else if (busyOnce && asked.filter(([g, x]) => g === 'gw-b' && x.track).length === 2) { busyOnce = false; replies = [{ error: 'busy: 4 replies are being written for console-1' }]; }
                    else replies = trackParts(q.track);
                } else {
                    const { offset = 0, limit } = q.events;
                    replies = [{ count: journal[gw].length, offset, events: journal[gw].slice(offset, offset + limit), truncated: offset + limit < journal[gw].length }];
                }
                for (const reply of replies) actions.reply(bytes({ ...reply, correlation: q.correlation }));
            }, 1 + (asked.length % 3));
            return Promise.resolve();
        },
    };
    actions = new Actions({ client, store, prefix: 'gt', replyTopic: 'gt/replies/console-1' });
    const got = new Map();
    const devices = ['walker', 'ghost', 'runner', ...Array.from({ length: 450 }, (_, i) => `van-${i}`)];
    const r = await actions.tracksOf(devices, null, (device, positions) => got.set(device, (got.get(device) || []).concat(positions)));
    same('tracksOf: every device\'s positions in order, once, from the gateway that knows it; the unknown one said',
        [[...known].every(([d, ps]) => JSON.stringify(got.get(d)) === JSON.stringify(ps)), got.has('ghost'), r.unknown, r.error],
        [true, false, ['ghost'], null]);
    const trackQueries = asked.filter(([, q]) => q.track);
    same('tracksOf: at most TRACK_BATCH devices a query, in parts of under 4 KB, never more than IN_FLIGHT at once',
        [trackQueries.every(([, q]) => q.track.devices.length <= TRACK_BATCH && q.track.partBytes <= 4000), most <= IN_FLIGHT, actions.trackGateway.get('walker')],
        [true, true, 'gw-b']);
    same('tracksOf: a cut reply goes on from the device it stopped at, with since after its last position',
        trackQueries.some(([g, q]) => g === 'gw-b' && q.track.devices.length === 1 && q.track.devices[0] === 'walker'
            && known.get('walker').some((p) => q.track.since === new Date(Date.parse(p.time) + 1).toISOString())),
        true);
    asked.length = 0;
    const t = await actions.trackOf('walker', Date.parse(iso(500)));
    same('trackOf: asked of the gateway that answered before, with since; the positions from then',
        [asked[0][0], asked[0][1].track.since, asked[0][1].track.devices, t.track.length, t.error], ['gw-b', iso(500), ['walker'], 57, null]);
    const none = await actions.trackOf('ghost');
    same('trackOf: a device no gateway knows', [none.track.length, none.error], [0, 'no started gateway knows device "ghost"']);
    asked.length = 0;
    const events = await actions.recentEvents(Date.parse(iso(0)) + HOUR_MS);
    same('recentEvents: the last hour of every started gateway, paged', [events.events.map((e) => e.id).sort(), events.error],
        [['a1', 'a2', ...journal['gw-b'].map((e) => e.id)].sort(), null]);
    same('recentEvents: since an hour before now', asked.filter(([, q]) => q.events).every(([, q]) => q.events.since === iso(0)), true);
    const newest = await actions.recentEvents(Date.parse(iso(0)) + HOUR_MS, 5);
    same('recentEvents past its max: the newest of each gateway (from offset count - max)', newest.events.map((e) => e.id),
        ['a1', 'a2', 'b8', 'b9', 'b10', 'b11', 'b12']);
}

const now = Date.UTC(2026, 11, 7, 14, 20, 0);
same('timeOfDay: a time of the last hour, one of yesterday\'s evening (after now today), bad text',
    [timeOfDay('13:45', now), timeOfDay('13:45:30', now), timeOfDay('23:10', now), timeOfDay('25:00', now), timeOfDay('noon', now)],
    [Date.UTC(2026, 11, 7, 13, 45, 0), Date.UTC(2026, 11, 7, 13, 45, 30), Date.UTC(2026, 11, 6, 23, 10, 0), null, null]);
same('the window is an hour', HOUR_MS, 3600000);

console.log(`console history: ${checks - failures}/${checks} checks passed`);
process.exit(failures ? 1 : 0);
