// The devices on the map: one canvas of their own, drawn in two batched paths (every trail,
// every accuracy circle) and one small pre-drawn marker image per device, instead of three
// Leaflet layers per device, so that 10,000 devices moving at 5,000 states a second cost a
// few milliseconds a frame (an image copy is far cheaper to raster than a stroked circle). Positions are
// projected once per zoom level and kept; a frame draws only what is in view. Hovering a
// device shows its id; the map picks one for a click (pick) and rings the selected one.

const L = globalThis.L;
const MARKER_RADIUS = 6;
/// Accuracy circles smaller than this (pixels) are not drawn: under the marker anyway.
const SMALLEST_ACCURACY = 3;
const HOVER_PIXELS = 8;

/// Metres per screen pixel at a latitude and zoom (Web Mercator, 256-pixel tiles).
export function metresPerPixel(lat, zoom) {
    return 40075016.686 * Math.cos(lat * Math.PI / 180) / Math.pow(2, zoom + 8);
}

export class DeviceLayer {
    constructor(map, { pane = 'devices' } = {}) {
        this.map = map;
        this.canvas = L.DomUtil.create('canvas', 'device-canvas leaflet-zoom-hide', map.getPane(pane));
        this.canvas.style.pointerEvents = 'none';
        // id -> {lat, lon, accuracy, trail: [[lat, lon]] (the store's array), point and its zoom,
        // refs and points: the trail's entries projected at trailZoom}
        this.devices = new Map();
        this.drawn = [];          // [x, y, id] of the last frame's markers, for hovering
        this.dirty = true;
        this.selected = null;     // the selected device's id (ringed)
        this.tooltip = L.tooltip({ direction: 'top', offset: [0, -MARKER_RADIUS] });
        this.marker = markerImage(window.devicePixelRatio || 1);
        map.on('moveend zoomend resize viewreset', () => { this.dirty = true; this.draw(); });
        map.on('mousemove', (e) => this.hover(e.containerPoint));
        map.on('mouseout', () => this.map.closeTooltip(this.tooltip));
        this.resize();
    }

    /// A device's position: {lat, lon, accuracy} and its trail ([[lat, lon]], oldest first); null removes it.
    set(id, position, trail) {
        if (!position) {
            if (this.devices.delete(id)) this.dirty = true;
            return;
        }
        let d = this.devices.get(id);
        if (!d) {
            d = { refs: [], points: [], trailZoom: null };
            this.devices.set(id, d);
        }
        d.lat = position.lat;
        d.lon = position.lon;
        d.accuracy = typeof position.accuracy === 'number' ? position.accuracy : 0;
        d.trail = trail;
        d.zoom = null;
        this.dirty = true;
    }

    /// Removes every device (the time slider puts back those it replays).
    hideAll() {
        this.devices.clear();
        this.dirty = true;
    }

    /// The pixel position of a device's marker in the canvas now (for scripts and tests), or null.
    pixelOf(id) {
        const d = this.devices.get(id);
        if (!d) return null;
        const p = this.map.latLngToContainerPoint([d.lat, d.lon]);
        return [p.x, p.y];
    }

    resize() {
        const size = this.map.getSize();
        const ratio = window.devicePixelRatio || 1;
        this.canvas.width = size.x * ratio;
        this.canvas.height = size.y * ratio;
        this.canvas.style.width = `${size.x}px`;
        this.canvas.style.height = `${size.y}px`;
        this.ratio = ratio;
    }

    /// A device's marker and trail in zoom-level pixels. The marker is projected again when the
    /// device moved or the zoom changed; the trail only for its new entries (the store appends
    /// to it and drops its oldest), all of it again at another zoom.
    project(d, zoom) {
        if (d.zoom !== zoom) {
            d.point = this.map.project([d.lat, d.lon], zoom);
            d.zoom = zoom;
        }
        const trail = d.trail;
        const dropped = d.trailZoom === zoom ? d.refs.indexOf(trail[0]) : -1;
        if (dropped < 0) {
            d.refs = [];
            d.points = [];
            d.trailZoom = zoom;
        } else if (dropped > 0) {
            d.refs = d.refs.slice(dropped);
            d.points = d.points.slice(dropped);
        }
        for (let i = d.refs.length; i < trail.length; i++) {
            d.refs.push(trail[i]);
            d.points.push(this.map.project(trail[i], zoom));
        }
    }

    /// Draws every device in view, when something changed since the last draw.
    draw() {
        if (!this.dirty) return;
        this.dirty = false;
        const map = this.map;
        const size = map.getSize();
        if (this.canvas.width !== size.x * (window.devicePixelRatio || 1) || this.canvas.height !== size.y * (window.devicePixelRatio || 1)) this.resize();
        // The canvas sits at the container's top left, in the map pane's moving frame.
        L.DomUtil.setPosition(this.canvas, map.containerPointToLayerPoint([0, 0]));
        const ctx = this.canvas.getContext('2d');
        ctx.setTransform(this.ratio, 0, 0, this.ratio, 0, 0);
        ctx.clearRect(0, 0, size.x, size.y);
        const zoom = map.getZoom();
        const origin = map.getPixelBounds().min; // zoom-level pixel of the container's top left
        const margin = MARKER_RADIUS * 2;
        const inView = (p) => p.x >= -margin && p.y >= -margin && p.x <= size.x + margin && p.y <= size.y + margin;
        const scale = metresPerPixel(map.getCenter().lat, zoom);
        const shown = [];
        const trails = new Path2D();
        const circles = new Path2D();
        for (const [id, d] of this.devices) {
            this.project(d, zoom);
            const x = d.point.x - origin.x, y = d.point.y - origin.y;
            const points = d.points;
            if (points.length > 1) {
                trails.moveTo(points[0].x - origin.x, points[0].y - origin.y);
                for (let i = 1; i < points.length; i++) trails.lineTo(points[i].x - origin.x, points[i].y - origin.y);
            }
            if (!inView({ x, y })) continue;
            shown.push([x, y, id]);
            const radius = d.accuracy / scale;
            if (radius >= SMALLEST_ACCURACY) {
                circles.moveTo(x + radius, y);
                circles.arc(x, y, radius, 0, 2 * Math.PI);
            }
        }
        ctx.lineWidth = 2;
        ctx.strokeStyle = 'rgba(51, 51, 51, 0.45)';
        ctx.stroke(trails);
        ctx.lineWidth = 1;
        ctx.fillStyle = 'rgba(10, 88, 202, 0.1)';
        ctx.strokeStyle = '#0a58ca';
        ctx.fill(circles);
        ctx.stroke(circles);
        const half = this.marker.size / 2;
        for (const [x, y] of shown) ctx.drawImage(this.marker.image, Math.round(x - half), Math.round(y - half), this.marker.size, this.marker.size);
        this.drawn = shown;
        const d = this.selected !== null ? this.devices.get(this.selected) : null;
        if (d && d.point) {
            ctx.beginPath();
            ctx.arc(d.point.x - origin.x, d.point.y - origin.y, MARKER_RADIUS + 5, 0, 2 * Math.PI);
            ctx.lineWidth = 3;
            ctx.strokeStyle = '#ff6f00';
            ctx.stroke();
        }
    }

    select(id) {
        if (this.selected === id) return;
        this.selected = id;
        this.dirty = true;
        this.draw();
    }

    /// The device nearest a container point within HOVER_PIXELS: {id, distance} (pixels) or null.
    pick(point) {
        let best = null, bestDistance = HOVER_PIXELS * HOVER_PIXELS;
        for (const [x, y, id] of this.drawn) {
            const dx = x - point.x, dy = y - point.y;
            const distance = dx * dx + dy * dy;
            if (distance <= bestDistance) { best = id; bestDistance = distance; }
        }
        return best === null ? null : { id: best, distance: Math.sqrt(bestDistance) };
    }

    /// The id of the device nearest a container point within HOVER_PIXELS, as a tooltip.
    hover(point) {
        let best = null, bestDistance = HOVER_PIXELS * HOVER_PIXELS;
        for (const [x, y, id] of this.drawn) {
            const dx = x - point.x, dy = y - point.y;
            const distance = dx * dx + dy * dy;
            if (distance <= bestDistance) { best = id; bestDistance = distance; }
        }
        if (best === null) { this.map.closeTooltip(this.tooltip); return; }
        const d = this.devices.get(best);
        const element = document.createElement('div');
        element.textContent = best;
        this.tooltip.setLatLng([d.lat, d.lon]).setContent(element);
        if (!this.map.hasLayer(this.tooltip)) this.tooltip.addTo(this.map);
    }
}

/// A device marker (a blue disc in a white ring), drawn once at the screen's pixel ratio.
function markerImage(ratio) {
    const size = 2 * (MARKER_RADIUS + 1);
    const image = document.createElement('canvas');
    image.width = image.height = size * ratio;
    const ctx = image.getContext('2d');
    ctx.scale(ratio, ratio);
    ctx.beginPath();
    ctx.arc(size / 2, size / 2, MARKER_RADIUS, 0, 2 * Math.PI);
    ctx.fillStyle = '#0a58ca';
    ctx.fill();
    ctx.lineWidth = 2;
    ctx.strokeStyle = '#fff';
    ctx.stroke();
    return { image, size };
}
