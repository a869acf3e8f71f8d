// The lists beside the map: alerts, the selection, gateways, devices, fences (with occupancy),
// events, expected arrivals and notices. Text from the broker only ever becomes text nodes,
// never HTML. Rows carry data attributes that tests and scripts can read (docs/console.md
// "Data attributes"). A click on a device, fence or event row selects it (the map shows the
// same selection) and flies the map there.

import { describe } from './alerts.js';
import { tripLabel } from './trips.js';

/// An element with attributes and children (strings become text nodes).
export function el(tag, attributes = {}, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attributes)) {
        if (v === undefined || v === null || v === false) continue;
        if (k === 'className') e.className = v;
        else if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
        else e.setAttribute(k, String(v));
    }
    append(e, children);
    return e;
}

function append(e, children) {
    for (const c of children.flat()) {
        if (c === undefined || c === null || c === false) continue;
        e.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
    }
}

/// Keeps container's rows as entries ([key, data] in order): a row per key, re-filled by
/// fill(row, data) only when its data object changed, moved into place, others removed.
export function syncRows(container, entries, fill, tag = 'li') {
    const rows = container._rows || (container._rows = new Map());
    const keep = new Set();
    let at = 0;
    for (const [key, data, stamp] of entries) {
        keep.add(key);
        let row = rows.get(key);
        if (!row) { row = document.createElement(tag); rows.set(key, row); }
        const mark = stamp === undefined ? data : stamp;
        if (row._mark !== mark) {
            row._mark = mark;
            for (const a of [...row.attributes]) row.removeAttribute(a.name);
            row.replaceChildren();
            row._fly = undefined;
            row._select = undefined;
            fill(row, data);
        }
        if (container.children[at] !== row) container.insertBefore(row, container.children[at] || null);
        at++;
    }
    for (const [key, row] of rows) {
        if (!keep.has(key)) { row.remove(); rows.delete(key); }
    }
}

/// Rows past which the devices and fences lists render only the rows their scrolling box shows
/// (and a few around), at a fixed row height (ul.windowed in console.css): 10,000 devices cost
/// the rows in view, not 10,000 rows. Shorter lists are whole, so every row is in the page.
export const WINDOWED_ROWS = 300;
const ROW_HEIGHT = 42;
const OVERSCAN = 10;

/// syncRows for `keys` (in order), entry(key) -> [key, data, stamp]: all of them, or beyond
/// WINDOWED_ROWS the ones in `view` ({top, height}: the scroll position and height of the box
/// the list scrolls in, read before the frame wrote anything, so that reading them forces no
/// layout), with the list's padding standing in for the rows above and below.
export function syncList(container, view, keys, entry, fill) {
    let first = 0, last = keys.length;
    const windowed = keys.length > WINDOWED_ROWS;
    container.classList.toggle('windowed', windowed);
    if (windowed) {
        first = Math.max(0, Math.floor(view.top / ROW_HEIGHT) - OVERSCAN);
        last = Math.min(keys.length, Math.ceil((view.top + (view.height || 400)) / ROW_HEIGHT) + OVERSCAN);
    }
    container.style.paddingTop = windowed ? `${first * ROW_HEIGHT}px` : '';
    container.style.paddingBottom = windowed ? `${(keys.length - last) * ROW_HEIGHT}px` : '';
    const entries = [];
    for (let i = first; i < last; i++) entries.push(entry(keys[i]));
    syncRows(container, entries, fill);
}

function fixed(n) { return typeof n === 'number' ? n.toFixed(7) : ''; }
function clock(iso) {
    if (typeof iso !== 'string') return '';
    const d = new Date(iso);
    return Number.isNaN(d.getTime()) ? iso : d.toISOString().slice(11, 19);
}
function text(v) { return typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v); }

/// The fences ("LAYER/FENCE") the selection highlights: the selected device's (from its retained
/// state's `inside`), or the selected fence.
export function highlightedFences(store) {
    const s = store.selection;
    if (!s) return new Set();
    if (s.kind === 'fence') return new Set([s.id]);
    if (s.kind !== 'device') return new Set();
    const d = store.devices.get(s.id);
    return new Set((d && d.inside ? d.inside : []).map((i) => `${i.layer}/${i.fence}`));
}

/// What the selection panel shows depends on: the selected device's state, or the fence set,
/// its occupancy and the inside answer (an event's details do not change).
function selectionStamp(store) {
    const s = store.selection;
    if (!s) return '';
    if (s.kind === 'device') {
        const d = store.devices.get(s.id);
        return d ? `${d.updated}|${JSON.stringify(d.position)}|${JSON.stringify(d.inside)}` : 'gone';
    }
    if (s.kind === 'fence') return `${store.versions.fences}|${store.versions.occupancy}`;
    return s.id;
}

/// What an event is about, in words: its fence, or its trip (trip events have no fence).
function eventSubject(e) {
    const f = e.fence;
    if (f && typeof f === 'object') return `${text(f.name) || text(f.id)} (${text(f.layer)}/${text(f.id)})`;
    if (e.trip !== undefined) return `trip ${text(e.trip)}`;
    return text(e.trigger);
}

export class Lists {
    /// onFly(lat, lon): fly the map there; onSelect(kind, id): select a device, fence or event
    /// (null: nothing); alerts: the alerts panel's state (alerts.js).
    constructor(root, { onFly, onSelect, alerts, actions, requestRender } = {}) {
        this.root = root;
        this.onFly = onFly || (() => {});
        this.onSelect = onSelect || (() => {});
        this.alerts = alerts || null;
        this.alertsSeen = -1;
        this.actions = actions;
        this.requestRender = requestRender || (() => {});
        this.seen = {};
        this.scrolled = new Set(); // windowed lists scrolled since the last render
        this.views = {};           // list -> {top, height} of its box, read at the start of a render
        this.sorted = { devices: [], devicesAt: -1, fences: [], fencesAt: '' };
        this.parts = {
            connection: root.querySelector('#connection'),
            notices: root.querySelector('#notices'),
            gateways: root.querySelector('#gateways'),
            devices: root.querySelector('#devices'),
            fences: root.querySelector('#fences'),
            // The scrolling boxes around those two.
            boxes: { devices: root.querySelector('#devices-box'), fences: root.querySelector('#fences-box') },
            fencesStatus: root.querySelector('#fences-status'),
            events: root.querySelector('#events'),
            expectations: root.querySelector('#expectations'),
            trips: root.querySelector('#trips'),
            tripForm: root.querySelector('#trip-form'),
            alerts: root.querySelector('#alerts'),
            alertsSection: root.querySelector('#alerts-section'),
            sound: root.querySelector('#alert-sound'),
            selection: root.querySelector('#selection'),
            selectionBody: root.querySelector('#selection-body'),
            counts: {
                alerts: root.querySelector('#count-alerts'),
                devices: root.querySelector('#count-devices'),
                fences: root.querySelector('#count-fences'),
                events: root.querySelector('#count-events'),
                trips: root.querySelector('#count-trips'),
            },
        };
        this.listenForFlights();
        for (const name of ['devices', 'fences']) {
            this.parts.boxes[name].addEventListener('scroll', () => {
                if (!this.parts[name].classList.contains('windowed')) return;
                this.scrolled.add(name);
                this.requestRender();
            }, { passive: true });
        }
    }

    /// One click handler per list (rows are re-filled, so they carry no listeners of their own):
    /// a row selects what it shows (`_select`: [kind, id]) and flies the map there (`_fly`).
    listenForFlights() {
        for (const name of ['devices', 'fences', 'events', 'alerts', 'selectionBody']) {
            this.parts[name]?.addEventListener('click', (e) => {
                const row = e.target.closest('li');
                if (!row || e.target.closest('button')) return;
                if (row._select) this.onSelect(row._select[0], row._select[1]);
                if (row._fly) this.onFly(row._fly[0], row._fly[1]);
            });
        }
    }

    due(store, part) {
        if (this.seen[part] === store.versions[part]) return false;
        this.seen[part] = store.versions[part];
        return true;
    }

    render(store) {
        if (this.due(store, 'connection')) this.connection(store);
        if (this.due(store, 'notices')) this.notices(store);
        if (this.due(store, 'gateways')) this.gateways(store);
        const scrolled = (name) => this.scrolled.delete(name);
        // Layout is read first, before this frame writes to the page.
        for (const name of ['devices', 'fences']) {
            const box = this.parts.boxes[name];
            this.views[name] = { top: box.scrollTop, height: box.clientHeight };
        }
        const selection = this.due(store, 'selection');
        const devices = this.due(store, 'devices');
        const fences = this.due(store, 'fences') | this.due(store, 'occupancy');
        if (devices | selection | scrolled('devices')) this.devices(store);
        // A selected device that moved into or out of a fence changes the highlighted fences.
        const highlighted = store.selection?.kind === 'device' ? [...highlightedFences(store)].join('\n') : '';
        const highlightMoved = highlighted !== this.highlighted;
        this.highlighted = highlighted;
        if (fences | selection | scrolled('fences') || highlightMoved) this.fences(store);
        if (this.due(store, 'events') | selection) this.events(store);
        if (this.due(store, 'expectations')) this.expectations(store);
        if (this.due(store, 'trips')) this.trips(store);
        // The trip form's choices: the devices and the fences (lines for the route).
        if (this.parts.tripForm && (store.versions.deviceSet !== this.tripChoicesAt?.[0] || store.versions.fences !== this.tripChoicesAt?.[1])) {
            this.tripChoicesAt = [store.versions.deviceSet, store.versions.fences];
            this.tripChoices(store);
        }
        if (selection || (store.selection && (devices || fences))) {
            const stamp = selectionStamp(store);
            if (selection || stamp !== this.selectionStamp) this.selection(store);
            this.selectionStamp = stamp;
        }
        if (this.alerts && this.alertsSeen !== this.alerts.version) {
            this.alertsSeen = this.alerts.version;
            this.renderAlerts(store);
        }
    }

    /// The alerts panel: unacknowledged first, each with its acknowledge button.
    renderAlerts(store) {
        const alerts = this.alerts;
        const entries = alerts.list().map((a) => [a.key, a, JSON.stringify([a.acked, a.resolved, a.status, a.raised])]);
        syncRows(this.parts.alerts, entries, (row, a) => {
            row.dataset.alert = a.key;
            row.dataset.acked = String(a.acked);
            row.dataset.resolved = String(a.resolved);
            row.dataset.kind = a.kind;
            row.dataset.type = a.kind === 'gateway' ? a.status : a.type;
            row.className = `alert ${a.acked ? 'alert-acked' : a.resolved ? 'alert-resolved' : 'alert-open'}`;
            const { title, detail } = describe(a);
            append(row, [
                a.acked ? '' : el('button', { type: 'button', 'data-action': 'ack', className: 'ack', onclick: () => alerts.ack(a.key) }, 'acknowledge'),
                el('strong', {}, title),
                detail ? el('div', { className: 'muted' }, detail) : '',
            ]);
            if (a.kind === 'event' && store.eventById(a.key)) row._select = ['event', a.key];
            if (a.position) row._fly = [a.position.lat, a.position.lon];
            if (row._select || row._fly) row.classList.add('clickable');
        });
        this.parts.counts.alerts.textContent = String(alerts.unacknowledged());
        const sound = alerts.sound;
        this.parts.alertsSection.dataset.sound = sound ? 'on' : 'off';
        if (this.parts.sound) this.parts.sound.checked = sound;
    }

    /// What is selected, in detail: a device (the fences it is in, the triggers they are of), a
    /// fence (its triggers, who is inside: the inside query), an event (all it says).
    selection(store) {
        const section = this.parts.selection;
        const body = this.parts.selectionBody;
        const s = store.selection;
        section.hidden = !s;
        section.dataset.kind = s ? s.kind : '';
        section.dataset.id = s ? s.id : '';
        delete section.dataset.inside;
        body.replaceChildren();
        if (!s) return;
        const item = (attributes, select, ...children) => {
            const li = el('li', { ...attributes, className: select ? 'clickable' : undefined }, ...children);
            if (select) li._select = select;
            return li;
        };
        if (s.kind === 'device') {
            const d = store.devices.get(s.id);
            if (!d) { append(body, [el('strong', {}, s.id), el('div', { className: 'muted' }, 'not among the devices (forgotten?)')]); return; }
            const p = d.position;
            const inside = d.inside || [];
            const triggers = [...new Set(inside.map((i) => text(i.trigger)))].sort();
            append(body, [
                el('div', {}, el('strong', {}, d.id), p ? ` · ${p.lat.toFixed(6)}, ${p.lon.toFixed(6)} · ${clock(p.time)}` : ' · no position'),
                el('div', { className: 'muted' }, inside.length ? `in ${inside.length} fence${inside.length === 1 ? '' : 's'}:` : 'in no fence'),
                el('ul', { className: 'rows' }, inside.map((i) => item(
                    { 'data-in-fence': `${text(i.layer)}/${text(i.fence)}`, 'data-trigger': text(i.trigger) },
                    ['fence', `${text(i.layer)}/${text(i.fence)}`],
                    el('strong', {}, text(i.name) || text(i.fence)), ` (${text(i.layer)}/${text(i.fence)}) · ${text(i.trigger)} · since ${clock(i.since)}`))),
                triggers.length ? el('div', {}, 'triggers: ', triggers.flatMap((t, n) => [n ? ', ' : '', el('span', { 'data-watching': t }, t)])) : '',
            ]);
            return;
        }
        if (s.kind === 'fence') {
            const f = store.fences.get(s.id);
            const occupied = [...store.occupancy.values()].filter((o) => `${o.layer}/${o.fence}` === s.id && o.count > 0);
            const answer = store.selectionInside;
            section.dataset.inside = answer ? answer.state : 'asking';
            const inside = answer && Array.isArray(answer.inside) ? answer.inside : [];
            const more = answer && Number.isInteger(answer.count) && answer.count > inside.length ? answer.count - inside.length : 0;
            append(body, [
                el('div', {}, el('strong', {}, (f && f.name) || s.id), ' ', el('span', { className: 'muted' }, s.id), f && f.buffer ? ` · buffer ${f.buffer} m` : ''),
                f && f.triggers.length ? el('div', {}, 'triggers: ', f.triggers.flatMap((t, n) => [n ? ', ' : '', el('span', { 'data-watching': text(t) }, text(t))])) : el('div', { className: 'muted' }, f ? 'no trigger watches it' : 'not among the fences loaded'),
                occupied.length ? el('div', {}, occupied.map((o) => `${o.trigger}: ${o.count} inside`).join(' · ')) : '',
                el('div', { className: 'muted' }, !answer || answer.state === 'asking' ? 'who is inside: asking…' : answer.state === 'error' ? `who is inside: ${answer.error}` : inside.length ? 'inside (the inside query):' : 'inside: nobody'),
                el('ul', { className: 'rows' }, inside.map((i) => item({ 'data-inside-device': text(i.device), 'data-trigger': text(i.trigger) }, ['device', text(i.device)],
                    el('strong', {}, text(i.device)), ` · ${text(i.trigger)} · since ${clock(i.since)}`))),
                more ? el('div', { className: 'muted' }, `and ${more} more`) : '',
            ]);
            return;
        }
        const e = store.eventById(s.id);
        if (!e) { append(body, [el('div', { className: 'muted' }, `event ${s.id}: no longer held by the page`)]); return; }
        const p = e.position;
        const line = (label, value) => (value === undefined || value === null || value === '' ? '' : el('div', {}, el('span', { className: 'muted' }, `${label} `), text(value)));
        append(body, [
            el('div', {}, el('span', { className: `type type-${e.type}` }, e.type), ' ', el('strong', {}, text(e.device)), ' ', eventSubject(e)),
            line('time', p && p.time), line('decided', e.emitted),
            p ? line('at', `${p.lat.toFixed(6)}, ${p.lon.toFixed(6)}${typeof p.accuracy === 'number' ? ` ±${Math.round(p.accuracy)} m` : ''}`) : line('at', 'no position'),
            line('trigger', e.trigger), line('reason', e.reason), line('distance', typeof e.distance === 'number' ? `${e.distance} m` : undefined),
            line('dwell', typeof e.dwellSeconds === 'number' ? `${e.dwellSeconds} s` : undefined), line('message', e.message), line('id', e.id),
        ]);
    }

    connection(store) {
        const c = this.parts.connection;
        c.dataset.state = store.connection.state;
        c.replaceChildren(`${store.connection.state}${store.connection.detail ? `: ${store.connection.detail}` : ''}`);
    }

    notices(store) {
        const list = store.notices.slice().reverse().map((n, i) => [`${store.notices.length - i}`, n]);
        syncRows(this.parts.notices, list, (row, n) => {
            row.dataset.notice = n.kind;
            append(row, [el('time', {}, n.time.toISOString().slice(11, 19)), ' ', n.text]);
        });
    }

    gateways(store) {
        const entries = [...store.gateways.values()].sort((a, b) => a.id.localeCompare(b.id)).map((g) => [g.id, g]);
        syncRows(this.parts.gateways, entries, (row, g) => {
            row.dataset.gateway = g.id;
            row.dataset.status = g.status;
            const c = g.counters && typeof g.counters === 'object' ? g.counters : {};
            append(row, [
                el('strong', {}, g.id), ' ', el('span', { className: `status status-${g.status}` }, g.status),
                g.version ? ` · ${text(g.version)}` : '',
                g.since ? ` · since ${clock(g.since)}` : '',
                c.received !== undefined ? el('div', { className: 'muted' }, `${c.received} received · ${c.accepted} accepted · ${c.events} events · ${c.devices} devices`) : '',
                Array.isArray(g.warnings) && g.warnings.length ? el('ul', { className: 'warnings' }, g.warnings.map((w) => el('li', {}, text(w)))) : '',
            ]);
        });
    }

    devices(store) {
        if (this.sorted.devicesAt !== store.versions.deviceSet) {
            this.sorted.devicesAt = store.versions.deviceSet;
            this.sorted.devices = [...store.devices.keys()].sort();
        }
        const selectedId = store.selection && store.selection.kind === 'device' ? store.selection.id : null;
        // While the slider replays, a row shows where the device was then (replay.js deviceAt).
        const replay = store.replay;
        const entry = (id) => {
            const d = store.devices.get(id);
            const selected = selectedId === id;
            if (replay) {
                const at = replay.deviceAt(id);
                return [id, { d, at }, `${selected ? 'S|' : ''}R|${at.state}|${at.lat}|${at.lon}|${at.time}`];
            }
            return [id, { d }, (selected ? 'S|' : '') + d.updated + '|' + d.trail.length + '|' + JSON.stringify(d.position) + JSON.stringify(d.inside)];
        };
        syncList(this.parts.devices, this.views.devices, this.sorted.devices, entry, (row, { d, at }) => {
            row.dataset.device = d.id;
            if (d.id === selectedId) row.dataset.selected = 'true';
            row._select = ['device', d.id];
            row.className = 'clickable';
            if (at) {
                row.dataset.replayed = at.state;
                const was = at.state === 'at' || at.state === 'still';
                const when = Number.isFinite(at.time) ? new Date(at.time).toISOString() : '';
                if (was) {
                    row.dataset.lat = fixed(at.lat);
                    row.dataset.lon = fixed(at.lon);
                    if (when) row.dataset.time = when;
                    row._fly = [at.lat, at.lon];
                }
                append(row, [
                    el('div', {}, el('strong', {}, d.id)),
                    el('div', { className: 'muted' }, was ? `${at.lat.toFixed(6)}, ${at.lon.toFixed(6)} · ${clock(when)}${at.state === 'still' ? ' (no move in the hour)' : ''}`
                        : { none: 'no position yet', loading: 'asking for its track…', error: 'its track could not be had', out: 'not replayed (out of view)' }[at.state]),
                ]);
                return;
            }
            const p = d.position;
            if (p) {
                row.dataset.lat = fixed(p.lat);
                row.dataset.lon = fixed(p.lon);
                row._fly = [p.lat, p.lon];
            }
            const inside = d.inside.map((i) => text(i.name) || `${text(i.layer)}/${text(i.fence)}`);
            append(row, [
                el('div', {}, el('strong', {}, d.id), inside.length ? ` · in ${inside.join(', ')}` : ''),
                el('div', { className: 'muted' }, p ? `${p.lat.toFixed(6)}, ${p.lon.toFixed(6)}${typeof p.accuracy === 'number' ? ` ±${Math.round(p.accuracy)} m` : ''} · ${clock(p.time)}` : 'no position'),
            ]);
        });
        this.parts.counts.devices.textContent = String(store.devices.size);
    }

    fences(store) {
        const byFence = new Map(); // "LAYER/FENCE" -> [occupancy]
        for (const [key, o] of store.occupancy) {
            const f = `${o.layer}/${o.fence}`;
            if (!byFence.has(f)) byFence.set(f, []);
            byFence.get(f).push([key, o]);
        }
        // Sorted again only when the fence set or the occupied fences changed.
        const set = `${store.versions.fences}|${[...byFence.keys()].join('\n')}`;
        if (this.sorted.fencesAt !== set) {
            this.sorted.fencesAt = set;
            this.sorted.fences = [...new Set([...store.fences.keys(), ...byFence.keys()])].sort();
        }
        const keys = this.sorted.fences;
        const highlighted = highlightedFences(store);
        const selectedKey = store.selection && store.selection.kind === 'fence' ? store.selection.id : null;
        const entry = (k) => [k, { key: k, fence: store.fences.get(k), occupancy: byFence.get(k) || [] }, JSON.stringify([store.fences.get(k) ? 1 : 0, store.runtimeFences.has(k), (byFence.get(k) || []).map(([, o]) => [o.count, o.devices]), highlighted.has(k), k === selectedKey])];
        syncList(this.parts.fences, this.views.fences, keys, entry, (row, { key, fence, occupancy }) => {
            row.dataset.fence = key;
            if (highlighted.has(key)) row.dataset.highlighted = 'true';
            if (key === selectedKey) row.dataset.selected = 'true';
            row._select = ['fence', key];
            row.className = 'clickable';
            const name = fence ? fence.name : (occupancy[0] && occupancy[0][1].name) || '';
            append(row, [
                // First, so that it floats right of the name.
                this.actions ? el('div', { className: 'row-actions' },
                    el('button', { type: 'button', 'data-action': 'inside', onclick: () => this.actions.inside(key) }, 'who is inside'),
                    store.runtimeFences.has(key) ? el('button', { type: 'button', 'data-action': 'delete', onclick: () => this.actions.deleteFence(key) }, 'delete') : '') : '',
                el('span', { className: 'swatch', style: `background:${this.colourOf ? this.colourOf(key.split('/')[0]) : '#888'}` }),
                el('strong', {}, name || key), ' ', el('span', { className: 'muted' }, key),
                fence && fence.buffer ? el('span', { className: 'muted' }, ` · buffer ${fence.buffer} m`) : '',
                el('div', {}, occupancy.filter(([, o]) => o.count > 0).flatMap(([k, o], i) => [i ? ' · ' : '', el('span', { 'data-occupancy': k, 'data-count': o.count, className: 'occupancy' },
                    `${o.trigger}: ${o.count} inside`, Array.isArray(o.devices) && o.devices.length ? ` (${o.devices.map(text).join(', ')})` : '')])),
            ]);
            const c = fence && centre(fence.geometry);
            if (c) row._fly = c;
        });
        this.parts.counts.fences.textContent = String(keys.length);
        const s = store.featuresStatus;
        this.parts.fencesStatus.dataset.state = s.state;
        this.parts.fencesStatus.textContent = s.state === 'none' ? 'fences come from a started gateway (features query)…' : s.text;
    }

    events(store) {
        const selectedId = store.selection && store.selection.kind === 'event' ? store.selection.id : null;
        // While the slider replays: the events of fix time up to its time.
        const events = store.replay ? store.replay.events() : store.events;
        const entries = events.map((e) => [e.id, e, e.id === selectedId ? 'selected' : e]);
        let selectedRow = null;
        syncRows(this.parts.events, entries, (row, e) => {
            row.dataset.event = e.id;
            row.dataset.type = e.type;
            row.className = 'clickable';
            row._select = ['event', e.id];
            if (e.id === selectedId) { row.dataset.selected = 'true'; selectedRow = row; }
            const p = e.position;
            if (p && typeof p.lat === 'number') row._fly = [p.lat, p.lon];
            append(row, [
                el('time', {}, clock(p && p.time) || clock(e.emitted)), ' ',
                el('span', { className: `type type-${e.type}` }, e.type), ' ',
                el('strong', {}, text(e.device)), ' ',
                eventSubject(e),
                e.inferred ? ' · inferred' : '',
                e.message !== undefined ? el('div', { className: 'muted' }, text(e.message)) : '',
            ]);
        });
        this.parts.counts.events.textContent = String(events.length);
        // Selected on the map: the row scrolls into the list's view.
        if (selectedRow && this.scrollToSelected) {
            this.scrollToSelected = false;
            const list = this.parts.events;
            const r = selectedRow.getBoundingClientRect(), b = list.getBoundingClientRect();
            if (r.top < b.top || r.bottom > b.bottom) list.scrollTop += r.top - b.top - b.height / 3;
        }
    }

    /// One row per trip: `data-trip`, `data-state`, `data-along`, `data-eta` from its progress,
    /// `data-open`, `data-error` when rejected; a cancel button while it is open.
    trips(store) {
        const entries = [...store.trips.values()].sort((a, b) => a.id.localeCompare(b.id)).map((t) => [t.id, t, JSON.stringify([t.open, t.progress, t.error, t.request])]);
        if (this.parts.counts.trips) this.parts.counts.trips.textContent = String([...store.trips.values()].filter((t) => t.open).length);
        syncRows(this.parts.trips, entries, (row, t) => {
            const p = t.progress || {};
            row.dataset.trip = t.id;
            row.dataset.state = typeof p.state === 'string' ? p.state : 'requested';
            row.dataset.open = String(!!t.open);
            if (typeof p.along === 'number') row.dataset.along = String(p.along);
            if (typeof p.eta === 'string') row.dataset.eta = p.eta;
            if (t.error) row.dataset.error = t.error;
            const r = t.request || {};
            const route = r.route && typeof r.route === 'object' ? (typeof r.route.layer === 'string' ? `${text(r.route.layer)}/${text(r.route.fence)}` : 'a drawn route') : '';
            const to = r.to && typeof r.to === 'object' ? ` → ${text(r.to.layer)}/${text(r.to.fence)}` : '';
            append(row, [
                el('strong', {}, tripLabel(t.id, t.progress)), ' ',
                t.request ? `${text(r.device)} on ${route}${to}${r.by ? ` by ${text(r.by)}` : ''}` : text(p.device),
                typeof p.along === 'number' ? el('div', { className: 'muted' }, `along ${Math.round(p.along)} m${typeof p.offBy === 'number' ? `, ${Math.round(p.offBy)} m off` : ''}${typeof p.speed === 'number' ? `, ${p.speed} m/s` : ''}`) : '',
                t.error ? el('div', { className: 'error' }, `rejected: ${t.error}`) : '',
                t.open && this.actions ? el('button', { type: 'button', 'data-action': 'cancel-trip', onclick: () => this.actions.cancelTrip(t.id) }, 'cancel') : '',
            ]);
        });
    }

    /// The trip form's selects, keeping what is chosen: devices, line fences, all fences.
    tripChoices(store) {
        const f = this.parts.tripForm.elements;
        const fill = (select, values, first) => {
            const chosen = select.value;
            const drawn = [...select.options].filter((o) => o.dataset.drawn);
            select.replaceChildren(el('option', { value: '' }, first), ...drawn, ...values.map((v) => el('option', { value: v }, v)));
            select.value = [...select.options].some((o) => o.value === chosen) ? chosen : '';
        };
        const fences = [...store.fences.entries()].sort((a, b) => a[0].localeCompare(b[0]));
        fill(f.device, [...store.devices.keys()].sort(), 'device…');
        fill(f.route, fences.filter(([, x]) => x.geometry && x.geometry.type === 'LineString').map(([k]) => k), 'route…');
        fill(f.to, fences.map(([k]) => k), 'to: route\'s end');
    }

    expectations(store) {
        const entries = [...store.expectations.values()].sort((a, b) => a.id.localeCompare(b.id)).map((x) => [x.id, x, JSON.stringify([x.open, x.result, x.error, x.request])]);
        syncRows(this.parts.expectations, entries, (row, x) => {
            row.dataset.expectation = x.id;
            if (x.result) row.dataset.result = x.result.result;
            const r = x.request || {};
            append(row, [
                el('strong', {}, x.id), ' ',
                `${text(r.device)} → ${text(r.layer)}/${text(r.fence)} by ${text(r.by)}`,
                x.result ? el('div', { className: `result result-${x.result.result}` }, x.result.result, typeof x.result.early === 'number' ? ` ${Math.round(x.result.early)} s early` : '') : '',
                x.error ? el('div', { className: 'error' }, `rejected: ${x.error}`) : '',
                !x.result && !x.open && !x.error ? el('div', { className: 'muted' }, 'cleared') : '',
                x.open && !x.result && this.actions ? el('button', { type: 'button', 'data-action': 'cancel', onclick: () => this.actions.cancelExpectation(x.id) }, 'cancel') : '',
            ]);
        });
    }
}

/// A point to fly to for a geometry: the middle of its first ring, line or point.
export function centre(g) {
    const first = (c) => (typeof c[0] === 'number' ? c : first(c[0]));
    try {
        if (g.type === 'Point') return [g.coordinates[1], g.coordinates[0]];
        let ring = g.type === 'Polygon' ? g.coordinates[0] : g.type === 'MultiPolygon' ? g.coordinates[0][0] : g.type === 'LineString' ? g.coordinates : g.type === 'MultiLineString' ? g.coordinates[0] : null;
        if (!ring) { const c = first(g.coordinates); return [c[1], c[0]]; }
        let lat = 0, lon = 0;
        for (const c of ring) { lat += c[1]; lon += c[0]; }
        return [lat / ring.length, lon / ring.length];
    } catch {
        return null;
    }
}
