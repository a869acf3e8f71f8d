// The map's event marks (deploy/console/event-marks.js): which events get one (a position,
// the last hour), when an event happened for the page, how a mark fades with age, and the
// glyph of each type (unknown types included).
// Run: node Tests/Console/marks_test.mjs   (exit status 1 on a failure)
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const source = readFileSync(path.join(here, '../../deploy/console/event-marks.js'), 'utf8');
const { visibleMarks, markOpacity, markGlyph, eventTime, MARK_WINDOW_MS, MARK_OPACITY_OLD } = await import('data:text/javascript;base64,' + Buffer.from(source).toString('base64'));

let failures = 0, checks = 0;
function same(name, actual, expected) {
    checks++;
    const a = JSON.stringify(actual), e = JSON.stringify(expected);
    if (a !== e) { failures++; console.log(`FAIL ${name}\n  got      ${a}\n  expected ${e}`); }
}

same('glyphs', ['enter', 'exit', 'dwell', 'offRoute', 'late', 'missed', 'overspeed', 'tripStarted', 'arrived', 'speedOk', 'somethingNew', 'constructor'].map(markGlyph),
    ['enter', 'exit', 'dwell', 'alert', 'alert', 'alert', 'alert', 'other', 'other', 'other', 'other', 'other']);

same('opacity: new, half an hour, an hour, past it, from the future',
    [markOpacity(0), markOpacity(MARK_WINDOW_MS / 2), markOpacity(MARK_WINDOW_MS), markOpacity(MARK_WINDOW_MS + 1), markOpacity(-5000), markOpacity(NaN)].map((x) => Math.round(x * 1e9) / 1e9),
    [1, (1 + MARK_OPACITY_OLD) / 2, MARK_OPACITY_OLD, 0, 1, 0]);

const at = (iso) => Date.parse(iso);
same('an event happens when the gateway decided it, else at its fix',
    [eventTime({ emitted: '2026-12-07T10:00:00.500Z', position: { time: '2026-12-07T09:00:00Z' } }), eventTime({ position: { time: '2026-12-07T09:00:00Z' } }), eventTime({})],
    [at('2026-12-07T10:00:00.500Z'), at('2026-12-07T09:00:00Z'), NaN]);

const now = at('2026-12-07T10:00:00Z');
const ev = (id, type, minutesAgo, position = { lat: 34.45, lon: -119.71, time: 'x' }) =>
    ({ id, type, position, emitted: new Date(now - minutesAgo * 60000).toISOString() });
const events = [
    ev('new-enter', 'enter', 0),
    ev('trip', 'tripStarted', 10),
    ev('no-position', 'exit', 5, null),
    ev('bad-position', 'exit', 5, { lat: 'north', lon: 1 }),
    ev('old-dwell', 'dwell', 59),
    ev('too-old', 'exit', 61),
    { id: 'no-time', type: 'exit', position: { lat: 1, lon: 2 } },
];
const received = new Map([[events[6], now - 120000]]);
const marks = visibleMarks(events, now, (e) => received.get(e));
same('the last hour of events with a position, newest first, each with its glyph',
    marks.map((m) => [m.event.id, m.glyph, m.lat, m.lon]),
    [['new-enter', 'enter', 34.45, -119.71], ['trip', 'other', 34.45, -119.71], ['old-dwell', 'dwell', 34.45, -119.71], ['no-time', 'exit', 1, 2]]);
same('fading with age', marks.map((m) => Math.round(m.opacity * 100) / 100), [1, 0.87, 0.21, 0.97]);

console.log(`console marks: ${checks - failures}/${checks} checks passed`);
process.exit(failures ? 1 : 0);
