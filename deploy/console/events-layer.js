// The events on the map: a mark where each happened (its position), the last hour, fading
// with age (event-marks.js says which, how faded and which glyph), on a canvas of its own
// between the fences and the devices, drawn in a few batched paths (one per glyph and shade).
// The map draws on a canvas, so each mark also has a hidden element for scripts and tests:
// <li data-event-mark="EVENT_ID" data-lat data-lon data-type> (data-selected on the selected one).

import { syncRows } from './lists.js';

const L = globalThis.L;
/// Half the size of a mark (pixels); the selected one is drawn larger, with a ring.
const MARK_SIZE = 6;
const SELECTED_SCALE = 1.7;
/// A click this close to a mark (pixels) picks it.
export const PICK_PIXELS = 9;
/// Opacity is drawn in this many shades (a path per glyph and shade).
const SHADES = 8;
const COLOURS = { enter: '#2a7a3a', exit: '#a8322d', dwell: '#a86b00', alert: '#c2185b', other: '#5a5a6e' };

function fixed(n) { return n.toFixed(7); }

/// A glyph's outline at (x, y), half-size s, added to `path`.
function glyph(path, kind, x, y, s) {
    switch (kind) {
        case 'enter':
            path.moveTo(x, y - s); path.lineTo(x + s, y + 0.8 * s); path.lineTo(x - s, y + 0.8 * s); path.closePath();
            break;
        case 'exit':
            path.moveTo(x, y + s); path.lineTo(x + s, y - 0.8 * s); path.lineTo(x - s, y - 0.8 * s); path.closePath();
            break;
        case 'dwell':
            path.rect(x - 0.8 * s, y - 0.8 * s, 1.6 * s, 1.6 * s);
            break;
        case 'alert':
            path.moveTo(x, y - 1.2 * s); path.lineTo(x + s, y); path.lineTo(x, y + 1.2 * s); path.lineTo(x - s, y); path.closePath();
            break;
        default:
            path.moveTo(x + 0.8 * s, y); path.arc(x, y, 0.8 * s, 0, 2 * Math.PI);
    }
}

export class EventLayer {
    /// `list`: the hidden <ul> that mirrors the marks drawn.
    constructor(map, { pane = 'events', list = null } = {}) {
        this.map = map;
        this.list = list;
        this.canvas = L.DomUtil.create('canvas', 'event-canvas leaflet-zoom-hide', map.getPane(pane));
        this.canvas.style.pointerEvents = 'none';
        this.marks = [];           // [{event, lat, lon, glyph, opacity}] as visibleMarks gave them
        this.projected = new WeakMap(); // event -> {zoom, x, y} (zoom-level pixels)
        this.drawn = [];           // [x, y, id] of the last frame's marks in view, for picking
        this.selected = null;      // the selected event's id
        map.on('moveend zoomend resize viewreset', () => this.draw());
    }

    /// The marks to show (visibleMarks of the store's marks at now).
    set(marks) {
        this.marks = marks;
        this.mirror();
        this.draw();
    }

    select(id) {
        if (this.selected === id) return;
        this.selected = id;
        this.mirror();
        this.draw();
    }

    /// The hidden elements, one per mark shown, newest first.
    mirror() {
        if (!this.list) return;
        const selected = this.selected;
        const entries = this.marks.map((m) => [m.event.id, m, m.event.id === selected ? 'selected' : m.event]);
        syncRows(this.list, entries, (row, m) => {
            row.dataset.eventMark = m.event.id;
            row.dataset.lat = fixed(m.lat);
            row.dataset.lon = fixed(m.lon);
            row.dataset.type = m.event.type;
            if (m.event.id === selected) row.dataset.selected = 'true';
        });
    }

    point(m, zoom) {
        let p = this.projected.get(m.event);
        if (!p || p.zoom !== zoom) {
            const q = this.map.project([m.lat, m.lon], zoom);
            p = { zoom, x: q.x, y: q.y };
            this.projected.set(m.event, p);
        }
        return p;
    }

    /// The pixel position of an event's mark in the map's container now, or null.
    pixelOf(id) {
        const m = this.marks.find((k) => k.event.id === id);
        if (!m) return null;
        const p = this.map.latLngToContainerPoint([m.lat, m.lon]);
        return [p.x, p.y];
    }

    draw() {
        const map = this.map;
        const size = map.getSize();
        const ratio = window.devicePixelRatio || 1;
        if (this.canvas.width !== size.x * ratio || this.canvas.height !== size.y * ratio) {
            this.canvas.width = size.x * ratio;
            this.canvas.height = size.y * ratio;
            this.canvas.style.width = `${size.x}px`;
            this.canvas.style.height = `${size.y}px`;
        }
        L.DomUtil.setPosition(this.canvas, map.containerPointToLayerPoint([0, 0]));
        const ctx = this.canvas.getContext('2d');
        ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
        ctx.clearRect(0, 0, size.x, size.y);
        const zoom = map.getZoom();
        const origin = map.getPixelBounds().min;
        const margin = MARK_SIZE * 2;
        const paths = new Map(); // "glyph shade" -> Path2D
        const shown = [];
        let selected = null;
        // Oldest first, so that newer marks lie on top.
        for (let i = this.marks.length - 1; i >= 0; i--) {
            const m = this.marks[i];
            const p = this.point(m, zoom);
            const x = p.x - origin.x, y = p.y - origin.y;
            if (x < -margin || y < -margin || x > size.x + margin || y > size.y + margin) continue;
            shown.push([x, y, m.event.id]);
            if (m.event.id === this.selected) { selected = [m, x, y]; continue; }
            const shade = Math.max(1, Math.round(m.opacity * SHADES));
            const key = `${m.glyph} ${shade}`;
            let path = paths.get(key);
            if (!path) { path = new Path2D(); paths.set(key, path); }
            glyph(path, m.glyph, x, y, MARK_SIZE);
        }
        ctx.lineWidth = 1;
        ctx.strokeStyle = '#fff';
        for (const [key, path] of paths) {
            const [kind, shade] = key.split(' ');
            ctx.globalAlpha = Number(shade) / SHADES;
            ctx.fillStyle = COLOURS[kind];
            ctx.fill(path);
            ctx.stroke(path);
        }
        ctx.globalAlpha = 1;
        if (selected) {
            const [m, x, y] = selected;
            const path = new Path2D();
            glyph(path, m.glyph, x, y, MARK_SIZE * SELECTED_SCALE);
            ctx.fillStyle = COLOURS[m.glyph];
            ctx.fill(path);
            ctx.lineWidth = 2.5;
            ctx.strokeStyle = '#111';
            ctx.stroke(path);
            ctx.beginPath();
            ctx.arc(x, y, MARK_SIZE * SELECTED_SCALE + 5, 0, 2 * Math.PI);
            ctx.lineWidth = 2;
            ctx.strokeStyle = '#ff6f00';
            ctx.stroke();
        }
        this.drawn = shown;
    }

    /// The mark nearest a container point within PICK_PIXELS: {id, distance} (pixels) or null.
    pick(point) {
        let best = null, bestDistance = PICK_PIXELS * PICK_PIXELS;
        for (const [x, y, id] of this.drawn) {
            const dx = x - point.x, dy = y - point.y;
            const d = dx * dx + dy * dy;
            if (d <= bestDistance) { best = id; bestDistance = d; }
        }
        return best === null ? null : { id: best, distance: Math.sqrt(bestDistance) };
    }
}
