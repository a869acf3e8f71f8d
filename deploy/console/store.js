// The console's one store: everything the broker said, as plain data. Messages go in through
// handle(topic, payload); views read the state and the per-part versions (a view redraws a
// part only when its version moved). Listeners hear "changed" once per call; the app turns
// that into one render per animation frame. Devices and occupancy also keep which of them
// changed since a view last took them, so that a view touches only those.

export const TRAIL_LENGTH = 50;
export const EVENT_LIMIT = 500;
/// Events kept for the map's marks (those with a position; the map shows the last hour of them).
export const MARK_LIMIT = 10000;
const NOTICE_LIMIT = 50;
/// A trip's final states (docs/trips.md "Progress").
const TRIP_FINAL = new Set(['arrived', 'missed', 'cancelled']);

import { mergeEvents, fixTime } from './history.js';

const decoder = new TextDecoder('utf-8', { fatal: true });

function isObject(v) { return v !== null && typeof v === 'object' && !Array.isArray(v); }
function isNumber(v) { return typeof v === 'number' && Number.isFinite(v); }
function validPosition(p) {
    return isObject(p) && isNumber(p.lat) && isNumber(p.lon) && p.lat >= -90 && p.lat <= 90 && p.lon >= -180 && p.lon <= 180;
}

export class Store {
    constructor(prefix) {
        this.prefix = prefix;
        this.connection = { state: 'idle', detail: '' };
        this.devices = new Map();       // id -> {id, position, inside, updated, trail: [[lat, lon]]}
        this.events = [];               // newest first, at most EVENT_LIMIT
        this.eventIds = new Set();
        this.marks = [];                // events with a position, newest first, at most MARK_LIMIT
        this.markIds = new Set();
        this.received = new WeakMap();  // event -> when the page got it (ms; for events without a time)
        this.gateways = new Map();      // id -> status payload (+ id)
        this.occupancy = new Map();     // "TRIGGER/LAYER/FENCE" -> payload
        this.fences = new Map();        // "LAYER/ID" -> {layer, id, name, buffer, triggers, geometry}
        this.runtimeFences = new Map(); // "LAYER/ID" -> Feature as retained on the broker
        this.expectations = new Map();  // id -> {id, request, result, error, open}
        this.trips = new Map();         // id -> {id, request, progress, error, open} (docs/trips.md)
        this.notices = [];              // {kind, text, time}, newest last
        this.featuresStatus = { state: 'none', text: '' };
        // What the dispatcher selected (a device, a fence or an event; shared by the map and the
        // lists): {kind, id} or null; and for a fence, the answer of the inside query about it.
        this.selection = null;
        this.selectionInside = null;    // {key, state: 'asking'|'ok'|'error', inside, count, truncated, error}
        // The selected device's track from the gateway (the track query; history.js Track):
        // {device, state: 'loading'|'ok'|'error', track, error}, or null.
        this.track = null;
        // The time slider while it replays (replay.js), or null when live.
        this.replay = null;
        // deviceSet moves when a device comes or goes (the sorted list changes); occupancy when
        // a count does (fences is the fence set from the features query and runtime topics).
        this.versions = { connection: 0, devices: 0, deviceSet: 0, events: 0, marks: 0, gateways: 0, fences: 0, occupancy: 0, expectations: 0, trips: 0, notices: 0, selection: 0, track: 0, replay: 0 };
        this.changedDevices = new Set();   // ids, until takeChanged('devices')
        this.changedOccupancy = new Set(); // "LAYER/FENCE", until takeChanged('occupancy')
        this.listeners = [];
        this.onRuntimeFenceChange = null;
        // Hooks (the alerts panel listens here): an event taken (new id), an expected arrival's
        // result, a gateway's status (null: its retained status was cleared).
        this.onEvent = null;
        this.onResult = null;
        this.onStatus = null;
    }

    subscribe(fn) { this.listeners.push(fn); }
    changed(part) {
        this.versions[part]++;
        for (const fn of this.listeners) fn(part);
    }

    /// The devices ('devices') or occupied fences ('occupancy') changed since the last call.
    takeChanged(part) {
        const field = part === 'devices' ? 'changedDevices' : 'changedOccupancy';
        const changed = this[field];
        this[field] = new Set();
        return changed;
    }

    /// Selects a device ('device', ID), a fence ('fence', "LAYER/ID") or an event ('event', ID);
    /// select(null) clears the selection.
    select(kind, id) {
        const next = kind ? { kind, id } : null;
        const now = this.selection;
        if ((now && next && now.kind === next.kind && now.id === next.id) || (!now && !next)) return;
        this.selection = next;
        this.selectionInside = null;
        this.changed('selection');
    }

    /// The selected device's track (or null): drawn on the map, mirrored for scripts.
    setTrack(track) {
        this.track = track;
        this.changed('track');
    }

    /// The event an id names: in the list or among the marks.
    eventById(id) {
        return this.events.find((e) => e.id === id) || this.marks.find((e) => e.id === id) || null;
    }

    /// The inside query's answer for the selected fence `key` (ignored if it is no longer selected).
    setSelectionInside(key, answer) {
        if (!this.selection || this.selection.kind !== 'fence' || this.selection.id !== key) return;
        this.selectionInside = { key, ...answer };
        this.changed('selection');
    }

    setConnection(state, detail = '') {
        this.connection = { state, detail };
        this.changed('connection');
    }

    /// A word on the page about something that went wrong (kept: the last NOTICE_LIMIT).
    notice(kind, text) {
        this.notices.push({ kind, text, time: new Date() });
        if (this.notices.length > NOTICE_LIMIT) this.notices.splice(0, this.notices.length - NOTICE_LIMIT);
        this.changed('notices');
    }

    /// Reads a payload as JSON; says so on the page when it is not.
    json(topic, payload) {
        let text;
        try {
            text = decoder.decode(payload);
        } catch {
            this.notice('payload', `${topic}: payload is not UTF-8 text (${payload.length} bytes), ignored`);
            return undefined;
        }
        try {
            return JSON.parse(text);
        } catch (error) {
            this.notice('payload', `${topic}: payload is not JSON (${error.message}), ignored`);
            return undefined;
        }
    }

    /// One MQTT message. Topics outside the ones below are ignored.
    handle(topic, payload) {
        const head = this.prefix + '/';
        if (!topic.startsWith(head)) return;
        const levels = topic.slice(head.length).split('/');
        switch (levels[0]) {
            case 'devices':
                if (levels.length >= 3 && levels[levels.length - 1] === 'state') {
                    this.deviceState(levels.slice(1, -1).join('/'), topic, payload);
                }
                break;
            case 'events':
                if (levels.length >= 3 && payload.length) this.event(topic, payload);
                break;
            case 'status':
                if (levels.length === 2) this.status(levels[1], topic, payload);
                break;
            case 'occupancy':
                if (levels.length === 4) this.occupancyOf(levels.slice(1).join('/'), topic, payload);
                break;
            case 'expect':
                if (levels.length === 2) this.expectation(levels[1], topic, payload);
                else if (levels.length === 3 && (levels[2] === 'result' || levels[2] === 'error')) this.expectationOutcome(levels[1], levels[2], topic, payload);
                break;
            case 'trips':
                if (levels.length === 2) this.tripRequest(levels[1], topic, payload);
                else if (levels.length === 3 && levels[2] === 'progress') this.tripProgress(levels[1], topic, payload);
                else if (levels.length === 3 && levels[2] === 'error') this.tripError(levels[1], topic, payload);
                break;
            case 'fences':
                if (levels.length === 3) this.runtimeFence(levels[1], levels[2], topic, payload);
                else if (levels.length === 4 && levels[3] === 'error') this.fenceError(topic, payload);
                break;
            default:
                break;
        }
    }

    deviceState(id, topic, payload) {
        if (payload.length === 0) {
            if (this.devices.delete(id)) {
                this.changedDevices.add(id);
                this.versions.deviceSet++;
                this.changed('devices');
            }
            return;
        }
        const state = this.json(topic, payload);
        if (state === undefined) return;
        if (!isObject(state) || (state.position !== null && !validPosition(state.position)) || (state.inside !== undefined && !Array.isArray(state.inside))) {
            this.notice('shape', `${topic}: device state of unknown shape, ignored`);
            return;
        }
        let device = this.devices.get(id);
        if (!device) {
            device = { id, trail: [] };
            this.devices.set(id, device);
            this.versions.deviceSet++;
        }
        device.position = state.position;
        device.inside = (state.inside || []).filter(isObject);
        device.updated = state.updated;
        if (state.position) {
            const last = device.trail[device.trail.length - 1];
            const point = [state.position.lat, state.position.lon];
            if (!last || last[0] !== point[0] || last[1] !== point[1]) {
                device.trail.push(point);
                if (device.trail.length > TRAIL_LENGTH) device.trail.splice(0, device.trail.length - TRAIL_LENGTH);
            }
        }
        this.changedDevices.add(id);
        this.changed('devices');
    }

    event(topic, payload) {
        const event = this.json(topic, payload);
        if (event === undefined) return;
        // A fence's events name their fence; a trip's (trigger "trips") have none, and name their trip.
        if (!isObject(event) || typeof event.id !== 'string' || typeof event.type !== 'string' || (event.fence !== undefined && !isObject(event.fence))) {
            this.notice('shape', `${topic}: event of unknown shape, ignored`);
            return;
        }
        if (this.eventIds.has(event.id) || this.markIds.has(event.id)) return; // redelivered: the same id
        this.eventIds.add(event.id);
        this.events.unshift(event);
        while (this.events.length > EVENT_LIMIT) this.eventIds.delete(this.events.pop().id);
        this.received.set(event, Date.now());
        if (validPosition(event.position)) {
            this.markIds.add(event.id);
            this.marks.unshift(event);
            while (this.marks.length > MARK_LIMIT) this.markIds.delete(this.marks.pop().id);
            this.versions.marks++;
        }
        this.changed('events');
        if (this.onEvent) this.onEvent(event);
    }

    /// Events of the gateway's journal (the `events` query, at load): merged with the events
    /// held by id (an event already held, live or from an earlier page, is not added again),
    /// the list and the marks newest first by fix time. Those added go to onEvent oldest first
    /// (an alert of the last hour comes back after a reload). Returns how many were added.
    history(events) {
        if (!Array.isArray(events)) return 0;
        const seen = new Set();
        const fresh = events.filter((e) => isObject(e) && typeof e.id === 'string' && typeof e.type === 'string'
            && (e.fence === undefined || isObject(e.fence)) && !this.eventIds.has(e.id) && !this.markIds.has(e.id)
            && !seen.has(e.id) && seen.add(e.id));
        if (!fresh.length) return 0;
        const listed = mergeEvents(this.events, fresh, this.eventIds, EVENT_LIMIT);
        this.events = listed.list;
        const marked = mergeEvents(this.marks, fresh.filter((e) => validPosition(e.position)), this.markIds, MARK_LIMIT);
        if (marked.added.length) {
            this.marks = marked.list;
            this.versions.marks++;
        }
        const now = Date.now();
        for (const e of fresh) this.received.set(e, now);
        this.changed('events');
        if (this.onEvent) for (const e of fresh.slice().sort((a, b) => fixTime(a) - fixTime(b))) this.onEvent(e);
        return fresh.length;
    }

    status(id, topic, payload) {
        if (payload.length === 0) {
            if (this.gateways.delete(id)) this.changed('gateways');
            if (this.onStatus) this.onStatus(id, null);
            return;
        }
        const status = this.json(topic, payload);
        if (status === undefined) return;
        if (!isObject(status) || typeof status.status !== 'string') {
            this.notice('shape', `${topic}: gateway status of unknown shape, ignored`);
            return;
        }
        const previous = this.gateways.get(id);
        this.gateways.set(id, { ...status, id });
        this.changed('gateways');
        if (this.onStatus) this.onStatus(id, status);
        if (this.onGatewayStarted && status.status === 'started' && (!previous || previous.status !== 'started' || previous.since !== status.since)) {
            this.onGatewayStarted(id);
        }
    }

    occupancyOf(key, topic, payload) {
        const [trigger, layer, fence] = key.split('/');
        if (payload.length === 0) {
            if (this.occupancy.delete(key)) {
                this.changedOccupancy.add(`${layer}/${fence}`);
                this.changed('occupancy');
            }
            return;
        }
        const o = this.json(topic, payload);
        if (o === undefined) return;
        if (!isObject(o) || !isNumber(o.count)) {
            this.notice('shape', `${topic}: occupancy of unknown shape, ignored`);
            return;
        }
        this.occupancy.set(key, { ...o, trigger, layer, fence });
        this.changedOccupancy.add(`${layer}/${fence}`);
        this.changed('occupancy');
    }

    /// The `features` reply: the fence list and map are replaced by it.
    setFeatures(reply) {
        if (!isObject(reply)) {
            this.featuresStatus = { state: 'error', text: 'fences: the features reply is not a JSON object' };
            this.notice('features', this.featuresStatus.text);
            this.changed('fences');
            return;
        }
        if (typeof reply.error === 'string') {
            this.featuresStatus = { state: 'error', text: `fences: the gateway answered the features query with an error: ${reply.error}` };
            this.notice('features', this.featuresStatus.text);
            this.changed('fences');
            return;
        }
        if (reply.type !== 'FeatureCollection' || !Array.isArray(reply.features)) {
            this.featuresStatus = { state: 'error', text: 'fences: the features reply is not a FeatureCollection' };
            this.notice('features', this.featuresStatus.text);
            this.changed('fences');
            return;
        }
        const fences = new Map();
        let odd = 0;
        for (const f of reply.features) {
            const p = isObject(f) && isObject(f.properties) ? f.properties : null;
            if (!p || typeof p.layer !== 'string' || !isObject(f.geometry)) { odd++; continue; }
            const id = typeof p.fence === 'string' ? p.fence : String(f.id);
            fences.set(`${p.layer}/${id}`, {
                layer: p.layer, id, name: typeof p.name === 'string' ? p.name : '',
                buffer: isNumber(p.buffer) ? p.buffer : 0,
                triggers: Array.isArray(p.triggers) ? p.triggers : [],
                geometry: f.geometry,
            });
        }
        this.fences = fences;
        if (reply.truncated === true) {
            this.featuresStatus = { state: 'truncated', text: `fences: the gateway sent only the first ${fences.size} fences (the features reply is truncated)` };
            this.notice('features', this.featuresStatus.text);
        } else {
            this.featuresStatus = { state: 'ok', text: `${fences.size} fences` };
        }
        if (odd) this.notice('shape', `fences: ${odd} features of unknown shape in the features reply, ignored`);
        this.changed('fences');
    }

    runtimeFence(layer, id, topic, payload) {
        const key = `${layer}/${id}`;
        if (payload.length === 0) {
            this.runtimeFences.delete(key);
        } else {
            const feature = this.json(topic, payload);
            if (feature === undefined) return;
            this.runtimeFences.set(key, feature);
        }
        this.changed('fences');
        if (this.onRuntimeFenceChange) this.onRuntimeFenceChange(key);
    }

    fenceError(topic, payload) {
        const e = this.json(topic, payload);
        if (e === undefined) return;
        this.notice('fence', `runtime fence ${isObject(e) ? `${e.layer}/${e.fence}: ${e.error}` : topic} (rejected by the gateway)`);
    }

    expectation(id, topic, payload) {
        let x = this.expectations.get(id);
        if (payload.length === 0) {
            // Cleared: settled by the gateway (a result came or comes) or cancelled.
            if (x && !x.result) { x.open = false; this.changed('expectations'); }
            return;
        }
        const request = this.json(topic, payload);
        if (request === undefined) return;
        if (!isObject(request)) { this.notice('shape', `${topic}: expectation of unknown shape, ignored`); return; }
        if (!x) { x = { id }; this.expectations.set(id, x); }
        x.request = request;
        x.open = true;
        x.result = undefined;
        x.error = undefined;
        this.changed('expectations');
    }

    /// A trip's retained request (docs/trips.md). Empty: cancelled, or settled by the gateway
    /// (which leaves the final progress: the trip stays listed with it, not drawn as open).
    tripRequest(id, topic, payload) {
        let t = this.trips.get(id);
        if (payload.length === 0) {
            if (!t) return;
            if (t.progress && TRIP_FINAL.has(t.progress.state) && t.progress.state !== 'cancelled') t.open = false;
            else this.trips.delete(id);
            this.changed('trips');
            return;
        }
        const request = this.json(topic, payload);
        if (request === undefined) return;
        if (!isObject(request)) { this.notice('shape', `${topic}: trip request of unknown shape, ignored`); return; }
        if (!t) { t = { id }; this.trips.set(id, t); }
        // A new payload is a new trip: its progress starts afresh (a retained copy changes nothing).
        if (t.request !== undefined && JSON.stringify(t.request) !== JSON.stringify(request)) { t.progress = undefined; t.error = undefined; }
        t.request = request;
        t.open = true;
        this.changed('trips');
    }

    /// A trip's retained progress. `cancelled` (or empty, for a trip with no request) removes it.
    tripProgress(id, topic, payload) {
        let t = this.trips.get(id);
        if (payload.length === 0) {
            if (!t) return;
            if (!t.open) this.trips.delete(id);
            else t.progress = undefined;
            this.changed('trips');
            return;
        }
        const progress = this.json(topic, payload);
        if (progress === undefined) return;
        if (!isObject(progress) || typeof progress.state !== 'string') { this.notice('shape', `${topic}: trip progress of unknown shape, ignored`); return; }
        if (progress.state === 'cancelled') {
            if (this.trips.delete(id)) this.changed('trips');
            return;
        }
        if (!t) { t = { id, open: false }; this.trips.set(id, t); }
        t.progress = progress;
        if (TRIP_FINAL.has(progress.state)) t.open = false;
        this.changed('trips');
    }

    /// The gateway rejected a trip's request: kept on its row (the previous version stays).
    tripError(id, topic, payload) {
        const body = this.json(topic, payload);
        if (body === undefined) return;
        const error = isObject(body) && typeof body.error === 'string' ? body.error : JSON.stringify(body);
        let t = this.trips.get(id);
        if (!t) { t = { id, open: false }; this.trips.set(id, t); }
        t.error = error;
        this.notice('trip', `trip ${id} rejected: ${error}`);
        this.changed('trips');
    }

    expectationOutcome(id, kind, topic, payload) {
        const body = this.json(topic, payload);
        if (body === undefined) return;
        let x = this.expectations.get(id);
        if (!x) { x = { id, request: body, open: false }; this.expectations.set(id, x); }
        if (kind === 'result') {
            if (!isObject(body) || typeof body.result !== 'string') { this.notice('shape', `${topic}: expectation result of unknown shape, ignored`); return; }
            x.result = body;
            x.open = false;
            if (this.onResult) this.onResult(id, body);
        } else {
            x.error = isObject(body) && typeof body.error === 'string' ? body.error : JSON.stringify(body);
            this.notice('expectation', `expected arrival ${id} rejected: ${x.error}`);
        }
        this.changed('expectations');
    }
}
