// The console's store (deploy/console/store.js) fed MQTT messages directly: shapes it takes,
// words it puts on the page for those it cannot use, and its bounds (trail, event list).
// Run: node Tests/Console/store_test.mjs   (exit status 1 on a failure)
import { load } from './load.mjs';
const { Store, TRAIL_LENGTH, EVENT_LIMIT, MARK_LIMIT } = await load('store.js');

let failures = 0, checks = 0;
function same(name, actual, expected) {
    checks++;
    const a = JSON.stringify(actual), e = JSON.stringify(expected);
    if (a !== e) { failures++; console.log(`FAIL ${name}\n  got      ${a}\n  expected ${e}`); }
}
const bytes = (v) => new TextEncoder().encode(typeof v === 'string' ? v : JSON.stringify(v));
const s = new Store('gt/site');
const state = (lat, lon) => ({ device: 'a/b', position: { lat, lon, accuracy: 5, time: '2026-12-06T05:00:00Z' },
    inside: [{ trigger: 't', layer: 'l', fence: 'f', name: 'F', since: 'x', visit: 'v' }], updated: 'u' });

// Device states: a multi-level id, the trail bounded, an empty payload forgets.
for (let i = 0; i < TRAIL_LENGTH + 10; i++) s.handle('gt/site/devices/a/b/state', bytes(state(34 + i * 1e-4, -119)));
s.handle('gt/site/devices/a/b/state', bytes(state(34 + (TRAIL_LENGTH + 9) * 1e-4, -119))); // same place: no new trail point
const d = s.devices.get('a/b');
same('device with a multi-level id', [d.id, d.position.lat, d.inside.length], ['a/b', 34 + (TRAIL_LENGTH + 9) * 1e-4, 1]);
same('trail of the last 50 positions', [d.trail.length, d.trail[0][0]], [TRAIL_LENGTH, 34 + 10 * 1e-4]);
s.handle('gt/site/devices/c/state', bytes({ device: 'c', position: null, inside: [], updated: 'u' }));
same('a device without position', s.devices.get('c').position, null);
s.handle('gt/site/devices/c/state', new Uint8Array(0));
same('an empty state forgets the device', s.devices.has('c'), false);

// What the page cannot use is said in words, and changes nothing.
const before = s.versions.devices;
s.handle('gt/site/devices/x/state', bytes('not json'));
s.handle('gt/site/devices/y/state', bytes({ device: 'y', position: { lat: 'north' } }));
s.handle('gt/site/devices/z/state', new Uint8Array([0xff, 0xfe]));
s.handle('gt/site/events/t/a', bytes({ hello: 1 }));
s.handle('gt/site/status/gw', bytes([1, 2]));
s.handle('gt/site/occupancy/t/l/f', bytes({ count: 'many' }));
same('bad payloads leave the devices alone', [s.versions.devices, s.devices.has('x'), s.devices.has('y')], [before, false, false]);
same('and are named', s.notices.map((n) => n.text.replace(/ \(.*\)/, '')), [
    'gt/site/devices/x/state: payload is not JSON, ignored',
    'gt/site/devices/y/state: device state of unknown shape, ignored',
    'gt/site/devices/z/state: payload is not UTF-8 text, ignored',
    'gt/site/events/t/a: event of unknown shape, ignored',
    'gt/site/status/gw: gateway status of unknown shape, ignored',
    'gt/site/occupancy/t/l/f: occupancy of unknown shape, ignored',
]);
s.handle('other/devices/q/state', bytes('not json'));
same('topics under another prefix are ignored', s.notices.length, 6);

// Events: newest first, de-duplicated by id, the last 500.
const event = (i) => ({ id: `e${i}`, type: 'enter', device: 'a/b', trigger: 't', fence: { id: 'f', layer: 'l' }, emitted: 'x' });
for (let i = 0; i < EVENT_LIMIT + 20; i++) s.handle('gt/site/events/t/a/b', bytes(event(i)));
s.handle('gt/site/events/t/a/b', bytes(event(EVENT_LIMIT + 19)));
same('events newest first, bounded, de-duplicated', [s.events.length, s.events[0].id, s.events[EVENT_LIMIT - 1].id, s.eventIds.size],
    [EVENT_LIMIT, `e${EVENT_LIMIT + 19}`, 'e20', EVENT_LIMIT]);

// The map's marks: the events with a position, kept beyond the list's 500 (up to MARK_LIMIT).
same('marks: events with a position only (these had none)', [s.marks.length, s.versions.marks], [0, 0]);
const placed = (i) => ({ ...event(i), id: `m${i}`, position: { lat: 34, lon: -119, time: 'x' } });
for (let i = 0; i < EVENT_LIMIT + 5; i++) s.handle('gt/site/events/t/a/b', bytes(placed(i)));
same('marks outlive the event list', [s.events.length, s.marks.length, s.marks[0].id, s.marks.at(-1).id], [EVENT_LIMIT, EVENT_LIMIT + 5, `m${EVENT_LIMIT + 4}`, 'm0']);
s.handle('gt/site/events/t/a/b', bytes(placed(0)));
same('an event redelivered after it left the list is still known by its mark', [s.marks.length, s.events[0].id], [EVENT_LIMIT + 5, `m${EVENT_LIMIT + 4}`]);
same('an event is found by id in the list or among the marks', [s.eventById('m0')?.id, s.eventById('nope')], ['m0', null]);
same('the mark limit', MARK_LIMIT, 10000);

// Trip events have no fence (their trip instead); events of types to come are taken too.
const heard = [];
s.onEvent = (e) => heard.push(e.type);
s.handle('gt/site/events/trips/van-1', bytes({ id: 'trip-1', type: 'offRoute', notification: 'offRoute', trigger: 'trips', device: 'van-1', trip: 'T1',
    position: { lat: 34.1, lon: -119.1, time: 'x' }, emitted: 'x', along: 120, remaining: 800 }));
s.handle('gt/site/events/t/van-1', bytes({ id: 'future-1', type: 'somethingNew', device: 'van-1' }));
s.handle('gt/site/events/t/van-1', bytes({ id: 'bad-fence', type: 'enter', device: 'van-1', fence: 'depot' }));
same('a trip event and an event of a type to come are taken (a fence that is not an object is not)', [s.events[1].id, s.events[0].id, s.marks[0].id, heard],
    ['trip-1', 'future-1', 'trip-1', ['offRoute', 'somethingNew']]);
same('and the odd one is named', s.notices.at(-1).text, 'gt/site/events/t/van-1: event of unknown shape, ignored');

// Gateways and the hook that asks for fences again when one (re)starts.
const started = [];
s.onGatewayStarted = (id) => started.push(id);
s.handle('gt/site/status/gw-1', bytes({ status: 'started', since: 'A' }));
s.handle('gt/site/status/gw-1', bytes({ status: 'started', since: 'A', counters: {} }));
s.handle('gt/site/status/gw-1', bytes({ status: 'offline' }));
s.handle('gt/site/status/gw-1', bytes({ status: 'started', since: 'B' }));
same('a gateway start asks for fences once per start', started, ['gw-1', 'gw-1']);
const statuses = [];
s.onStatus = (id, status) => statuses.push([id, status && status.status]);
s.handle('gt/site/status/gw-1', bytes({ status: 'stopped' }));
s.handle('gt/site/status/gw-1', new Uint8Array(0));
same('every status is handed on (a cleared one as null)', statuses, [['gw-1', 'stopped'], ['gw-1', null]]);

// Occupancy: the key's levels, an empty payload clears.
s.handle('gt/site/occupancy/t/l/f', bytes({ trigger: 't', layer: 'l', fence: 'f', name: 'F', count: 2, devices: ['a/b', 'c'] }));
same('occupancy', s.occupancy.get('t/l/f').count, 2);
s.handle('gt/site/occupancy/t/l/f', new Uint8Array(0));
same('occupancy cleared', s.occupancy.size, 0);

// features replies.
s.setFeatures({ error: 'unknown query "features"' });
same('a features error', [s.featuresStatus.state, s.notices.at(-1).text], ['error', 'fences: the gateway answered the features query with an error: unknown query "features"']);
s.setFeatures({ type: 'FeatureCollection', truncated: true, features: [
    { type: 'Feature', id: 'f', properties: { layer: 'l', fence: 'f', name: 'F', buffer: 10, triggers: ['t'] }, geometry: { type: 'Point', coordinates: [1, 2] } },
    { type: 'Feature', id: 'g', properties: { layer: 'l', fence: 'g', name: 'G', buffer: 0, triggers: [] }, geometry: { type: 'Polygon', coordinates: [] } },
    { type: 'Feature', id: 'odd' },
] });
same('a truncated features reply', [[...s.fences.keys()], s.fences.get('l/f').buffer, s.featuresStatus.state], [['l/f', 'l/g'], 10, 'truncated']);
same('and its words', s.notices.slice(-2).map((n) => n.text), [
    'fences: the gateway sent only the first 2 fences (the features reply is truncated)',
    'fences: 1 features of unknown shape in the features reply, ignored',
]);
s.setFeatures({ type: 'FeatureCollection', features: [] });
same('a whole features reply', [s.fences.size, s.featuresStatus], [0, { state: 'ok', text: '0 fences' }]);

// Expected arrivals: open, result, cleared by the gateway; rejected; cancelled.
s.handle('gt/site/expect/x1', bytes({ device: 'a/b', layer: 'l', fence: 'f', by: 'T' }));
same('open', s.expectations.get('x1').open, true);
const results = [];
s.onResult = (id, r) => results.push([id, r.result]);
s.handle('gt/site/expect/x1/result', bytes({ id: 'r', expectation: 'x1', result: 'arrived', early: 12 }));
same('a result is handed on', results, [['x1', 'arrived']]);
s.handle('gt/site/expect/x1', new Uint8Array(0));
same('arrived, and the clear keeps the result', [s.expectations.get('x1').open, s.expectations.get('x1').result.result], [false, 'arrived']);
s.handle('gt/site/expect/x2/error', bytes({ error: 'no trigger watches layer "nope"' }));
same('rejected', [s.expectations.get('x2').error, s.notices.at(-1).text], ['no trigger watches layer "nope"', 'expected arrival x2 rejected: no trigger watches layer "nope"']);
s.handle('gt/site/expect/x3', bytes({ device: 'a/b', layer: 'l', fence: 'f', by: 'T' }));
s.handle('gt/site/expect/x3', new Uint8Array(0));
same('cancelled or settled without a result here', [s.expectations.get('x3').open, s.expectations.get('x3').result], [false, undefined]);

// Runtime fences and their errors.
const changedFences = [];
s.onRuntimeFenceChange = (key) => changedFences.push(key);
s.handle('gt/site/fences/zones/z1', bytes({ type: 'Feature', id: 'z1', properties: {}, geometry: { type: 'Point', coordinates: [0, 0] } }));
s.handle('gt/site/fences/zones/z1/error', bytes({ layer: 'zones', fence: 'z1', error: 'a Point needs a buffer', time: 'T' }));
s.handle('gt/site/fences/zones/z1', new Uint8Array(0));
same('runtime fences tracked, changes reported', [s.runtimeFences.size, changedFences], [0, ['zones/z1', 'zones/z1']]);
same('a rejected runtime fence is named', s.notices.at(-1).text, 'runtime fence zones/z1: a Point needs a buffer (rejected by the gateway)');

// The selection: one at a time, cleared with null; a fence's inside answer only while it is selected.
const v = s.versions.selection;
s.select('device', 'a/b');
s.select('device', 'a/b');
same('selecting a device (twice: one change)', [s.selection, s.versions.selection - v], [{ kind: 'device', id: 'a/b' }, 1]);
s.setSelectionInside('l/f', { state: 'ok', inside: [] });
same('an inside answer for a fence not selected is dropped', s.selectionInside, null);
s.select('fence', 'l/f');
s.setSelectionInside('l/f', { state: 'ok', inside: [{ device: 'a/b', trigger: 't' }], count: 1 });
same('the selected fence\'s inside answer', [s.selectionInside.key, s.selectionInside.inside[0].device], ['l/f', 'a/b']);
s.select('event', 'trip-1');
same('another selection drops the inside answer', [s.selection.kind, s.selectionInside], ['event', null]);
s.select(null);
same('cleared', s.selection, null);

console.log(`console store: ${checks - failures}/${checks} checks passed`);
process.exit(failures ? 1 : 0);
