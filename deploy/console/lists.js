// The lists beside the map: gateways, devices, fences (with occupancy), events, expected
// arrivals and notices. Text from the broker only ever becomes text nodes, never HTML. Rows
// carry data attributes that tests and scripts can read (docs/console.md "Data attributes").

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

/// What an event is about, in words: its fence, or its trip (trip events have no fence).
function eventSubject(e) {
    const f = e.fence;
    if (f && typeof f === 'object') return `${text(f.name) || text(f.id)} (${text(f.layer)}/${text(f.id)})`;
    if (e.trip !== undefined) return `trip ${text(e.trip)}`;
    return text(e.trigger);
}

export class Lists {
    constructor(root, { onFly, actions, requestRender } = {}) {
        this.root = root;
        this.onFly = onFly || (() => {});
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
            counts: {
                devices: root.querySelector('#count-devices'),
                fences: root.querySelector('#count-fences'),
                events: root.querySelector('#count-events'),
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

    /// One click handler per list (rows are re-filled, so they carry no listeners of their own).
    listenForFlights() {
        for (const name of ['devices', 'fences', 'events']) {
            this.parts[name].addEventListener('click', (e) => {
                const row = e.target.closest('li');
                if (row && row._fly && !e.target.closest('button')) this.onFly(row._fly[0], row._fly[1]);
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
        if (this.due(store, 'devices') | scrolled('devices')) this.devices(store);
        if (this.due(store, 'fences') | this.due(store, 'occupancy') | scrolled('fences')) this.fences(store);
        if (this.due(store, 'events')) this.events(store);
        if (this.due(store, 'expectations')) this.expectations(store);
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
        const entry = (id) => {
            const d = store.devices.get(id);
            return [id, d, d.updated + '|' + d.trail.length + '|' + JSON.stringify(d.position) + JSON.stringify(d.inside)];
        };
        syncList(this.parts.devices, this.views.devices, this.sorted.devices, entry, (row, d) => {
            row.dataset.device = d.id;
            const p = d.position;
            if (p) {
                row.dataset.lat = fixed(p.lat);
                row.dataset.lon = fixed(p.lon);
                row._fly = [p.lat, p.lon];
                row.className = 'clickable';
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
        const entry = (k) => [k, { key: k, fence: store.fences.get(k), occupancy: byFence.get(k) || [] }, JSON.stringify([store.fences.get(k) ? 1 : 0, store.runtimeFences.has(k), (byFence.get(k) || []).map(([, o]) => [o.count, o.devices])])];
        syncList(this.parts.fences, this.views.fences, keys, entry, (row, { key, fence, occupancy }) => {
            row.dataset.fence = key;
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
            if (c) { row.className = 'clickable'; row._fly = c; }
        });
        this.parts.counts.fences.textContent = String(keys.length);
        const s = store.featuresStatus;
        this.parts.fencesStatus.dataset.state = s.state;
        this.parts.fencesStatus.textContent = s.state === 'none' ? 'fences come from a started gateway (features query)…' : s.text;
    }

    events(store) {
        const entries = store.events.map((e) => [e.id, e]);
        syncRows(this.parts.events, entries, (row, e) => {
            row.dataset.event = e.id;
            row.dataset.type = e.type;
            row.className = 'clickable';
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
        this.parts.counts.events.textContent = String(store.events.length);
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
