// Wires the console together: where to connect (?broker=, ?prefix=, ?tiles=), the login
// form, the MQTT client, the store, one render per animation frame, the dispatcher's forms,
// the selection shared by the map and the lists, the alerts panel and its audible cue.

import { MqttClient } from './mqtt.js';
import { Store } from './store.js';
import { MapView } from './map.js';
import { Lists } from './lists.js';
import { Actions, validLevel } from './actions.js';
import { Alerts, storageKey } from './alerts.js';
import { tripRequest, validTripId } from './trips.js';
import { Replay } from './replay.js';
import { Track } from './history.js';

// Credentials are kept per broker (the key names its URL) and offered only to that broker: a
// link with ?broker= pointing elsewhere never gets the login given to another.
const CREDENTIALS = 'geotrigger-console-credentials';
const params = new URLSearchParams(location.search);
const prefix = (params.get('prefix') || 'geotriggers').replace(/\/+$/, '');
const store = new Store(prefix);
const $ = (id) => document.getElementById(id);

window.addEventListener('error', (e) => store.notice('script', `console error: ${e.message}`));
window.addEventListener('unhandledrejection', (e) => store.notice('script', `console error: ${e.reason && e.reason.message ? e.reason.message : e.reason}`));

/// The broker's WebSocket URL (normalized, so one broker has one key), or {error} when ?broker=
/// is not a ws:// or wss:// URL, or null when the page came from a file.
function brokerURL() {
    const asked = params.get('broker');
    if (asked) {
        let parsed;
        try { parsed = new URL(asked); } catch { return { error: `?broker=${asked} is not a URL (ws://HOST:PORT/ or wss://HOST:PORT/)` }; }
        if (parsed.protocol !== 'ws:' && parsed.protocol !== 'wss:') return { error: `?broker=${asked} is not a ws:// or wss:// URL` };
        return parsed.href;
    }
    if (location.protocol !== 'http:' && location.protocol !== 'https:') return null;
    return new URL(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/`).href;
}

function credentialsKey(brokerUrl) {
    return `${CREDENTIALS} ${brokerUrl}`;
}

/// The login this tab gave to `brokerUrl`, if any; never one given to another broker.
function storedCredentials(brokerUrl) {
    // The key of older versions named no broker: whoever it was for, it is sent nowhere.
    sessionStorage.removeItem(CREDENTIALS);
    if (typeof brokerUrl !== 'string') return null;
    try {
        const c = JSON.parse(sessionStorage.getItem(credentialsKey(brokerUrl)) || 'null');
        return c && typeof c.username === 'string' && c.broker === brokerUrl ? c : null;
    } catch {
        return null;
    }
}

// Rendering: at most once per animation frame, whatever the message rate, and never more than
// half of the page's time: a frame that took T ms (script, style, layout, paint: measured up
// to a task posted at its end) is followed by at least T ms without rendering, in which the
// messages keep being applied. A busy page draws less often instead of falling behind.
let frameAsked = false;
let frameStart = 0;
let quietUntil = 0;
const afterFrame = new MessageChannel();
afterFrame.port1.onmessage = () => {
    const now = performance.now();
    quietUntil = now + (now - frameStart);
};
let map = null;
const answer = (text) => {
    const li = document.createElement('li');
    li.textContent = text;
    $('answers').prepend(li);
    while ($('answers').children.length > 20) $('answers').lastChild.remove();
};
function render() {
    frameAsked = false;
    frameStart = performance.now();
    if (replay) replay.frame();
    const changed = { devices: store.takeChanged('devices'), occupancy: store.takeChanged('occupancy') };
    if (map) map.render(store, changed);
    lists.render(store);
    // The selected fence's occupancy moved: who is inside is asked again.
    const s = store.selection;
    if (s && s.kind === 'fence' && changed.occupancy.has(s.id)) askInsideSoon(s.id);
    // The selected device moved: its track is brought up to date.
    if (s && s.kind === 'device' && changed.devices.has(s.id)) refreshTrackSoon(s.id);
    afterFrame.port2.postMessage(0);
}
function requestRender() {
    if (frameAsked) return;
    frameAsked = true;
    const wait = quietUntil - performance.now();
    if (wait > 1) setTimeout(() => requestAnimationFrame(render), wait);
    else requestAnimationFrame(render);
}
store.subscribe(requestRender);

if (globalThis.L) {
    try {
        map = new MapView($('map'), { tiles: params.get('tiles') || null });
    } catch (error) {
        store.notice('map', `the map could not start: ${error.message}`);
    }
} else {
    store.notice('map', 'Leaflet is missing (leaflet/leaflet.js beside index.html, from Debian\'s libjs-leaflet): lists only, no map');
}

const clientId = `console-${Math.random().toString(16).slice(2, 10)}`;
const replyTopic = `${prefix}/replies/${clientId}`;
const asked = brokerURL();
const url = typeof asked === 'string' ? asked : null;
const credentials = storedCredentials(url);
const client = new MqttClient({ url, clientId, username: credentials?.username, password: credentials?.password, keepalive: 30 });
// Fences are asked for the view the map shows (never the world as a bbox).
const actions = new Actions({ client, store, prefix, replyTopic, say: answer, view: () => (map ? map.view() : null) });

// Alerts wait for a dispatcher: kept in this browser's localStorage under the broker and prefix.
let cues = 0;
let audio = null;
let lastCue = -Infinity;
const alerts = new Alerts({
    storage: globalThis.localStorage || null,
    key: storageKey(url, prefix),
    onCue: () => cue(),
    onChange: () => requestRender(),
    onError: (text) => store.notice('alerts', text),
});
alerts.load();
store.onEvent = (event) => alerts.event(event);
store.onResult = (id, result) => alerts.result(id, result);
store.onStatus = (id, status) => alerts.gateway(id, status);
window.addEventListener('pagehide', () => alerts.flush());
// Another tab of this console acknowledged or raised something.
window.addEventListener('storage', (e) => { if (e.key === alerts.key) alerts.load(); });

/// The audible cue: a short two-tone beep made with WebAudio (no sound file), at most one a
/// second. Browsers let a page make sound only after a click or key on it: the audio context
/// is made (or resumed) then, and a cue before that may stay silent.
function cue() {
    if (!alerts.sound) return;
    const now = performance.now();
    if (now - lastCue < 1000) return;
    lastCue = now;
    cues++;
    $('alerts-section').dataset.cues = String(cues);
    if (!audio) return;
    try {
        if (audio.state === 'suspended') audio.resume().catch(() => {});
        const t = audio.currentTime;
        const tone = audio.createOscillator();
        const gain = audio.createGain();
        tone.type = 'sine';
        tone.frequency.setValueAtTime(880, t);
        tone.frequency.setValueAtTime(660, t + 0.18);
        gain.gain.setValueAtTime(0.0001, t);
        gain.gain.exponentialRampToValueAtTime(0.25, t + 0.02);
        gain.gain.exponentialRampToValueAtTime(0.0001, t + 0.4);
        tone.connect(gain).connect(audio.destination);
        tone.start(t);
        tone.stop(t + 0.45);
    } catch (error) {
        store.notice('alerts', `the alert sound could not play: ${error.message}`);
    }
}
function unlockAudio() {
    const Context = globalThis.AudioContext || globalThis.webkitAudioContext;
    if (!Context) return;
    try {
        audio = audio || new Context();
        if (audio.state === 'suspended') audio.resume().catch(() => {});
    } catch {
        audio = null;
    }
}
document.addEventListener('pointerdown', unlockAudio, { capture: true, passive: true });
document.addEventListener('keydown', unlockAudio, { capture: true, passive: true });
$('alert-sound').addEventListener('change', (e) => { alerts.sound = e.target.checked; });
document.querySelector('[data-action="ack-all"]').addEventListener('click', () => alerts.ackAll());

// The selection (a device, a fence or an event), shared by the map and the lists. A fence's
// occupants come from the inside query.
let insideTimer = null;
function askInside(key) {
    clearTimeout(insideTimer);
    insideTimer = null;
    actions.insideOf(key).then((answer) => store.setSelectionInside(key, answer));
}
function askInsideSoon(key) {
    if (!insideTimer) insideTimer = setTimeout(() => { insideTimer = null; askInside(key); }, 1000);
}
function select(kind, id, { fromMap = false } = {}) {
    const before = store.selection;
    store.select(kind, id);
    if (kind === 'fence') askInside(id);
    if (kind === 'device' && !(before && before.kind === 'device' && before.id === id)) loadTrack(id);
    else if (kind !== 'device') { clearTimeout(trackTimer); store.setTrack(null); }
    if (fromMap && kind === 'event') lists.scrollToSelected = true;
}
$('selection').querySelector('[data-action="deselect"]').addEventListener('click', () => select(null, null));
document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && !(map && map.drawing) && !e.target?.closest?.('input, textarea, select')) select(null, null);
});

// The selected device's track, from the gateway's memory (the track query), all of it (24 hours),
// then its new positions as the device moves (at most every TRACK_REFRESH_MS).
const TRACK_REFRESH_MS = 5000;
let trackTimer = null;
let trackAsked = 0;
async function loadTrack(device) {
    clearTimeout(trackTimer);
    trackTimer = null;
    const asked = ++trackAsked;
    const t = { device, state: 'loading', track: new Track() };
    store.setTrack(t);
    const { error } = await actions.trackOf(device, null, t.track);
    if (asked !== trackAsked) return;
    store.setTrack({ ...t, state: error ? 'error' : 'ok', error });
}
function refreshTrackSoon(device) {
    if (trackTimer || !store.track || store.track.device !== device || store.track.state !== 'ok') return;
    trackTimer = setTimeout(async () => {
        const t = store.track;
        if (!t || t.device !== device || t.state !== 'ok') { trackTimer = null; return; }
        const asked = trackAsked;
        const since = t.track.length ? t.track.last + 1 : null;
        const { error } = await actions.trackOf(device, since, t.track);
        trackTimer = null;
        if (asked === trackAsked && store.track && store.track.device === device) store.setTrack({ ...store.track, error: error || undefined });
    }, TRACK_REFRESH_MS);
}

const lists = new Lists(document.body, { onFly: (lat, lon) => map && map.flyTo(lat, lon), onSelect: (kind, id) => select(kind, id), alerts, actions, requestRender });
if (map) {
    lists.colourOf = (layer) => map.colour(layer);
    map.onSelect = (kind, id) => select(kind, id, { fromMap: true });
}
// Marks fade with age and leave after an hour; acknowledged alerts leave the panel after one.
setInterval(() => {
    if (map) map.marksDue = true;
    alerts.tick();
    requestRender();
}, 15000);
// For scripts (Tests/Console/console_bench.py times the store and the renders through it).
const replay = new Replay({ store, actions, map, root: $('replay'), requestRender });
window.__console = { store, map, lists, alerts, replay };

// A gateway (re)started: the fences of all of them again, once the retained statuses came in.
store.onGatewayStarted = () => {
    clearTimeout(actions.startTimer);
    actions.startTimer = setTimeout(() => { actions.loadFeatures(); loadHistory(); }, 200);
};
/// The last hour of events from the gateways' journals (the events query), merged with the live
/// ones by id: asked when a gateway (re)starts, so a reload or a restart loses nothing.
async function loadHistory() {
    const { events, error } = await actions.recentEvents();
    store.history(events);
    if (error) store.notice('history', `the last hour of events: ${error}`);
}
store.onRuntimeFenceChange = () => actions.reloadFeaturesSoon();
if (map) map.map.on('moveend', () => actions.viewChanged(map.view()));

client.on('state', ({ state, detail }) => {
    store.setConnection(state, detail);
    if (state === 'refused') {
        const had = client.username;
        sessionStorage.removeItem(credentialsKey(url));
        showLogin(had ? `Login refused by ${url}: ${detail}.` : `The broker ${url} wants a login (${detail}).`);
    }
    if (state === 'connected') {
        $('login').hidden = true;
        // Connected again: the fences, and the events published while the page was cut off.
        if (actions.gateway()) { actions.loadFeatures(); loadHistory(); }
    }
});
client.on('message', ({ topic, payload }) => {
    if (topic === replyTopic) actions.reply(payload);
    else store.handle(topic, payload);
});
client.on('suback', ({ topic, granted }) => {
    if (granted === 0x80) store.notice('subscribe', `the broker refused the subscription to ${topic} (ACL?)`);
});

for (const topic of ['devices/#', 'events/#', 'status/+', 'occupancy/#', 'expect/#', 'fences/#', 'trips/+', 'trips/+/progress', 'trips/+/error']) client.subscribe(`${prefix}/${topic}`, 1);
client.subscribe(replyTopic, 1);

function showLogin(message) {
    $('login-message').textContent = message;
    $('login').hidden = false;
    $('login-username').focus();
}
$('login').addEventListener('submit', (e) => {
    e.preventDefault();
    const username = $('login-username').value;
    const password = $('login-password').value;
    sessionStorage.setItem(credentialsKey(url), JSON.stringify({ broker: url, username, password }));
    client.username = username;
    client.password = password;
    $('login').hidden = true;
    client.connect();
});

// Expected arrivals.
$('expect-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const f = e.target.elements;
    const id = f.id.value.trim() || `console-${Date.now().toString(36)}`;
    const by = new Date(Date.now() + Number(f.minutes.value || 0) * 60000).toISOString().replace(/\.\d+Z$/, 'Z');
    const slash = f.fence.value.indexOf('/');
    if (!validLevel(id) || slash < 1 || !f.device.value) { answer('expected arrival: give a device, a fence as LAYER/ID and an id without / + #'); return; }
    actions.expect(id, f.device.value, f.fence.value.slice(0, slash), f.fence.value.slice(slash + 1), by);
});

// Trips: a device, a route (a line fence, or drawn on the map), an optional destination fence,
// the corridor and the deadline; published retained, cancelled from the trip's row.
const drawnRoutes = new Map(); // "drawn-N" -> LineString
$('trip-form').querySelector('[data-action="draw-route"]').addEventListener('click', () => {
    if (!map) return;
    answer('route: click its positions on the map; double-click the last one');
    map.draw('line', ({ geometry }) => {
        const key = `drawn-${drawnRoutes.size + 1}`;
        drawnRoutes.set(key, geometry);
        const select = $('trip-form').elements.route;
        const option = document.createElement('option');
        option.value = key;
        option.dataset.drawn = 'true';
        option.textContent = `${key} (drawn, ${geometry.coordinates.length} positions)`;
        select.appendChild(option);
        select.value = key;
    });
});
$('trip-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const f = e.target.elements;
    const id = f.id.value.trim() || `console-${Date.now().toString(36)}`;
    if (!validTripId(id)) { answer('trip: an id of letters, digits, _ and - (at most 64)'); return; }
    const route = drawnRoutes.get(f.route.value) || f.route.value;
    const request = tripRequest({ device: f.device.value, route, to: f.to.value, corridor: f.corridor.value, minutes: f.minutes.value });
    if (request.error) { answer(`trip: ${request.error}`); return; }
    actions.publishTrip(id, request);
});

// Runtime fences: drawn on the map, published retained.
for (const button of document.querySelectorAll('[data-draw]')) {
    button.addEventListener('click', () => {
        if (!map) return;
        const f = $('fence-form').elements;
        if (!validLevel(f.layer.value) || !validLevel(f.id.value)) { answer('new fence: give a layer and an id (one topic level each)'); return; }
        answer(button.dataset.draw === 'circle' ? 'click the centre, then a point on the edge' : 'click the corners; double-click the last one');
        map.draw(button.dataset.draw, ({ geometry, buffer }) => {
            actions.publishFence(f.layer.value, f.id.value, f.name.value || f.id.value, geometry, buffer);
        });
    });
}

if (url) {
    $('broker').textContent = `${url} · ${prefix}`;
    client.connect();
} else if (asked && asked.error) {
    store.setConnection('closed', asked.error);
} else {
    store.setConnection('closed', 'opened from a file: serve the console from the broker\'s websockets listener, or add ?broker=ws://HOST:PORT/');
}
