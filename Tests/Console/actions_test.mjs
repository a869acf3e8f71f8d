// The console's queries (deploy/console/actions.js) against a stand-in gateway that answers
// through the reply topic as the real one does: a features reply in parts is joined in part
// order; the fence set is asked page by page (`offset`) until the reply is not truncated or
// the console holds its most; a gateway refusing the new keys is asked with its defaults; a
// truncated answer makes a moved view ask again, a complete one does not; with several
// gateways (a NATS cluster) each is asked and their fences merged by layer and fence id.
// Run: node Tests/Console/actions_test.mjs   (exit status 1 on a failure)

import { load } from './load.mjs';
const { Store } = await load('store.js');
const { Actions, FEATURE_LIMIT, WORLD, partBytes } = await load('actions.js');

let failures = 0, checks = 0;
function same(name, actual, expected) {
    checks++;
    const a = JSON.stringify(actual), e = JSON.stringify(expected);
    if (a !== e) { failures++; console.log(`FAIL ${name}\n  got      ${a}\n  expected ${e}`); }
}
const bytes = (v) => new TextEncoder().encode(JSON.stringify(v));
const feature = (n) => ({ type: 'Feature', id: `f${n}`, properties: { layer: 'l', fence: `f${n}`, name: `F${n}`, buffer: null, triggers: ['t'] },
    geometry: { type: 'Point', coordinates: [n / 1000, 0] } });

/// A console (store + actions) and started gateways (`gateways`: id -> fence numbers, or a
/// count of fences 0..<count for gateway `gw`) that answer each features query with
/// `answer(query, fences)` -> list of reply objects (parts), delivered in `order`.
function rig(gateways, answer, order = (parts) => parts) {
    const store = new Store('gt');
    const asked = [];
    if (typeof gateways === 'number') gateways = { gw: Array.from({ length: gateways }, (_, n) => n) };
    for (const id of Object.keys(gateways)) store.handle(`gt/status/${id}`, bytes({ status: 'started' }));
    const client = {
        publish(topic, payload) {
            const q = JSON.parse(payload);
            asked.push(q.features);
            const fences = gateways[topic.split('/').pop()].map(feature);
            const replies = answer(q.features, fences).map((r) => ({ ...r, correlation: q.correlation }));
            queueMicrotask(() => { for (const r of order(replies)) actions.reply(bytes(r)); });
            return Promise.resolve();
        },
    };
    const actions = new Actions({ client, store, prefix: 'gt', replyTopic: 'gt/replies/console-1' });
    return { store, actions, asked };
}

/// The gateway's rule: `offset`, then `limit` and a page of at most `page` fences, in parts of `per`.
const gateway = (page, per) => (q, fences) => {
    const from = q.offset || 0;
    const limit = Math.min(q.limit || 2000, page);
    const chosen = fences.slice(from, from + limit);
    const truncated = from + chosen.length < fences.length;
    const parts = [];
    for (let i = 0; i < chosen.length || parts.length === 0; i += per) parts.push(chosen.slice(i, i + per));
    return parts.map((features, i) => ({ type: 'FeatureCollection', features, truncated, part: i + 1, parts: parts.length }));
};

{
    const { store, actions, asked } = rig(25, gateway(10, 3), (parts) => parts.slice().reverse());
    await actions.loadFeatures();
    same('25 fences asked in pages of 10 (offsets)', asked.map((q) => q.offset), [0, 10, 20]);
    same('each page in parts, joined in part order although they came backwards', [...store.fences.keys()].slice(0, 4), ['l/f0', 'l/f1', 'l/f2', 'l/f3']);
    same('all fences held, not truncated', [store.fences.size, store.featuresStatus.state], [25, 'ok']);
    same('the parts asked stay under mosquitto\'s 4 KB websockets piece', [asked[0].partBytes, partBytes('gt/replies/console-1')], [3980, 3980]);
    same('on load: asked without a bbox, never the world as one', asked[0].bbox, undefined);
    actions.viewChanged([0, 0, 1, 1]);
    same('a complete answer for the whole world: a moved view asks nothing', actions.viewTimer, undefined);
}
{
    // On load every fence (no bbox: the map is fitted to what comes); then the view the map
    // shows, and a view spanning the world is not a bbox.
    const { actions, asked } = rig(3, gateway(10, 3));
    let view = [8.5, 47.3, 8.6, 47.4];
    actions.view = () => view;
    await actions.loadFeatures();
    await actions.loadFeatures();
    same('on load no bbox, then the view the map shows', asked.map((q) => q.bbox), [undefined, [8.5, 47.3, 8.6, 47.4]]);
    view = WORLD;
    await actions.loadFeatures();
    same('a view as large as the world is asked without a bbox', asked.map((q) => q.bbox), [undefined, [8.5, 47.3, 8.6, 47.4], undefined]);
    actions.held = { bbox: [8.5, 47.3, 8.6, 47.4], complete: true };
    actions.viewChanged(null);
    same('zoomed out to the world from a smaller view: asked again', actions.viewTimer !== undefined, true);
    clearTimeout(actions.viewTimer);
}
{
    const { store, actions, asked } = rig(FEATURE_LIMIT + 5, gateway(4000, 500));
    await actions.loadFeatures();
    same('past the console\'s limit: it stops there and says truncated', [asked.map((q) => [q.offset, q.limit]), store.fences.size, store.featuresStatus.state],
        [[[0, FEATURE_LIMIT], [4000, FEATURE_LIMIT - 4000], [8000, FEATURE_LIMIT - 8000]], FEATURE_LIMIT, 'truncated']);
    actions.viewChanged([0, 0, 0.001, 0.001]);
    same('a truncated answer: a moved view asks again', actions.viewTimer !== undefined, true);
    clearTimeout(actions.viewTimer);
}
{
    // An older gateway: the new keys are refused by name; asked again with its defaults.
    const { store, actions, asked } = rig(3, (q, fences) => q.partBytes !== undefined
        ? [{ error: '"features": unknown key "offset" (expected "bbox", "layers" or "limit")' }]
        : [{ type: 'FeatureCollection', features: fences, truncated: false }]);
    await actions.loadFeatures();
    same('a gateway refusing offset/partBytes is asked with its defaults', [asked.length, JSON.stringify(asked[1]), store.fences.size], [2, '{}', 3]);
}
{
    const { store, actions } = rig(3, () => [{ error: 'busy: 256 queries are waiting; ask again later' }]);
    await actions.loadFeatures();
    same('an error answer is said on the page', [store.featuresStatus.state, store.notices.at(-1).text.includes('busy')], ['error', true]);
}
{
    // A page that brings nothing though truncated (a fence larger than the reply budget): no endless asking.
    const { store, actions, asked } = rig(5, (q, fences) => [{ type: 'FeatureCollection', features: (q.offset || 0) === 0 ? fences.slice(0, 2) : [], truncated: true }]);
    await actions.loadFeatures();
    same('an empty truncated page ends the asking', [asked.length, store.fences.size, store.featuresStatus.state], [2, 2, 'truncated']);
}

{
    // Two gateways of a cluster: the same layer mostly, one fence each of their own.
    const { store, actions, asked } = rig({ a: [0, 1, 2, 3], b: [2, 3, 4] }, gateway(10, 2));
    await actions.loadFeatures();
    same('several gateways: each asked, fences merged by layer and fence id', [asked.length, [...store.fences.keys()].sort()],
        [2, ['l/f0', 'l/f1', 'l/f2', 'l/f3', 'l/f4']]);
}

console.log(`console actions: ${checks - failures}/${checks} checks passed`);
process.exit(failures ? 1 : 0);
