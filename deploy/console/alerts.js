// The alerts panel's state: what waits for a dispatcher until they acknowledge it. Raised by
// trip and speed events (offRoute, late, missed, overspeed), an expected arrival's `missed`
// result and a gateway whose status is not `started`; marked resolved (still listed until
// acknowledged) by a later backOnRoute, speedOk or the gateway back to `started`. Keyed by the
// event's or the result's `id`, or `gateway:ID`. Kept in the browser's localStorage (per broker
// and prefix): the unacknowledged alerts themselves, since the page only sees live messages and
// would lose them at a reload, and the acknowledged keys, so that a redelivered event or a
// gateway's retained status does not raise again what a dispatcher already took. Plain data,
// no DOM: the page renders it (lists.js), node tests it (Tests/Console/alerts_test.mjs).

/// Event types that raise an alert, and the types that resolve one of them.
export const ALERT_TYPES = ['offRoute', 'late', 'missed', 'overspeed'];
export const RESOLVES = { backOnRoute: 'offRoute', speedOk: 'overspeed' };
/// Alerts kept; past it the oldest acknowledged go first, then the oldest resolved, then the oldest.
export const ALERT_LIMIT = 1000;
/// An acknowledged alert stays listed (dimmed) this long after its acknowledgement.
export const ACKED_SHOWN_MS = 3600 * 1000;
/// Acknowledged keys are remembered this long (and at most ACK_LIMIT of them).
export const ACK_MEMORY_MS = 48 * 3600 * 1000;
export const ACK_LIMIT = 5000;
/// Raised alerts are written to storage at most this often (an acknowledgement at once).
export const SAVE_DELAY_MS = 250;
export const STORAGE_PREFIX = 'geotrigger-console-alerts';
/// The audible cue's setting, one per browser: 'on' (the default) or 'off'.
export const SOUND_KEY = 'geotrigger-console-alert-sound';

/// The storage key of the alerts of one broker and prefix.
export function storageKey(broker, prefix) {
    return `${STORAGE_PREFIX} ${broker || 'file'} ${prefix}`;
}

function isObject(v) { return v !== null && typeof v === 'object' && !Array.isArray(v); }
function str(v) { return typeof v === 'string' ? v : undefined; }
function position(p) {
    return isObject(p) && typeof p.lat === 'number' && typeof p.lon === 'number' && Number.isFinite(p.lat) && Number.isFinite(p.lon)
        ? { lat: p.lat, lon: p.lon } : undefined;
}
function fence(f) {
    return isObject(f) ? { layer: str(f.layer), id: str(f.id), name: str(f.name) } : undefined;
}

export class Alerts {
    /// storage: a Web Storage (localStorage) or null; key: storageKey(broker, prefix); now: ms;
    /// onCue(alert): a new alert was raised (not one read back from storage); onChange(): the
    /// alerts changed (render); onError(text): storage refused a write.
    constructor({ storage = null, key = storageKey(null, 'geotriggers'), now = () => Date.now(), onCue = () => {}, onChange = () => {}, onError = () => {}, saveDelay = SAVE_DELAY_MS } = {}) {
        this.storage = storage;
        this.key = key;
        this.now = now;
        this.onCue = onCue;
        this.onChange = onChange;
        this.onError = onError;
        this.saveDelay = saveDelay;
        this.alerts = new Map(); // key -> alert
        this.acked = new Map();  // key -> when it was acknowledged (ms)
        this.version = 0;
        this.saveTimer = null;
        this.stored = false;     // something of ours is in storage (so an empty state is written too)
    }

    /// Reads what the storage holds for this key (at start; again when another tab wrote it).
    load() {
        let saved = null;
        try {
            saved = this.storage ? JSON.parse(this.storage.getItem(this.key) || 'null') : null;
        } catch {
            saved = null;
        }
        if (!isObject(saved)) return;
        this.stored = true;
        let changed = false;
        for (const entry of Array.isArray(saved.acked) ? saved.acked : []) {
            if (!Array.isArray(entry) || typeof entry[0] !== 'string' || typeof entry[1] !== 'number') continue;
            if (!this.acked.has(entry[0])) { this.acked.set(entry[0], entry[1]); changed = true; }
            const known = this.alerts.get(entry[0]);
            if (known && !known.acked) { known.acked = true; known.ackedAt = entry[1]; changed = true; }
        }
        for (const a of Array.isArray(saved.alerts) ? saved.alerts : []) {
            if (!isObject(a) || typeof a.key !== 'string' || typeof a.kind !== 'string' || typeof a.type !== 'string' || typeof a.raised !== 'number') continue;
            const known = this.alerts.get(a.key);
            if (!known) {
                this.alerts.set(a.key, { ...a, acked: a.acked === true || this.acked.has(a.key), resolved: a.resolved === true });
                changed = true;
            } else if (a.resolved === true && !known.resolved) {
                known.resolved = true;
                known.resolvedBy = str(a.resolvedBy);
                changed = true;
            }
        }
        this.prune();
        if (changed) this.changed(false);
    }

    /// The sound setting: true unless turned off (kept in storage, per browser).
    get sound() {
        try { return !this.storage || this.storage.getItem(SOUND_KEY) !== 'off'; } catch { return true; }
    }

    set sound(on) {
        try { this.storage?.setItem(SOUND_KEY, on ? 'on' : 'off'); } catch (error) { this.onError(`alert sound setting not kept: ${error.message}`); }
        this.changed(false);
    }

    /// An event from PREFIX/events/#: raises, resolves, or does nothing.
    event(e) {
        if (!isObject(e) || typeof e.id !== 'string' || typeof e.type !== 'string') return;
        if (ALERT_TYPES.includes(e.type)) {
            this.raise({
                key: e.id, kind: 'event', type: e.type, device: str(e.device), trigger: str(e.trigger), trip: str(e.trip),
                fence: fence(e.fence), position: position(e.position), time: str(e.position?.time) || str(e.emitted),
                message: e.message === undefined ? undefined : typeof e.message === 'string' ? e.message : JSON.stringify(e.message),
            });
            return;
        }
        const resolves = RESOLVES[e.type];
        if (!resolves) return;
        let changed = false;
        for (const a of this.alerts.values()) {
            if (a.kind !== 'event' || a.type !== resolves || a.resolved || a.device !== str(e.device)) continue;
            if (e.type === 'backOnRoute' && a.trip !== str(e.trip)) continue;
            if (e.type === 'speedOk') {
                // A fence's: same trigger and fence; a trip's (trigger `trips`, no fence): same trip.
                const f = fence(e.fence);
                if (a.trigger !== str(e.trigger) || a.fence?.layer !== f?.layer || a.fence?.id !== f?.id || a.trip !== str(e.trip)) continue;
            }
            a.resolved = true;
            a.resolvedBy = e.type;
            changed = true;
        }
        if (changed) this.changed();
    }

    /// An expected arrival's result (PREFIX/expect/ID/result): a `missed` one raises.
    result(expectation, r) {
        if (!isObject(r) || r.result !== 'missed' || typeof r.id !== 'string') return;
        this.raise({
            key: r.id, kind: 'expectation', type: 'missed', expectation: String(expectation), device: str(r.device),
            fence: { layer: str(r.layer), id: str(r.fence) }, by: str(r.by), time: str(r.time) || str(r.by),
        });
    }

    /// A gateway's status (null: its retained status was cleared, the gateway forgotten).
    gateway(id, status) {
        const key = `gateway:${id}`;
        const a = this.alerts.get(key);
        const word = isObject(status) && typeof status.status === 'string' ? status.status : null;
        if (word === 'started' || word === null) {
            // Back (or gone): resolved; an acknowledged outage is over, so the next one alerts again.
            let changed = this.acked.delete(key);
            if (a && a.acked) { this.alerts.delete(key); changed = true; }
            else if (a && !a.resolved) { a.resolved = true; a.resolvedBy = word || 'cleared'; changed = true; }
            if (changed) this.changed();
            return;
        }
        if (a) {
            // The same outage, in other words (stopped, starting, offline...): no new cue. A
            // resolved one that goes down again is raised again.
            const again = a.resolved && !a.acked;
            if (a.status === word && !again) return;
            a.status = word;
            if (again) { a.resolved = false; a.resolvedBy = undefined; a.raised = this.now(); this.onCue(a); }
            this.changed();
            return;
        }
        if (this.acked.has(key)) return; // acknowledged, and not started since
        this.raise({ key, kind: 'gateway', type: 'gateway', gateway: String(id), status: word, time: str(status.since) });
    }

    raise(fields) {
        if (this.alerts.has(fields.key) || this.acked.has(fields.key)) return;
        const alert = { ...fields, raised: this.now(), resolved: false, acked: false };
        for (const k of Object.keys(alert)) if (alert[k] === undefined) delete alert[k];
        this.alerts.set(alert.key, alert);
        this.prune();
        this.onCue(alert);
        this.changed();
    }

    /// A dispatcher acknowledged the alert `key` (written to storage at once).
    ack(key) {
        const a = this.alerts.get(key);
        if (!a || a.acked) return;
        const now = this.now();
        a.acked = true;
        a.ackedAt = now;
        this.acked.set(key, now);
        this.changed();
        this.flush();
    }

    ackAll() {
        const now = this.now();
        let any = false;
        for (const a of this.alerts.values()) {
            if (a.acked) continue;
            a.acked = true;
            a.ackedAt = now;
            this.acked.set(a.key, now);
            any = true;
        }
        if (any) { this.changed(); this.flush(); }
    }

    /// The alerts to show: unacknowledged first (newest first), then the acknowledged ones of
    /// the last ACKED_SHOWN_MS (newest acknowledgement first).
    list() {
        const all = [...this.alerts.values()];
        const open = all.filter((a) => !a.acked).sort((x, y) => y.raised - x.raised);
        const done = all.filter((a) => a.acked).sort((x, y) => y.ackedAt - x.ackedAt);
        return open.concat(done);
    }

    unacknowledged() {
        let n = 0;
        for (const a of this.alerts.values()) if (!a.acked) n++;
        return n;
    }

    /// Drops acknowledged alerts shown long enough, old acknowledged keys, and past ALERT_LIMIT
    /// the least pressing alerts. True when something went.
    prune() {
        const now = this.now();
        let dropped = false;
        for (const [key, a] of this.alerts) {
            if (a.acked && now - (a.ackedAt || 0) > ACKED_SHOWN_MS) { this.alerts.delete(key); dropped = true; }
        }
        for (const [key, at] of this.acked) {
            if (now - at > ACK_MEMORY_MS) { this.acked.delete(key); dropped = true; }
        }
        if (this.acked.size > ACK_LIMIT) {
            const oldest = [...this.acked].sort((x, y) => x[1] - y[1]).slice(0, this.acked.size - ACK_LIMIT);
            for (const [key] of oldest) this.acked.delete(key);
            dropped = true;
        }
        if (this.alerts.size > ALERT_LIMIT) {
            const rank = (a) => (a.acked ? 0 : a.resolved ? 1 : 2);
            const order = [...this.alerts.values()].sort((x, y) => rank(x) - rank(y) || x.raised - y.raised);
            for (const a of order.slice(0, this.alerts.size - ALERT_LIMIT)) this.alerts.delete(a.key);
            dropped = true;
        }
        return dropped;
    }

    /// Prunes (an acknowledged alert leaves the list after ACKED_SHOWN_MS); call now and then.
    tick() {
        if (this.prune()) this.changed();
    }

    changed(save = true) {
        this.version++;
        this.onChange();
        if (save && !this.saveTimer) {
            this.saveTimer = setTimeout(() => this.flush(), this.saveDelay);
        }
    }

    /// Writes the alerts and acknowledged keys to storage now.
    flush() {
        if (this.saveTimer) { clearTimeout(this.saveTimer); this.saveTimer = null; }
        if (!this.storage) return;
        if (!this.alerts.size && !this.acked.size && !this.stored) return; // nothing to keep, nothing kept
        const data = { alerts: [...this.alerts.values()], acked: [...this.acked] };
        try {
            this.storage.setItem(this.key, JSON.stringify(data));
            this.stored = true;
        } catch (error) {
            this.onError(`alerts not kept for the next reload: ${error.message}`);
        }
    }
}

/// An alert in words: {title, detail} (plain text; the page puts them in text nodes).
export function describe(a) {
    const at = (iso) => {
        if (typeof iso !== 'string') return '';
        const d = new Date(iso);
        return Number.isNaN(d.getTime()) ? iso : d.toISOString().slice(11, 19);
    };
    const where = (f) => (f ? (f.name ? `${f.name} (${f.layer}/${f.id})` : `${f.layer}/${f.id}`) : '');
    if (a.kind === 'gateway') {
        return { title: `gateway ${a.gateway} ${a.status}`, detail: a.resolved ? `back (${a.resolvedBy})` : a.time ? `since ${at(a.time)}` : '' };
    }
    if (a.kind === 'expectation') {
        return { title: `missed · ${a.device || '?'}`, detail: `expected at ${where(a.fence)} by ${at(a.by)} (expected arrival ${a.expectation})` };
    }
    const parts = [];
    if (a.trip) parts.push(`trip ${a.trip}`);
    if (a.fence) parts.push(`in ${where(a.fence)}`);
    if (a.time) parts.push(at(a.time));
    if (a.message) parts.push(a.message);
    if (a.resolved) parts.push(`resolved: ${a.resolvedBy}`);
    return { title: `${a.type} · ${a.device || '?'}`, detail: parts.join(' · ') };
}
