// The map: fences (buffers drawn), event marks, devices (accuracy circle, trail) on Leaflet's
// canvas renderer, no basemap unless ?tiles= names one. Leaflet is the global L of
// leaflet/leaflet.js. Fences, events and devices have a canvas each: a device that moves
// repaints the devices' canvas only (devices-layer.js draws them all in a few paths), and only
// the devices and fences that changed are touched in a frame. A click selects the device or
// event mark under it (the nearest within a few pixels), else the fence; the selection is the
// store's, shared with the lists: a selected device's fences (its retained `inside`) and a
// selected fence are drawn highlighted, a selected event's mark is ringed with its details in
// a popup.

import { DeviceLayer, metresPerPixel } from './devices-layer.js';
import { EventLayer } from './events-layer.js';
import { visibleMarks } from './event-marks.js';
import { syncRows, highlightedFences } from './lists.js';
import { routeCoordinates, splitRoute, tripLabel } from './trips.js';

const L = globalThis.L;
const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22'];


function round7(x) { return Math.round(x * 1e7) / 1e7; }

/// "LAYER/FENCE" -> devices inside, over every trigger.
function occupiedCounts(store) {
    const counts = new Map();
    for (const o of store.occupancy.values()) {
        const key = `${o.layer}/${o.fence}`;
        counts.set(key, (counts.get(key) || 0) + o.count);
    }
    return counts;
}

/// A DOM element holding text only (tooltips get elements, never HTML strings).
function textElement(lines) {
    const div = document.createElement('div');
    lines.forEach((line, i) => {
        if (i) div.appendChild(document.createElement('br'));
        div.appendChild(document.createTextNode(line));
    });
    return div;
}

export class MapView {
    constructor(element, { tiles } = {}) {
        this.renderer = L.canvas({ padding: 0.5 });
        this.map = L.map(element, { preferCanvas: true, renderer: this.renderer, zoomControl: true, attributionControl: !!tiles });
        // Above the fences' overlay pane (400), below tooltips (650); events under devices.
        this.map.createPane('events').style.zIndex = 440;
        this.map.createPane('devices').style.zIndex = 450;
        // What the map draws on its canvases, mirrored as hidden elements for scripts and tests.
        const mirror = document.createElement('div');
        mirror.className = 'map-mirror';
        mirror.hidden = true;
        this.markList = mirror.appendChild(document.createElement('ul'));
        this.markList.className = 'event-marks';
        this.highlightList = mirror.appendChild(document.createElement('ul'));
        this.highlightList.className = 'highlighted-fences';
        this.tripList = mirror.appendChild(document.createElement('ul'));
        this.tripList.className = 'trip-marks';
        this.trackList = mirror.appendChild(document.createElement('ul'));
        this.trackList.className = 'track';
        element.appendChild(mirror);
        this.eventLayer = new EventLayer(this.map, { pane: 'events', list: this.markList });
        this.deviceLayer = new DeviceLayer(this.map, { pane: 'devices' });
        this.map.setView([20, 0], 2);
        L.control.scale({ imperial: false }).addTo(this.map);
        if (tiles) L.tileLayer(tiles, { maxZoom: 20 }).addTo(this.map);
        this.fenceLayer = L.layerGroup().addTo(this.map);
        // Open trips: on the fences' canvas, below the events and devices.
        this.tripLayer = L.layerGroup().addTo(this.map);
        this.tripCorridors = [];   // {layer, buffer, lat}: trip corridors, re-widened at each zoom
        this.corridors = [];       // {layer, buffer, lat}: line buffers, re-widened at each zoom
        this.fences = new Map();   // "LAYER/ID" -> Leaflet group drawn for it
        this.layerColours = new Map();
        this.seen = { fences: -1, occupancy: -1, marks: -1, selection: -1, trips: -1, tripFences: -1, track: -1 };
        // The selected device's track (the track query), on the fences' canvas.
        this.trackLine = L.polyline([], { color: '#ff6f00', weight: 3, opacity: 0.85, lineJoin: 'round', renderer: this.renderer, interactive: false }).addTo(this.map);
        this.onMoved = null;        // the time slider's: the view moved while replaying
        this.map.on('moveend', () => { if (this.onMoved) this.onMoved(); });
        this.marksDue = false;      // fading: the marks are computed again at the next render
        this.highlighted = new Set(); // "LAYER/FENCE" drawn highlighted
        this.onSelect = () => {};   // (kind, id): a click picked a device, event or fence (null: nothing)
        this.popup = null;
        // The pointer's own point (Leaflet gives a small circle's centre as a click's point on it).
        this.map.on('click', (e) => this.clicked(this.map.mouseEventToContainerPoint(e.originalEvent), null));
        this.fitted = false;        // once to the fences
        this.fittedDevices = false; // once to the devices while no fence is known
        this.map.on('zoomend', () => this.widenCorridors());
    }

    colour(layer) {
        if (!this.layerColours.has(layer)) this.layerColours.set(layer, PALETTE[this.layerColours.size % PALETTE.length]);
        return this.layerColours.get(layer);
    }

    /// The view and half its size around it, as a features query's bbox [west, south, east,
    /// north] (west > east across the antimeridian); null when it spans the whole world.
    view() {
        const b = this.map.getBounds().pad(0.5);
        if (b.getEast() - b.getWest() >= 360) return null;
        const wrap = (lon) => (lon >= -180 && lon <= 180 ? lon : ((((lon + 180) % 360) + 360) % 360) - 180);
        const clamp = (lat) => Math.max(-90, Math.min(90, lat));
        return [wrap(b.getWest()), clamp(b.getSouth()), wrap(b.getEast()), clamp(b.getNorth())];
    }

    flyTo(lat, lon) {
        this.map.flyTo([lat, lon], Math.max(this.map.getZoom(), 17), { duration: 0.8 });
    }

    /// Redraws what changed since the last frame: `changed` holds the device ids and the
    /// "LAYER/FENCE" keys of occupancy the app took from the store (store.takeChanged).
    render(store, changed) {
        const selection = store.versions.selection !== this.seen.selection;
        this.seen.selection = store.versions.selection;
        const s = store.selection;
        const highlight = selection || (s && s.kind === 'device' && changed.devices.has(s.id)) ? highlightedFences(store) : null;
        if (highlight && !sameSet(highlight, this.highlighted)) {
            const before = this.highlighted;
            this.highlighted = highlight;
            if (store.versions.fences === this.seen.fences) {
                const counts = occupiedCounts(store);
                for (const key of new Set([...before, ...highlight])) this.drawFence(store, key, counts.get(key) || 0);
                this.mirrorHighlights();
            }
        }
        if (store.versions.fences !== this.seen.fences) {
            this.seen.fences = store.versions.fences;
            this.seen.occupancy = store.versions.occupancy;
            this.drawFences(store);
        } else if (store.versions.occupancy !== this.seen.occupancy) {
            this.seen.occupancy = store.versions.occupancy;
            const counts = occupiedCounts(store);
            for (const key of changed.occupancy) this.drawFence(store, key, counts.get(key) || 0);
        }
        // While the slider replays, the devices are where it puts them (replay.js).
        if (changed.devices.size && !store.replay) this.drawDevices(store, changed.devices);
        if (store.versions.track !== this.seen.track) {
            this.seen.track = store.versions.track;
            this.drawTrack(store.track);
        }
        if (store.versions.trips !== this.seen.trips || store.versions.fences !== this.seen.tripFences) {
            this.seen.trips = store.versions.trips;
            this.seen.tripFences = store.versions.fences;
            this.drawTrips(store);
        }
        if (store.versions.marks !== this.seen.marks || this.marksDue) {
            this.seen.marks = store.versions.marks;
            this.marksDue = false;
            this.eventLayer.set(store.replay ? store.replay.marks() : visibleMarks(store.marks, Date.now(), (e) => store.received.get(e)));
        }
        if (selection) this.showSelection(store);
    }

    /// The selection on the map: the device ringed, the event's mark ringed with a popup.
    showSelection(store) {
        const s = store.selection;
        this.deviceLayer.select(s && s.kind === 'device' ? s.id : null);
        this.eventLayer.select(s && s.kind === 'event' ? s.id : null);
        const e = s && s.kind === 'event' ? store.eventById(s.id) : null;
        if (this.popup) {
            const popup = this.popup;
            this.popup = null;
            this.map.closePopup(popup);
        }
        const p = e && e.position;
        if (!p || typeof p.lat !== 'number') return;
        const subject = e.fence && typeof e.fence === 'object' ? `${e.fence.name || e.fence.id} (${e.fence.layer}/${e.fence.id})` : e.trip !== undefined ? `trip ${e.trip}` : '';
        const lines = [`${e.type} · ${e.device}`, subject, `${p.time || e.emitted || ''}`, `${p.lat.toFixed(6)}, ${p.lon.toFixed(6)}${typeof p.accuracy === 'number' ? ` ±${Math.round(p.accuracy)} m` : ''}`];
        if (e.message !== undefined) lines.push(typeof e.message === 'string' ? e.message : JSON.stringify(e.message));
        const popup = L.popup({ autoPan: false, className: 'event-popup', offset: [0, -8] }).setLatLng([p.lat, p.lon]).setContent(textElement(lines.filter(Boolean).map(String)));
        this.popup = popup;
        popup.openOn(this.map);
        // Closed by the dispatcher (its x): the event is no longer selected.
        popup.on('remove', () => { if (this.popup === popup) { this.popup = null; this.onSelect(null, null); } });
    }

    /// A click at a container point (on a fence: `fence` is its key): the nearest device or event
    /// mark within a few pixels, else the fence, else nothing is selected.
    clicked(point, fence) {
        if (this.drawing) return;
        const device = this.deviceLayer.pick(point);
        const mark = this.eventLayer.pick(point);
        if (device && (!mark || device.distance <= mark.distance)) this.onSelect('device', device.id);
        else if (mark) this.onSelect('event', mark.id);
        else if (fence) this.onSelect('fence', fence);
        else this.onSelect(null, null);
    }

    /// The fences drawn highlighted, as hidden elements: <li data-highlighted-fence="LAYER/FENCE">.
    mirrorHighlights() {
        const drawn = [...this.highlighted].filter((key) => this.fences.has(key)).sort();
        syncRows(this.highlightList, drawn.map((key) => [key, key]), (row, key) => { row.dataset.highlightedFence = key; });
    }

    /// Every fence again (a new fence set).
    drawFences(store) {
        this.fenceLayer.clearLayers();
        this.fences.clear();
        this.corridors = [];
        const counts = occupiedCounts(store);
        const sortedLayers = [...new Set([...store.fences.values()].map((f) => f.layer))].sort();
        sortedLayers.forEach((layer) => this.colour(layer));
        let bounds = null;
        for (const key of store.fences.keys()) {
            const layer = this.drawFence(store, key, counts.get(key) || 0);
            const b = layer && layer.getBounds ? layer.getBounds() : null;
            if (b && b.isValid()) bounds = bounds ? bounds.extend(b) : L.latLngBounds(b.getSouthWest(), b.getNorthEast());
        }
        this.widenCorridors();
        this.mirrorHighlights();
        if (!this.fitted && bounds) {
            this.fitted = true;
            this.map.fitBounds(bounds, { padding: [20, 20] });
        }
    }

    /// One fence, drawn anew with its occupancy `count` (its old drawing removed).
    drawFence(store, key, count) {
        const old = this.fences.get(key);
        if (old) {
            this.fenceLayer.removeLayer(old);
            this.corridors = this.corridors.filter((c) => c.fence !== key);
            this.fences.delete(key);
        }
        const fence = store.fences.get(key);
        if (!fence) return null;
        const layer = this.fenceShape(fence, this.colour(fence.layer), count, key, this.highlighted.has(key));
        if (!layer) return null;
        layer.on('click', (e) => this.clicked(this.map.mouseEventToContainerPoint(e.originalEvent), key));
        // Occupied fences wear their count; names show on hover (and in the list).
        if (count > 0) layer.bindTooltip(textElement([String(count)]), { permanent: true, direction: 'center', className: 'occupancy-badge' });
        else layer.bindTooltip(textElement([fence.name || fence.id, key]), { direction: 'top', className: 'fence-tooltip' });
        layer.addTo(this.fenceLayer);
        this.fences.set(key, layer);
        if (old) this.widenCorridors();
        return layer;
    }

    /// One fence as Leaflet layers: polygons as they are (a buffer as a band around them),
    /// points as circles of their buffer, lines as corridors of their buffer.
    fenceShape(fence, colour, count, key, highlighted = false) {
        const g = fence.geometry;
        const group = L.featureGroup();
        const fill = highlighted
            ? { color: '#ff6f00', weight: 4, fillColor: colour, fillOpacity: 0.45, renderer: this.renderer }
            : { color: colour, weight: count ? 3 : 1.5, fillColor: colour, fillOpacity: count ? 0.35 : 0.15, renderer: this.renderer };
        const buffer = fence.buffer || 0;
        const ll = (c) => [c[1], c[0]];
        const points = g.type === 'Point' ? [g.coordinates] : g.type === 'MultiPoint' ? g.coordinates : [];
        const lines = g.type === 'LineString' ? [g.coordinates] : g.type === 'MultiLineString' ? g.coordinates : [];
        const polygons = g.type === 'Polygon' ? [g.coordinates] : g.type === 'MultiPolygon' ? g.coordinates : [];
        try {
            for (const p of points) {
                L.circle(ll(p), { ...fill, radius: Math.max(buffer, 0.5) }).addTo(group);
            }
            for (const line of lines) {
                const latlngs = line.map(ll);
                if (buffer > 0) {
                    const corridor = L.polyline(latlngs, { color: colour, opacity: count ? 0.45 : 0.25, lineCap: 'round', lineJoin: 'round', renderer: this.renderer, interactive: true });
                    corridor.addTo(group);
                    this.corridors.push({ fence: key, layer: corridor, buffer, lat: latlngs[0][0] });
                }
                L.polyline(latlngs, { color: highlighted ? '#ff6f00' : colour, weight: highlighted ? 4 : 1.5, renderer: this.renderer }).addTo(group);
            }
            for (const rings of polygons) {
                const latlngs = rings.map((ring) => ring.map(ll));
                if (buffer > 0) {
                    const band = L.polygon(latlngs, { color: colour, opacity: 0.2, fill: false, lineJoin: 'round', renderer: this.renderer });
                    band.addTo(group);
                    this.corridors.push({ fence: key, layer: band, buffer, lat: latlngs[0][0][0] });
                }
                L.polygon(latlngs, fill).addTo(group);
            }
        } catch {
            return null;
        }
        return group.getLayers().length ? group : null;
    }

    /// Every open trip again: its corridor (a translucent band: a stroke 2 x corridor metres
    /// wide at this zoom, as a line fence's buffer), the route ahead (dashed), the part driven
    /// (solid, thick), and where `along` puts the device, with a label of its state and ETA.
    drawTrips(store) {
        this.tripLayer.clearLayers();
        this.tripCorridors = [];
        const ll = (c) => [c[1], c[0]];
        const drawn = []; // [id, {id, at, state, corridor}] for the mirror
        for (const t of [...store.trips.values()].sort((a, b) => a.id.localeCompare(b.id))) {
            if (!t.open || !t.request) continue;
            const line = routeCoordinates(t.request, store.fences);
            if (!line) continue;
            const corridor = typeof t.request.corridor === 'number' && t.request.corridor > 0 ? t.request.corridor : 50;
            const state = t.progress ? t.progress.state : 'requested';
            const colour = state === 'offRoute' ? '#d62728' : state === 'onRoute' ? '#2ca02c' : '#1f77b4';
            const options = { renderer: this.renderer, interactive: false, lineCap: 'round', lineJoin: 'round' };
            const band = L.polyline(line.map(ll), { ...options, color: colour, opacity: 0.18 }).addTo(this.tripLayer);
            this.tripCorridors.push({ layer: band, buffer: corridor, lat: line[0][1] });
            const { driven, ahead, at } = splitRoute(line, t.progress ? t.progress.along : 0);
            if (ahead.length > 1) L.polyline(ahead.map(ll), { ...options, color: colour, weight: 3, dashArray: '8 6' }).addTo(this.tripLayer);
            if (driven.length > 1) L.polyline(driven.map(ll), { ...options, color: '#333', weight: 5, opacity: 0.8 }).addTo(this.tripLayer);
            L.circleMarker(ll(at), { ...options, radius: 6, color: '#333', weight: 2, fillColor: colour, fillOpacity: 1 })
                .bindTooltip(textElement([tripLabel(t.id, t.progress), t.request.device ? String(t.request.device) : '']), { permanent: true, direction: 'right', className: 'trip-label', offset: [8, 0] })
                .addTo(this.tripLayer);
            drawn.push([t.id, { id: t.id, at, state, corridor }]);
        }
        this.widenCorridors();
        // Mirrored as hidden elements: <li data-trip-mark="ID" data-lat data-lon data-state data-corridor>.
        syncRows(this.tripList, drawn.map(([id, d]) => [id, d, JSON.stringify(d)]), (row, d) => {
            row.dataset.tripMark = d.id;
            row.dataset.lat = d.at[1].toFixed(7);
            row.dataset.lon = d.at[0].toFixed(7);
            row.dataset.state = d.state;
            row.dataset.corridor = String(d.corridor);
        });
    }

    /// A buffer of B metres is a stroke 2B metres wide (round caps and joins): the set of
    /// points within B of the line. Stroke widths are pixels, so they follow the zoom.
    widenCorridors() {
        const zoom = this.map.getZoom();
        for (const c of this.corridors.concat(this.tripCorridors || [])) {
            c.layer.setStyle({ weight: Math.max(1, 2 * c.buffer / metresPerPixel(c.lat, zoom)) });
        }
    }

    /// Lets the user draw a fence: 'polygon' (click the corners, double-click the last) or
    /// 'circle' (click the centre, then the edge: a Point with that buffer) or 'line' (click the
    /// positions, double-click the last: a LineString, a trip's route). done({geometry, buffer}).
    draw(kind, done) {
        this.stopDrawing();
        const points = [];
        const sketch = L.polyline([], { color: '#000', weight: 2, dashArray: '6 4', renderer: this.renderer, interactive: false }).addTo(this.map);
        this.map.doubleClickZoom.disable();
        this.map.getContainer().classList.add('drawing');
        const finish = (result) => { this.stopDrawing(); if (result) done(result); };
        const click = (e) => {
            points.push(e.latlng);
            if (kind === 'circle' && points.length === 2) {
                const radius = Math.round(this.map.distance(points[0], points[1]) * 10) / 10;
                finish({ geometry: { type: 'Point', coordinates: [round7(points[0].lng), round7(points[0].lat)] }, buffer: Math.max(radius, 1) });
                return;
            }
            sketch.setLatLngs(points);
        };
        const dblclick = () => {
            if (kind !== 'polygon' && kind !== 'line') return;
            // The double-click's own clicks added its point twice.
            const ring = points.filter((p, i) => i === 0 || !p.equals(points[i - 1]));
            if (kind === 'line') {
                if (ring.length >= 2) finish({ geometry: { type: 'LineString', coordinates: ring.map((p) => [round7(p.lng), round7(p.lat)]) }, buffer: 0 });
                return;
            }
            if (ring.length < 3) return;
            const coordinates = ring.map((p) => [round7(p.lng), round7(p.lat)]);
            // RFC 7946: an exterior ring goes counterclockwise (shoelace area > 0).
            let area = 0;
            coordinates.forEach((c, i) => { const n = coordinates[(i + 1) % coordinates.length]; area += c[0] * n[1] - n[0] * c[1]; });
            if (area < 0) coordinates.reverse();
            coordinates.push(coordinates[0]);
            finish({ geometry: { type: 'Polygon', coordinates: [coordinates] }, buffer: 0 });
        };
        const key = (e) => { if (e.originalEvent.key === 'Escape') finish(null); };
        this.map.on('click', click).on('dblclick', dblclick).on('keydown', key);
        this.drawing = () => {
            this.map.off('click', click).off('dblclick', dblclick).off('keydown', key);
            sketch.remove();
            this.map.doubleClickZoom.enable();
            this.map.getContainer().classList.remove('drawing');
        };
    }

    stopDrawing() {
        if (this.drawing) { const stop = this.drawing; this.drawing = null; stop(); }
    }

    /// The selected device's track ({device, state, track: history.js Track} or null) as a
    /// line, mirrored as hidden elements: <ul class="track" data-track="ID" data-count
    /// data-state> holding <li data-track-point data-lat data-lon data-time>, oldest first.
    drawTrack(t) {
        const track = t && t.track;
        const latlngs = [];
        if (track) for (let i = 0; i < track.length; i++) latlngs.push([track.lats[i], track.lons[i]]);
        this.trackLine.setLatLngs(latlngs);
        this.trackLine.bringToFront();
        const list = this.trackList;
        list.replaceChildren();
        for (const a of ['track', 'count', 'state', 'error']) delete list.dataset[a];
        if (!t) return;
        list.dataset.track = t.device;
        list.dataset.state = t.state;
        list.dataset.count = String(track ? track.length : 0);
        if (t.error) list.dataset.error = t.error;
        if (!track) return;
        const rows = document.createDocumentFragment();
        for (let i = 0; i < track.length; i++) {
            const li = document.createElement('li');
            li.dataset.trackPoint = String(i);
            li.dataset.lat = track.lats[i].toFixed(7);
            li.dataset.lon = track.lons[i].toFixed(7);
            li.dataset.time = new Date(track.times[i]).toISOString();
            rows.appendChild(li);
        }
        list.appendChild(rows);
    }

    /// Back from the slider: every device where the store has it, with its trail.
    showLive(store) {
        this.deviceLayer.hideAll();
        for (const [id, device] of store.devices) this.deviceLayer.set(id, device.position, device.trail);
        this.deviceLayer.draw();
    }

    /// The devices whose ids are in `changed`: moved, added or removed.
    drawDevices(store, changed) {
        let bounds = null;
        for (const id of changed) {
            const device = store.devices.get(id);
            const p = device && device.position;
            this.deviceLayer.set(id, p, device ? device.trail : []);
            if (p) bounds = bounds ? bounds.extend([p.lat, p.lon]) : L.latLngBounds([p.lat, p.lon], [p.lat, p.lon]);
        }
        if (!this.fitted && !this.fittedDevices && bounds && store.fences.size === 0) {
            this.fittedDevices = true;
            this.map.fitBounds(bounds.pad(0.5), { maxZoom: 17 });
        }
        this.deviceLayer.draw();
    }
}

function sameSet(a, b) {
    if (a.size !== b.size) return false;
    for (const x of a) if (!b.has(x)) return false;
    return true;
}
