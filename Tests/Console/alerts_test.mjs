// The alerts panel's state (deploy/console/alerts.js) against a stand-in localStorage and a
// clock of the test's: which messages raise an alert and which resolve one, that an alert
// stays until acknowledged, that a reload (a new Alerts on the same storage) brings back the
// unacknowledged ones and does not raise again what was acknowledged, the gateway's outages,
// the sound setting, and the bounds.
// Run: node Tests/Console/alerts_test.mjs   (exit status 1 on a failure)
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const source = readFileSync(path.join(here, '../../deploy/console/alerts.js'), 'utf8');
const { Alerts, describe, storageKey, SOUND_KEY, ACKED_SHOWN_MS, ACK_MEMORY_MS, ALERT_LIMIT } = await import('data:text/javascript;base64,' + Buffer.from(source).toString('base64'));

let failures = 0, checks = 0;
function same(name, actual, expected) {
    checks++;
    const a = JSON.stringify(actual), e = JSON.stringify(expected);
    if (a !== e) { failures++; console.log(`FAIL ${name}\n  got      ${a}\n  expected ${e}`); }
}

/// localStorage as the browser has it: strings only; `full` makes writes throw as a full one does.
class Storage {
    constructor() { this.items = new Map(); this.writes = 0; this.full = false; }
    getItem(k) { return this.items.has(k) ? this.items.get(k) : null; }
    setItem(k, v) { if (this.full) throw new Error('QuotaExceededError'); this.writes++; this.items.set(k, String(v)); }
    removeItem(k) { this.items.delete(k); }
    get length() { return this.items.size; }
}

let clock = Date.parse('2026-12-07T10:00:00Z');
const storage = new Storage();
const key = storageKey('ws://box:9001/', 'geotriggers');
let current = null;
/// A page (load); the one before it is left as a browser leaves it: pagehide writes its alerts.
function page(extra = {}) {
    if (current) current.flush();
    const cues = [];
    const errors = [];
    const a = new Alerts({ storage, key, now: () => clock, onCue: (x) => cues.push(x.key), onError: (t) => errors.push(t), saveDelay: 0, ...extra });
    a.load();
    current = a;
    return { a, cues, errors };
}
const state = (a) => a.list().map((x) => [x.key, x.acked, x.resolved]);
const event = (id, type, more = {}) => ({ id, type, device: 'van-1', trigger: 'trips', trip: 't1', position: { lat: 1, lon: 2, time: '2026-12-07T09:59:00Z' }, emitted: '2026-12-07T09:59:00.100Z', ...more });

same('the key names the broker and prefix', key, 'geotrigger-console-alerts ws://box:9001/ geotriggers');

let { a, cues } = page();
same('nothing stored while nothing happened', storage.length, 0);
a.event(event('e-enter', 'enter', { fence: { layer: 'l', id: 'f' } }));
a.event(event('e-tripStarted', 'tripStarted'));
a.result('x0', { id: 'r-arrived', result: 'arrived' });
a.gateway('gw-1', { status: 'started' });
a.flush();
same('enter, tripStarted, an arrival and a started gateway raise nothing (and store nothing)', [a.list().length, storage.length, cues], [0, 0, []]);

for (const type of ['offRoute', 'late', 'missed']) { clock += 1000; a.event(event(`e-${type}`, type)); }
clock += 1000;
a.event(event('e-overspeed', 'overspeed', { trigger: 'roads', trip: undefined, fence: { layer: 'roads', id: 'main', name: 'Main St' } }));
clock += 1000;
a.result('x1', { id: 'r-missed', expectation: 'x1', device: 'van-2', layer: 'fleet', fence: 'depot', by: '2026-12-07T09:30:00Z', result: 'missed', time: '2026-12-07T09:30:00Z' });
clock += 1000;
a.gateway('gw-1', { status: 'offline' });
same('offRoute, late, missed, overspeed, an expectation missed and an offline gateway raise, newest first', state(a), [
    ['gateway:gw-1', false, false], ['r-missed', false, false], ['e-overspeed', false, false], ['e-missed', false, false], ['e-late', false, false], ['e-offRoute', false, false]]);
same('each raised with a cue', cues, ['e-offRoute', 'e-late', 'e-missed', 'e-overspeed', 'r-missed', 'gateway:gw-1']);
a.event(event('e-late', 'late'));
a.gateway('gw-1', { status: 'offline' });
same('a redelivered event or a repeated status raises nothing more', [a.list().length, cues.length], [6, 6]);

a.event(event('e-back', 'backOnRoute', { trip: 'other' }));
same('backOnRoute of another trip resolves nothing', a.alerts.get('e-offRoute').resolved, false);
a.event(event('e-back2', 'backOnRoute'));
a.event(event('e-ok', 'speedOk', { trigger: 'roads', trip: undefined, fence: { layer: 'roads', id: 'main' } }));
same('backOnRoute and speedOk resolve their alerts, which stay listed unacknowledged', [a.alerts.get('e-offRoute').resolved, a.alerts.get('e-overspeed').resolved, a.unacknowledged()], [true, true, 6]);
same('in words', [describe(a.alerts.get('e-overspeed')), describe(a.alerts.get('r-missed')), describe(a.alerts.get('gateway:gw-1')).title], [
    { title: 'overspeed · van-1', detail: 'in Main St (roads/main) · 09:59:00 · resolved: speedOk' },
    { title: 'missed · van-2', detail: 'expected at fleet/depot by 09:30:00 (expected arrival x1)' },
    'gateway gw-1 offline']);

// A reload: a new page on the same storage has the unacknowledged alerts back, without cues.
({ a, cues } = page());
same('after a reload the alerts are back as they were', state(a), [
    ['gateway:gw-1', false, false], ['r-missed', false, false], ['e-overspeed', false, true], ['e-missed', false, false], ['e-late', false, false], ['e-offRoute', false, true]]);
same('with no cue for what was already there', cues, []);

clock += 1000;
a.ack('e-late');
same('acknowledged: written at once, listed after the open ones', [state(a).at(-1), JSON.parse(storage.getItem(key)).acked.map((x) => x[0])], [['e-late', true, false], ['e-late']]);
({ a, cues } = page());
a.event(event('e-late', 'late'));
same('after a reload an acknowledged alert stays acknowledged, and its event redelivered raises nothing', [a.alerts.get('e-late').acked, cues], [true, []]);

// The gateway: acknowledged while offline, the retained status after a reload raises nothing;
// back to started the outage is over, and the next one alerts again.
a.ack('gateway:gw-1');
({ a, cues } = page());
a.gateway('gw-1', { status: 'offline' });
same('an acknowledged outage, its retained status seen again after a reload: nothing new', [a.alerts.get('gateway:gw-1').acked, cues], [true, []]);
a.gateway('gw-1', { status: 'started', since: 'S' });
same('back to started: the acknowledged outage is gone', [a.alerts.has('gateway:gw-1'), a.acked.has('gateway:gw-1')], [false, false]);
clock += 1000;
a.gateway('gw-1', { status: 'stopped' });
a.gateway('gw-1', { status: 'starting' });
same('the next outage alerts again (once, in its newest words)', [a.alerts.get('gateway:gw-1').status, a.alerts.get('gateway:gw-1').acked, cues], ['starting', false, ['gateway:gw-1']]);
a.gateway('gw-1', { status: 'started' });
same('back before anyone acknowledged: resolved, still listed', [a.alerts.get('gateway:gw-1').resolved, a.alerts.get('gateway:gw-1').acked], [true, false]);
a.gateway('gw-1', { status: 'offline' });
same('down again before acknowledged: raised again', [a.alerts.get('gateway:gw-1').resolved, cues.length], [false, 2]);
a.gateway('gw-2', { status: 'failedToStart' });
a.gateway('gw-2', null);
same('a gateway whose status is cleared: its alert resolved', [a.alerts.get('gateway:gw-2').resolved, a.alerts.get('gateway:gw-2').resolvedBy], [true, 'cleared']);

// Acknowledged ones leave the list after a while; their keys are remembered longer.
a.ackAll();
same('acknowledge all', a.unacknowledged(), 0);
clock += ACKED_SHOWN_MS + 1000;
a.tick();
same('acknowledged alerts leave the panel after an hour', a.list().length, 0);
a.event(event('e-missed', 'missed'));
same('but their events redelivered raise nothing', a.list().length, 0);
clock += ACK_MEMORY_MS;
a.tick();
same('acknowledged keys are forgotten after two days', a.acked.size, 0);

// Another tab acknowledged: load() (on the storage event) takes it.
({ a, cues } = page());
a.event(event('e-two-tabs', 'offRoute'));
const other = page().a;
other.ack('e-two-tabs');
a.load();
same('an acknowledgement made in another tab is taken', a.alerts.get('e-two-tabs').acked, true);

// The sound setting, per browser.
same('sound on by default', a.sound, true);
a.sound = false;
same('turned off, kept', [page().a.sound, storage.getItem(SOUND_KEY)], [false, 'off']);
a.sound = true;

// Bounds: past ALERT_LIMIT the acknowledged and resolved go before the open ones.
({ a } = page());
a.ackAll();
for (let i = 0; i < ALERT_LIMIT + 10; i++) { clock += 1; a.event(event(`flood-${i}`, 'overspeed')); }
same('at most ALERT_LIMIT alerts, the oldest open ones dropped last', [a.alerts.size, a.alerts.has('flood-0'), a.alerts.has(`flood-${ALERT_LIMIT + 9}`), a.alerts.has('e-two-tabs')],
    [ALERT_LIMIT, false, true, false]);

// Storage that refuses: said, nothing thrown.
storage.full = true;
const refused = page();
refused.a.event(event('e-full', 'late'));
refused.a.flush();
same('a full storage is said in words', refused.errors.map((t) => t.replace(/:.*/, '')), ['alerts not kept for the next reload']);
storage.full = false;

// Bad storage content is ignored.
current = null;
storage.setItem(key, '{"alerts": [{"key": 5}, "x", {"key": "ok", "kind": "event", "type": "late", "raised": 1}], "acked": [["a", "b"], 7]}');
same('odd stored entries are skipped', page().a.list().map((x) => x.key), ['ok']);
current = null;
storage.setItem(key, 'not json');
same('stored text that is not JSON is ignored', page().a.list().length, 0);

// A trip's overspeed (trigger `trips`, no fence) raises; a speedOk of another trip of the same
// device, or a fence's speedOk, leaves it; the trip's own speedOk resolves it.
{
    const trips = new Alerts({ storage: new Storage(), key, now: () => clock, saveDelay: 0 });
    const raised = [];
    trips.onCue = (x) => raised.push(x.key);
    trips.event(event('e-trip-overspeed', 'overspeed', { message: 'van-1 is over the speed limit of trip t1 (20 m/s, limit 14 m/s)' }));
    trips.event(event('e-fence-overspeed', 'overspeed', { trigger: 'roads', trip: undefined, fence: { layer: 'roads', id: 'main' } }));
    same('a trip\'s overspeed raises, with a cue', [trips.alerts.get('e-trip-overspeed')?.trip, trips.alerts.get('e-trip-overspeed')?.trigger, raised],
        ['t1', 'trips', ['e-trip-overspeed', 'e-fence-overspeed']]);
    trips.event(event('e-trip-ok-other', 'speedOk', { trip: 't2' }));
    trips.event(event('e-trip-ok-van2', 'speedOk', { device: 'van-2' }));
    same('a speedOk of another trip or device leaves it (and the fence\'s)', [trips.alerts.get('e-trip-overspeed').resolved, trips.alerts.get('e-fence-overspeed').resolved], [false, false]);
    trips.event(event('e-trip-ok', 'speedOk'));
    same('the trip\'s own speedOk resolves it, not the fence\'s', [trips.alerts.get('e-trip-overspeed').resolved, trips.alerts.get('e-trip-overspeed').resolvedBy, trips.alerts.get('e-fence-overspeed').resolved],
        [true, 'speedOk', false]);
    same('a trip\'s overspeed in words', describe(trips.alerts.get('e-trip-overspeed')), {
        title: 'overspeed · van-1', detail: 'trip t1 · 09:59:00 · van-1 is over the speed limit of trip t1 (20 m/s, limit 14 m/s) · resolved: speedOk' });
    trips.event(event('e-fence-ok', 'speedOk', { trigger: 'roads', trip: undefined, fence: { layer: 'roads', id: 'main' } }));
    same('the fence\'s speedOk resolves the fence\'s', trips.alerts.get('e-fence-overspeed').resolved, true);
}

console.log(`console alerts: ${checks - failures}/${checks} checks passed`);
process.exit(failures ? 1 : 0);
