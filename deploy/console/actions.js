// What the dispatcher asks and does: queries (request/response through PREFIX/replies/ID,
// the v3.1.1 replyTo rule), the fence geometry from `features`, runtime fences, who is
// inside, expected arrivals. Everything goes through the MQTT client; answers land in the store.

/// A query is given up after this long without a message of its reply.
const QUERY_TIMEOUT_MS = 10000;
/// The whole world as a bbox: never asked for (a gateway finds and sorts every fence for it);
/// with the whole world in view the console asks without a bbox, which a gateway pages in order.
export const WORLD = [-180, -90, 180, 90];
/// The most fences the console holds; past it, the fences in view (asked again as it moves).
export const FEATURE_LIMIT = 10000;
/// mosquitto's websockets listener sends a packet over about 4 KB in 4 KB pieces, one per turn
/// of its loop (~100 ms each): the features reply is asked in parts that stay under it
/// (packet = payload + reply topic + a few header bytes).
export function partBytes(replyTopic) {
    return Math.max(1024, 4000 - new TextEncoder().encode(replyTopic).length);
}

import { paged, Track, TRACK_BATCH, EVENTS_PAGE, IN_FLIGHT, HOUR_MS } from './history.js';

/// A history query answered "busy" (the gateway's per-user bound on replies being written) is
/// asked again this many times, after this long.
const BUSY_RETRIES = 8;
const BUSY_WAIT_MS = 250;
/// The most events asked at load (the list keeps 500, the marks 10,000).
export const HISTORY_EVENTS = 10000;

export class Actions {
    /// `view`: the map's view as a features bbox [west, south, east, north], or null when the
    /// whole world is in view (or there is no map).
    constructor({ client, store, prefix, replyTopic, say, view }) {
        this.client = client;
        this.view = view || (() => null);
        this.store = store;
        this.prefix = prefix;
        this.replyTopic = replyTopic;
        this.say = say || (() => {});  // a line in the answer panel
        this.pending = new Map();      // correlation -> {resolve, timer}
        this.nextCorrelation = 1;
        this.reloadTimer = null;
        // History queries (track, events) in flight and waiting for a slot: at most IN_FLIGHT.
        this.historyRunning = 0;
        this.historyWaiting = [];
        this.trackGateway = new Map(); // device -> the gateway that answered its track
    }

    /// A track or events query, at most IN_FLIGHT of them at once, asked again while the
    /// gateway says it is busy.
    async historyQuery(gateway, body) {
        if (this.historyRunning >= IN_FLIGHT) await new Promise((go) => this.historyWaiting.push(go));
        this.historyRunning++;
        try {
            for (let attempt = 0; ; attempt++) {
                const reply = await this.query(gateway, body);
                if (!(reply && typeof reply.error === 'string' && /^busy/.test(reply.error)) || attempt >= BUSY_RETRIES) return reply;
                await new Promise((wake) => setTimeout(wake, BUSY_WAIT_MS * (attempt + 1)));
            }
        } finally {
            this.historyRunning--;
            const next = this.historyWaiting.shift();
            if (next) next();
        }
    }

    /// `device`'s track from the gateway's memory (the track query) from `since` (ms; null: all
    /// it keeps, 24 hours): {track (history.js Track), error}. `track`: one to append to
    /// (positions not later than its last are skipped).
    async trackOf(device, since = null, track = new Track()) {
        const { unknown, error } = await this.tracksOf([device], since, (d, positions) => track.append(positions));
        return { track, error: error || (unknown.length ? `no started gateway knows device "${device}"` : null) };
    }

    /// The tracks of `devices` from `since` (ms; null: all the gateways keep, 24 hours), from the
    /// track query for several devices, TRACK_BATCH a query, its reply in parts that mosquitto's
    /// websockets listener writes in one turn (docs/control-plane.md). `onTrack(device,
    /// positions)` takes each device's positions as they come, oldest first (a device may come
    /// in several calls). Several gateways (a NATS cluster) each track their own devices: a
    /// device goes first to the gateway that answered for it before, and one a gateway does not
    /// know to the next. Resolves to {unknown: the devices no started gateway knows, error}.
    async tracksOf(devices, since, onTrack) {
        const gateways = this.started();
        if (!gateways.length) return { unknown: [], error: 'no gateway is started' };
        const unknown = [];
        const tried = new Map(); // device -> the gateways asked
        let error = null;
        let round = new Map();   // gateway -> devices to ask it
        const ask = (gateway, device) => {
            if (!round.has(gateway)) round.set(gateway, []);
            round.get(gateway).push(device);
        };
        for (const device of devices) {
            const known = this.trackGateway.get(device);
            ask(gateways.includes(known) ? known : gateways[0], device);
        }
        while (round.size) {
            const asking = round;
            round = new Map();
            await Promise.all([...asking].map(async ([gateway, list]) => {
                const result = await this.tracksFrom(gateway, list, since, (device, positions) => {
                    this.trackGateway.set(device, gateway);
                    onTrack(device, positions);
                });
                if (result.error) error = error || `gateway ${gateway}: ${result.error}`;
                for (const device of result.unknown) {
                    if (!tried.has(device)) tried.set(device, new Set());
                    tried.get(device).add(gateway);
                    const next = gateways.find((g) => !tried.get(device).has(g));
                    if (next) ask(next, device);
                    else unknown.push(device);
                }
            }));
        }
        return { unknown, error };
    }

    /// One gateway's tracks of `devices` (see tracksOf): TRACK_BATCH devices a query; a reply cut
    /// by its budget (`truncated`) is continued from the device it stopped at. Resolves to
    /// {unknown, error}.
    async tracksFrom(gateway, devices, since, onTrack) {
        const unknown = [];
        let error = null;
        const queue = []; // [devices, since (ms or null)]
        for (let i = 0; i < devices.length; i += TRACK_BATCH) queue.push([devices.slice(i, i + TRACK_BATCH), since]);
        const work = async () => {
            while (queue.length && !error) {
                const [list, from] = queue.shift();
                const asking = { devices: list, partBytes: partBytes(this.replyTopic) };
                if (from !== null) asking.since = new Date(from).toISOString();
                const reply = await this.historyQuery(gateway, { track: asking });
                if (!reply || typeof reply.error === 'string' || !Array.isArray(reply.tracks)) {
                    error = reply && typeof reply.error === 'string' ? reply.error : 'a track reply of unknown shape';
                    break;
                }
                let last = -1;       // the index in `list` of the last device listed
                let lastTime = NaN;  // the time of its last position listed (ms)
                for (const entry of reply.tracks) {
                    const at = entry && typeof entry.device === 'string' ? list.indexOf(entry.device, Math.max(0, last)) : -1;
                    if (at < 0) continue;
                    if (at !== last) lastTime = NaN;
                    last = at;
                    if (entry.unknown === true) { unknown.push(entry.device); continue; }
                    const positions = Array.isArray(entry.positions) ? entry.positions : [];
                    const end = positions.length ? Date.parse(positions[positions.length - 1].time) : NaN;
                    if (!Number.isNaN(end)) lastTime = end;
                    onTrack(entry.device, positions);
                }
                if (reply.truncated !== true) continue;
                if (last < 0) { error = 'a track reply cut short before its first device'; break; }
                // The device it stopped at: the rest of its positions (all of them if none came,
                // or it was unknown); then the devices after it.
                const cut = reply.tracks[reply.tracks.length - 1];
                if (!Number.isNaN(lastTime)) queue.unshift([[list[last]], lastTime + 1]);
                const rest = list.slice(Number.isNaN(lastTime) && !(cut && cut.unknown === true) ? last : last + 1);
                if (rest.length) queue.push([rest, from]);
            }
        };
        await Promise.all(Array.from({ length: IN_FLIGHT }, work));
        return { unknown, error };
    }

    /// The journal's events of the last hour (the events query), paged, oldest first, from every
    /// started gateway: {events, error}; of a gateway with more than `max`, the newest (its
    /// first reply's `count` says where they begin). (Several gateways on one NATS cluster keep
    /// a journal each; the store merges by id.)
    async recentEvents(now = Date.now(), max = HISTORY_EVENTS) {
        const since = new Date(now - HOUR_MS).toISOString();
        const events = [];
        let error = null;
        for (const gateway of this.started()) {
            const first = await this.historyQuery(gateway, { events: { since, limit: 1 } });
            const count = first && Number.isInteger(first.count) ? first.count : 0;
            const start = Math.max(0, count - max);
            const result = await paged(async (offset, limit) => {
                const reply = await this.historyQuery(gateway, { events: { since, offset: start + offset, limit } });
                if (!reply || typeof reply.error === 'string') return { error: reply && reply.error ? reply.error : 'no answer' };
                return { items: Array.isArray(reply.events) ? reply.events : [], truncated: reply.truncated === true };
            }, { limit: EVENTS_PAGE, max });
            events.push(...result.items);
            if (result.error) error = error || `gateway ${gateway}: ${result.error}`;
        }
        return { events, error };
    }

    /// The started gateways' ids, sorted.
    started() {
        return [...this.store.gateways.values()].filter((g) => g.status === 'started').map((g) => g.id).sort();
    }

    /// The gateway queries go to: the first started one.
    gateway() {
        return this.started()[0] || null;
    }

    /// Publishes a query and resolves with the reply's JSON (or {error} on timeout). A reply in
    /// parts (`part` 1...`parts`, the features and track queries' `partBytes`) resolves once all
    /// came, as one reply.
    query(gateway, body) {
        const correlation = `c${this.nextCorrelation++}`;
        const payload = JSON.stringify({ ...body, replyTo: this.replyTopic, correlation });
        return new Promise((resolve) => {
            const entry = { resolve, timer: null, parts: new Map() };
            entry.wait = () => {
                clearTimeout(entry.timer);
                entry.timer = setTimeout(() => {
                    this.pending.delete(correlation);
                    resolve({ error: `no answer from gateway ${gateway} within ${QUERY_TIMEOUT_MS / 1000} s` });
                }, QUERY_TIMEOUT_MS);
            };
            entry.wait();
            this.pending.set(correlation, entry);
            this.client.publish(`${this.prefix}/query/${gateway}`, payload, { qos: 1 }).catch(() => {});
        });
    }

    /// A message on the reply topic.
    reply(payload) {
        const reply = this.store.json(this.replyTopic, payload);
        if (reply === undefined || reply === null || typeof reply !== 'object') return;
        const entry = this.pending.get(reply.correlation);
        if (!entry) return;
        const { part, parts } = reply;
        if (Number.isInteger(part) && Number.isInteger(parts) && parts > 1 && part >= 1 && part <= parts) {
            entry.parts.set(part, reply);
            if (entry.parts.size < parts) { entry.wait(); return; }
        }
        this.pending.delete(reply.correlation);
        clearTimeout(entry.timer);
        entry.resolve(entry.parts.size ? joinParts(entry.parts) : reply);
    }

    /// The fences of every started gateway (several share a NATS cluster), merged by layer and
    /// fence id: up to FEATURE_LIMIT, the ones in `bbox`: the view the map shows, once the page
    /// has fences to show (null: asked without a bbox, on load, when the map is fitted to what
    /// comes, and while the whole world is in view).
    async loadFeatures(bbox = this.held ? this.view() : null) {
        if (bbox && bbox[0] <= WORLD[0] && bbox[1] <= WORLD[1] && bbox[2] >= WORLD[2] && bbox[3] >= WORLD[3]) bbox = null;
        const gateways = this.started();
        if (!gateways.length) return;
        // Replies may cross: only the newest question's answer is drawn.
        const asked = this.featuresAsked = (this.featuresAsked || 0) + 1;
        const merged = new Map(); // "LAYER/FENCE" -> Feature
        let truncated = false, failed = null;
        for (const gateway of gateways) {
            const reply = await this.featuresOf(gateway, bbox, asked);
            if (asked !== this.featuresAsked) return;
            if (!reply || reply.type !== 'FeatureCollection' || !Array.isArray(reply.features)) { failed = failed || reply; continue; }
            for (const f of reply.features) {
                const p = f && f.properties;
                merged.set(p && typeof p.layer === 'string' ? `${p.layer}/${p.fence ?? f.id}` : `?${merged.size}`, f);
            }
            truncated = truncated || reply.truncated === true;
        }
        const features = [...merged.values()].slice(0, FEATURE_LIMIT);
        truncated = truncated || merged.size > FEATURE_LIMIT;
        const result = features.length || !failed ? { type: 'FeatureCollection', features, truncated } : failed;
        this.held = { bbox, complete: !truncated };
        this.store.setFeatures(result);
        if (features.length && failed) this.store.notice('features', `fences: a gateway did not answer the features query: ${failed.error ?? 'not a FeatureCollection'}`);
    }

    /// One gateway's fences in `bbox`, up to FEATURE_LIMIT, asked page by page (`offset`), each
    /// page in parts: a FeatureCollection, or the reply that was not one (an error).
    async featuresOf(gateway, bbox, asked) {
        const features = [];
        let reply, truncated = false;
        for (;;) {
            const limit = FEATURE_LIMIT - features.length;
            const asking = { limit, offset: features.length, partBytes: partBytes(this.replyTopic) };
            if (bbox) asking.bbox = bbox;
            reply = await this.query(gateway, { features: asking });
            // A gateway with other bounds on these may refuse them: then ask with its defaults.
            if (features.length === 0 && reply && typeof reply.error === 'string' && /limit|bbox|offset|partBytes/.test(reply.error)) {
                reply = await this.query(gateway, { features: bbox ? { bbox } : {} });
                break;
            }
            if (asked !== this.featuresAsked) return null;
            if (!reply || reply.type !== 'FeatureCollection' || !Array.isArray(reply.features)) break;
            features.push(...reply.features);
            truncated = reply.truncated === true;
            // Done: all came, the console holds its most, or a page brought nothing (one fence
            // larger than the reply budget).
            if (!truncated || features.length >= FEATURE_LIMIT || reply.features.length === 0) break;
        }
        return features.length ? { type: 'FeatureCollection', features, truncated } : reply;
    }

    /// The map moved to [west, south, east, north] (null: the whole world): asked again when the
    /// fences held are not all of those there (the last answer was truncated, or was for a view
    /// not covering it).
    viewChanged(view) {
        const held = this.held;
        if (!held) return;
        if (held.complete && (held.bbox === null || (view && covers(held.bbox, view)))) return;
        clearTimeout(this.viewTimer);
        this.viewTimer = setTimeout(() => this.loadFeatures(view), 400);
    }

    /// Runtime fences changed: ask again once the gateway applied them (it batches every 250 ms).
    /// Asked twice: a gateway busy with a large batch may not have applied it at the first.
    reloadFeaturesSoon() {
        clearTimeout(this.reloadTimer);
        clearTimeout(this.secondReloadTimer);
        this.reloadTimer = setTimeout(() => this.loadFeatures(), 800);
        this.secondReloadTimer = setTimeout(() => this.loadFeatures(), 3000);
    }

    /// Who is inside the fence "LAYER/FENCE" (the inside query), for the selection panel:
    /// {state: 'ok', inside, count, truncated} or {state: 'error', error}.
    async insideOf(key) {
        const gateway = this.gateway();
        if (!gateway) return { state: 'error', error: 'no gateway is started' };
        const slash = key.indexOf('/');
        const reply = await this.query(gateway, { inside: { layer: key.slice(0, slash), fence: key.slice(slash + 1) } });
        if (!reply || typeof reply !== 'object' || typeof reply.error === 'string') return { state: 'error', error: reply && reply.error ? reply.error : 'no answer' };
        const inside = Array.isArray(reply.inside) ? reply.inside.filter((i) => i && typeof i === 'object') : [];
        return { state: 'ok', inside, count: Number.isInteger(reply.count) ? reply.count : inside.length, truncated: reply.truncated === true };
    }

    async inside(key) {
        const gateway = this.gateway();
        if (!gateway) { this.say('who is inside: no gateway is started'); return; }
        const slash = key.indexOf('/');
        const reply = await this.query(gateway, { inside: { layer: key.slice(0, slash), fence: key.slice(slash + 1) } });
        if (typeof reply.error === 'string') { this.say(`who is inside ${key}: ${reply.error}`); return; }
        const inside = Array.isArray(reply.inside) ? reply.inside : [];
        // A reply holds what fits in 900 KiB (thousands of stays); `count` has them all.
        const more = reply.truncated === true && Number.isInteger(reply.count) && reply.count > inside.length ? ` and ${reply.count - inside.length} more` : '';
        this.say(`inside ${key}: ${inside.length ? inside.map((i) => `${i.device} (${i.trigger}, since ${i.since})`).join(', ') + more : 'nobody'}`);
    }

    /// Publishes a runtime fence (retained, QoS 1).
    async publishFence(layer, id, name, geometry, buffer) {
        const properties = { name };
        if (buffer > 0) properties.buffer = buffer;
        const feature = { type: 'Feature', id, properties, geometry };
        await this.client.publish(`${this.prefix}/fences/${layer}/${id}`, JSON.stringify(feature), { qos: 1, retain: true });
        this.say(`fence ${layer}/${id} published`);
    }

    async deleteFence(key) {
        await this.client.publish(`${this.prefix}/fences/${key}`, '', { qos: 1, retain: true });
        this.say(`fence ${key} deleted`);
    }

    async expect(id, device, layer, fence, by) {
        await this.client.publish(`${this.prefix}/expect/${id}`, JSON.stringify({ device, layer, fence, by }), { qos: 1, retain: true });
        this.say(`expected arrival ${id} published`);
    }

    /// Publishes a trip's request (retained, QoS 1; docs/trips.md "The request").
    async publishTrip(id, request) {
        await this.client.publish(`${this.prefix}/trips/${id}`, JSON.stringify(request), { qos: 1, retain: true });
        this.say(`trip ${id} published`);
    }

    /// Cancels a trip: an empty retained request.
    async cancelTrip(id) {
        await this.client.publish(`${this.prefix}/trips/${id}`, '', { qos: 1, retain: true });
        this.say(`trip ${id} cancelled`);
    }

    async cancelExpectation(id) {
        await this.client.publish(`${this.prefix}/expect/${id}`, '', { qos: 1, retain: true });
        const x = this.store.expectations.get(id);
        if (x && !x.result) { x.open = false; x.cancelled = true; this.store.changed('expectations'); }
        this.say(`expected arrival ${id} cancelled`);
    }
}

/// The parts of a reply (part -> reply) as one: a FeatureCollection, or the tracks of a track
/// query for several devices (a device's entries running on across parts joined).
function joinParts(parts) {
    const ordered = [...parts.keys()].sort((a, b) => a - b).map((k) => parts.get(k));
    const truncated = ordered.some((p) => p.truncated === true);
    if (ordered.some((p) => Array.isArray(p.tracks))) {
        const tracks = [];
        for (const p of ordered) {
            for (const entry of Array.isArray(p.tracks) ? p.tracks : []) {
                const last = tracks[tracks.length - 1];
                if (last && entry && last.device === entry.device && Array.isArray(last.positions) && Array.isArray(entry.positions)) {
                    last.positions = last.positions.concat(entry.positions);
                } else tracks.push(entry);
            }
        }
        return { tracks, truncated };
    }
    const features = [];
    for (const p of ordered) if (Array.isArray(p.features)) features.push(...p.features);
    return { type: 'FeatureCollection', features, truncated };
}

function covers(outer, inner) {
    return outer[0] <= inner[0] && outer[1] <= inner[1] && outer[2] >= inner[2] && outer[3] >= inner[3];
}

/// One topic level: no '/', '+', '#', not empty.
export function validLevel(s) {
    return typeof s === 'string' && s.length > 0 && !/[/+#\u0000]/.test(s);
}
