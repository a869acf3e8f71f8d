// Trips on the console (deploy/console/trips.js and the store's trip topics): the route from a
// request (GeoJSON or a line fence), the route cut at `along`, the label, the form's request,
// and what the store keeps of the request, progress and error topics.
// Run: node Tests/Console/trips_test.mjs   (exit status 1 on a failure)

import { load } from './load.mjs';
const { routeCoordinates, splitRoute, metresBetween, tripLabel, tripRequest, validTripId } = await load('trips.js');
const { Store } = await load('store.js');

let failures = 0, checks = 0;
function same(name, actual, expected) {
    checks++;
    const a = JSON.stringify(actual), e = JSON.stringify(expected);
    if (a !== e) { failures++; console.log(`FAIL ${name}\n  got      ${a}\n  expected ${e}`); }
}
const r1 = (x) => Math.round(x * 10) / 10;

const line = [[0, 0], [0, 0.001], [0.001, 0.001]]; // ~111 m north, then ~111 m east
const fences = new Map([['routes/north', { geometry: { type: 'LineString', coordinates: line } }], ['sites/depot', { geometry: { type: 'Polygon', coordinates: [[[0, 0], [1, 0], [1, 1], [0, 0]]] } }]]);
same('route from a line fence', routeCoordinates({ route: { layer: 'routes', fence: 'north' } }, fences), line);
same('route from a polygon fence, a missing fence, a GeoJSON line, a Feature, nothing',
    [routeCoordinates({ route: { layer: 'sites', fence: 'depot' } }, fences), routeCoordinates({ route: { layer: 'x', fence: 'y' } }, fences),
     routeCoordinates({ route: { type: 'LineString', coordinates: line } }, fences), routeCoordinates({ route: { type: 'Feature', geometry: { type: 'LineString', coordinates: line } } }, fences),
     routeCoordinates({}, fences), routeCoordinates({ route: { type: 'LineString', coordinates: [[0, 0]] } }, fences)],
    [null, null, line, line, null, null]);
same('a degree of latitude is 111.2 km', r1(metresBetween([0, 0], [0, 1]) / 1000), 111.2);
const leg = metresBetween(line[0], line[1]);
same('split at 0: nothing driven', splitRoute(line, 0), { driven: [], ahead: line, at: line[0] });
const half = splitRoute(line, leg / 2);
same('split half-way up the first leg', [half.driven.length, half.ahead.length, r1(half.at[1] * 1e4), half.at[0]], [2, 3, 5, 0]);
same('split on the second leg', splitRoute(line, leg * 1.5).driven.length, 3);
same('split past the end: all driven', splitRoute(line, 1e6), { driven: line, ahead: [], at: line[2] });
same('labels', [tripLabel('t1', undefined), tripLabel('t1', { state: 'onRoute', eta: '2026-12-02T09:24:10Z', remaining: 7311.9 }), tripLabel('t1', { state: 'pending' })],
    ['t1 · requested', 't1 · onRoute · ETA 09:24:10 · 7312 m to go', 't1 · pending']);
same('trip ids', ['north-run_0930', '', 'a/b', 'x'.repeat(64), 'x'.repeat(65), 'é'].map(validTripId), [true, false, false, true, false, false]);
const now = Date.parse('2026-12-02T09:00:00Z');
same('a request from the form', tripRequest({ device: 'v17', route: 'routes/north', to: 'sites/depot', corridor: '40', minutes: '30' }, now),
    { device: 'v17', route: { layer: 'routes', fence: 'north' }, to: { layer: 'sites', fence: 'depot' }, corridor: 40, by: '2026-12-02T09:30:00Z' });
same('a drawn route, no destination, no deadline', tripRequest({ device: 'v17', route: { type: 'LineString', coordinates: line }, to: '', corridor: '', minutes: '' }, now),
    { device: 'v17', route: { type: 'LineString', coordinates: line } });
same('form errors', [tripRequest({ route: 'a/b' }), tripRequest({ device: 'v', route: '' }), tripRequest({ device: 'v', route: 'a/b', corridor: '0' }), tripRequest({ device: 'v', route: 'a/b', to: 'depot' })].map((x) => !!x.error), [true, true, true, true]);

// The store.
const bytes = (x) => new TextEncoder().encode(typeof x === 'string' ? x : JSON.stringify(x));
const empty = new Uint8Array(0);
const s = new Store('gt');
const request = { device: 'v17', route: { layer: 'routes', fence: 'north' }, corridor: 50 };
s.handle('gt/trips/t1/progress', bytes({ trip: 't1', device: 'v17', state: 'onRoute', along: 12.5, eta: '2026-12-02T09:24:10Z' }));
s.handle('gt/trips/t1', bytes(request));
same('progress before the request (retained, any order) is kept', [s.trips.get('t1').open, s.trips.get('t1').progress.along], [true, 12.5]);
s.handle('gt/trips/t1', bytes(request));
same('a retained copy of the request changes nothing', s.trips.get('t1').progress.state, 'onRoute');
s.handle('gt/trips/t1', bytes({ ...request, corridor: 60 }));
same('a new request starts afresh', [s.trips.get('t1').progress, s.trips.get('t1').request.corridor], [undefined, 60]);
s.handle('gt/trips/t1', empty);
same('an empty request cancels', s.trips.has('t1'), false);
s.handle('gt/trips/t2', bytes(request));
s.handle('gt/trips/t2/progress', bytes({ trip: 't2', state: 'cancelled' }));
same('a cancelled progress removes it', s.trips.has('t2'), false);
s.handle('gt/trips/t3', bytes(request));
s.handle('gt/trips/t3/progress', bytes({ trip: 't3', state: 'arrived', along: 222 }));
s.handle('gt/trips/t3', empty);
same('settled: listed with its final state, not open', [s.trips.get('t3').open, s.trips.get('t3').progress.state], [false, 'arrived']);
s.handle('gt/trips/t3/progress', empty);
same('its progress cleared: gone', s.trips.has('t3'), false);
s.handle('gt/trips/t4/error', bytes({ trip: 't4', error: '"route" is missing', time: 'x' }));
same('an error is kept and named in a notice', [s.trips.get('t4').error, s.notices.at(-1).kind], ['"route" is missing', 'trip']);
const notices = s.notices.length;
s.handle('gt/trips/t5/progress', bytes({ trip: 't5' }));
s.handle('gt/trips/t5', bytes('[1]'));
same('progress and requests of unknown shape: a notice each, nothing kept', [s.notices.length - notices, s.trips.has('t5')], [2, false]);

console.log(`${checks - failures}/${checks} trip checks passed`);
if (failures) process.exit(1);
