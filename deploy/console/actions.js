// What the dispatcher asks and does: queries (request/response through PREFIX/replies/ID,
// the v3.1.1 replyTo rule), the fence geometry from `features`, runtime fences, who is
// inside, expected arrivals. Everything goes through the MQTT client; answers land in the store.

const QUERY_TIMEOUT_MS = 10000;
/// The whole world: the console draws every fence.
const WORLD = [-180, -90, 180, 90];
const FEATURE_LIMIT = 10000;

export class Actions {
    constructor({ client, store, prefix, replyTopic, say }) {
        this.client = client;
        this.store = store;
        this.prefix = prefix;
        this.replyTopic = replyTopic;
        this.say = say || (() => {});  // a line in the answer panel
        this.pending = new Map();      // correlation -> {resolve, timer}
        this.nextCorrelation = 1;
        this.featuresGateway = null;
        this.reloadTimer = null;
    }

    /// The gateway queries go to: the one features came from, else the first started one.
    gateway() {
        const started = [...this.store.gateways.values()].filter((g) => g.status === 'started').map((g) => g.id).sort();
        if (this.featuresGateway && started.includes(this.featuresGateway)) return this.featuresGateway;
        return started[0] || null;
    }

    /// Publishes a query and resolves with the reply's JSON (or {error} on timeout).
    query(gateway, body) {
        const correlation = `c${this.nextCorrelation++}`;
        const payload = JSON.stringify({ ...body, replyTo: this.replyTopic, correlation });
        return new Promise((resolve) => {
            const timer = setTimeout(() => {
                this.pending.delete(correlation);
                resolve({ error: `no answer from gateway ${gateway} within ${QUERY_TIMEOUT_MS / 1000} s` });
            }, QUERY_TIMEOUT_MS);
            this.pending.set(correlation, { resolve, timer });
            this.client.publish(`${this.prefix}/query/${gateway}`, payload, { qos: 1 }).catch(() => {});
        });
    }

    /// A message on the reply topic.
    reply(payload) {
        const reply = this.store.json(this.replyTopic, payload);
        if (reply === undefined || reply === null || typeof reply !== 'object') return;
        const entry = this.pending.get(reply.correlation);
        if (!entry) return;
        this.pending.delete(reply.correlation);
        clearTimeout(entry.timer);
        entry.resolve(reply);
    }

    async loadFeatures(gateway = this.gateway()) {
        if (!gateway) return;
        this.featuresGateway = gateway;
        // Replies may cross: only the newest question's answer is drawn.
        const asked = this.featuresAsked = (this.featuresAsked || 0) + 1;
        let reply = await this.query(gateway, { features: { bbox: WORLD, limit: FEATURE_LIMIT } });
        // A gateway with other bounds on these may refuse them: then ask with its defaults.
        if (reply && typeof reply.error === 'string' && /limit|bbox/.test(reply.error)) {
            reply = await this.query(gateway, { features: {} });
        }
        if (asked === this.featuresAsked) this.store.setFeatures(reply);
    }

    /// Runtime fences changed: ask again once the gateway applied them (it batches every 250 ms).
    /// Asked twice: a gateway busy with a large batch may not have applied it at the first.
    reloadFeaturesSoon() {
        clearTimeout(this.reloadTimer);
        clearTimeout(this.secondReloadTimer);
        this.reloadTimer = setTimeout(() => this.loadFeatures(), 800);
        this.secondReloadTimer = setTimeout(() => this.loadFeatures(), 3000);
    }

    async inside(key) {
        const gateway = this.gateway();
        if (!gateway) { this.say('who is inside: no gateway is started'); return; }
        const slash = key.indexOf('/');
        const reply = await this.query(gateway, { inside: { layer: key.slice(0, slash), fence: key.slice(slash + 1) } });
        if (typeof reply.error === 'string') { this.say(`who is inside ${key}: ${reply.error}`); return; }
        const inside = Array.isArray(reply.inside) ? reply.inside : [];
        this.say(`inside ${key}: ${inside.length ? inside.map((i) => `${i.device} (${i.trigger}, since ${i.since})`).join(', ') : 'nobody'}`);
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

    async cancelExpectation(id) {
        await this.client.publish(`${this.prefix}/expect/${id}`, '', { qos: 1, retain: true });
        const x = this.store.expectations.get(id);
        if (x && !x.result) { x.open = false; x.cancelled = true; this.store.changed('expectations'); }
        this.say(`expected arrival ${id} cancelled`);
    }
}

/// One topic level: no '/', '+', '#', not empty.
export function validLevel(s) {
    return typeof s === 'string' && s.length > 0 && !/[/+#\u0000]/.test(s);
}
