// The time slider (docs/console.md "The last hour"): replays the last hour, the tracks of the
// devices in view (from the gateway's `track` query, cached) and the events (the journal's
// from the `events` query at load, and the live ones) together, at 1x to 60x; the "Live"
// button goes back to the live view. At slider time T a device is drawn at its last track
// position at or before T (hidden without one; one that did not move in the hour stays where
// it is), and only the events of fix time <= T are listed and marked (fading as they would
// have at T). The work of a frame is one binary search per replayed device and a redraw of the
// devices' canvas; the list and the marks change only when an event enters or leaves.

import { ReplayClock, Track, HOUR_MS, TRACK_MARGIN_MS, indexAt, fixTime, timeOfDay } from './history.js';
import { visibleMarks, MARK_WINDOW_MS } from './event-marks.js';
import { EVENT_LIMIT } from './store.js';

/// A cached track is brought up to date (its new positions asked) when older than this.
const TRACK_FRESH_MS = 30 * 1000;
/// Marks fade with the replay time: computed again at least every this much of it.
const FADE_STEP_MS = 60 * 1000;
/// The hidden elements mirroring the replayed devices are written at most this often while
/// playing (at once when paused or moved): 10,000 rows a frame would cost more than the map.
const MIRROR_EVERY_MS = 1000;
export const SPEEDS = [1, 2, 5, 10, 30, 60];
const EMPTY = [];

export class Replay {
    /// `root`: the #replay bar; `map`: the MapView (or null); `actions`: the queries.
    constructor({ store, actions, map, root, requestRender, now = () => Date.now(), wall = () => performance.now() }) {
        this.store = store;
        this.actions = actions;
        this.map = map;
        this.root = root;
        this.requestRender = requestRender;
        this.now = now;
        this.wall = wall;
        this.clock = new ReplayClock();
        this.tracks = new Map();    // device -> {track, state: 'loading'|'ok'|'error', fetched (ms), error}
        this.replayed = new Map();  // device -> index applied (-1: no position yet, -2: still, null: not applied)
        this.queue = [];            // devices whose track is to be asked
        this.queued = new Set();
        this.fetching = 0;
        this.eventsAt = -1;         // versions.events the sorted events are of
        this.sortedEvents = { list: EMPTY, times: EMPTY };
        this.sortedMarks = { list: EMPTY, times: EMPTY };
        this.cut = -1;              // events with fix time <= T: sortedEvents.list[0 ... cut)
        this.markRange = '';
        this.fadeAt = -Infinity;
        this.mirroredAt = -Infinity;
        this.shownEvents = EMPTY;
        this.shownMarks = EMPTY;
        this.ui();
    }

    get active() { return !this.clock.live; }
    get time() { return this.clock.time; }

    ui() {
        const $ = (s) => this.root.querySelector(s);
        this.slider = $('#replay-slider');
        this.label = $('#replay-clock');
        this.playButton = $('[data-action="replay-play"]');
        this.speedSelect = $('#replay-speed');
        this.atInput = $('#replay-at');
        this.slider.min = '0';
        this.slider.max = String(HOUR_MS / 1000);
        this.slider.step = '1';
        this.slider.value = this.slider.max;
        this.slider.addEventListener('input', () => {
            const now = this.now();
            this.seek(now - HOUR_MS + Number(this.slider.value) * 1000);
        });
        this.playButton.addEventListener('click', () => this.togglePlay());
        this.speedSelect.addEventListener('change', () => {
            this.clock.setSpeed(Number(this.speedSelect.value) || 1, this.wall());
            this.root.dataset.speed = String(this.clock.speed);
        });
        $('[data-action="live"]').addEventListener('click', () => this.goLive());
        this.atInput.addEventListener('keydown', (e) => {
            if (e.key !== 'Enter') return;
            e.preventDefault();
            const t = timeOfDay(this.atInput.value, this.now());
            if (t === null) { this.atInput.setCustomValidity('HH:MM or HH:MM:SS (UTC)'); this.atInput.reportValidity(); return; }
            this.atInput.setCustomValidity('');
            this.seek(Math.max(t, this.now() - HOUR_MS));
        });
        this.root.dataset.speed = String(this.clock.speed);
        this.showState();
    }

    /// To time `t` (ms), starting the replay if it was live.
    seek(t) {
        const now = this.now();
        t = Math.max(now - HOUR_MS, Math.min(now, t));
        const starting = !this.active;
        this.clock.seek(t, this.wall());
        if (starting) this.start();
        this.mirroredAt = -Infinity;
        this.changed();
    }

    togglePlay() {
        const wall = this.wall();
        if (!this.active) {
            // From live, play starts at the beginning of the hour.
            this.seek(this.now() - HOUR_MS);
            this.clock.play(wall);
        } else if (this.clock.playing) this.clock.pause(wall);
        else this.clock.play(wall);
        this.mirroredAt = -Infinity;
        this.changed();
    }

    /// Into the replay: the devices in view are replayed (their tracks asked), the others hidden.
    start() {
        this.store.replay = this;
        this.replayed.clear();
        this.cut = -1;
        this.markRange = '';
        this.eventsAt = -1;
        if (this.map) {
            this.map.deviceLayer.hideAll();
            this.map.deviceLayer.draw();
            this.map.onMoved = () => this.addInView();
        }
        this.addInView();
    }

    /// The devices whose last position is in the map's view (with a margin; all without a map)
    /// join the replay, their tracks asked.
    addInView() {
        if (!this.active) return;
        const bounds = this.map ? this.map.map.getBounds().pad(0.2) : null;
        for (const [id, d] of this.store.devices) {
            if (this.replayed.has(id)) continue;
            const p = d.position;
            if (!p || (bounds && !bounds.contains([p.lat, p.lon]))) continue;
            this.replayed.set(id, null);
            this.want(id);
        }
        this.changed();
    }

    /// Asks for a device's track unless a fresh one is cached or being asked.
    want(id) {
        const cached = this.tracks.get(id);
        if (cached && (cached.state === 'loading' || this.now() - cached.fetched < TRACK_FRESH_MS)) return;
        if (this.queued.has(id)) return;
        this.queued.add(id);
        this.queue.push(id);
        this.pump();
    }

    /// Asks for the queued devices' tracks, all of them at once (the track query for several
    /// devices asks TRACK_BATCH a query, IN_FLIGHT queries at a time); those queued meanwhile
    /// go next.
    pump() {
        if (!this.fetching && this.queue.length) {
            const ids = this.queue.splice(0);
            this.queued.clear();
            this.fetching = ids.length;
            this.fetch(ids).finally(() => { this.fetching = 0; this.pump(); });
        }
        this.showState();
    }

    /// The tracks of `ids` for the hour (and TRACK_MARGIN_MS before it); of a cached one only
    /// its new positions (asked together from the oldest of them: a track skips what it holds).
    /// A device is drawn as soon as its positions come.
    async fetch(ids) {
        const now = this.now();
        let since = Infinity;
        const previous = new Map();
        for (const id of ids) {
            let entry = this.tracks.get(id);
            if (!entry) { entry = { track: new Track(), state: 'loading', fetched: 0 }; this.tracks.set(id, entry); }
            since = Math.min(since, entry.track.length ? entry.track.last + 1 : now - HOUR_MS - TRACK_MARGIN_MS);
            previous.set(id, entry.state);
            entry.state = 'loading';
        }
        const settle = (id, entry, error) => {
            entry.state = error && previous.get(id) !== 'ok' ? 'error' : 'ok';
            entry.error = error || undefined;
            entry.fetched = now;
            if (this.replayed.has(id)) this.replayed.set(id, null); // applied again
        };
        const { unknown, error } = await this.actions.tracksOf(ids, since, (id, positions) => {
            const entry = this.tracks.get(id);
            if (!entry) return;
            entry.track.append(positions);
            settle(id, entry, null);
            this.changed();
        });
        const missing = new Set(unknown);
        for (const id of ids) {
            const entry = this.tracks.get(id);
            if (entry.state === 'loading') settle(id, entry, missing.has(id) ? `no started gateway knows device "${id}"` : error || 'no answer');
        }
        this.changed();
    }

    /// Tracks still being asked.
    loading() {
        return this.queue.length + this.fetching;
    }

    goLive() {
        if (!this.active) return;
        this.clock.goLive();
        this.store.replay = null;
        this.replayed.clear();
        if (this.map) {
            this.map.onMoved = null;
            this.map.showLive(this.store);
        }
        this.store.versions.events++;
        this.store.versions.marks++;
        this.store.versions.devices++;
        this.slider.value = this.slider.max;
        this.shownEvents = EMPTY;
        this.shownMarks = EMPTY;
        this.changed();
    }

    changed() {
        this.store.versions.replay++;
        this.showState();
        this.requestRender();
    }

    /// The bar's attributes and words (written only when they change: this runs every frame).
    showState() {
        const r = this.root;
        const set = (key, value) => { if (r.dataset[key] !== value) r.dataset[key] = value; };
        set('state', !this.active ? 'live' : this.loading() ? 'loading' : 'replay');
        set('playing', String(this.active && this.clock.playing));
        set('loading', String(this.loading()));
        const play = this.active && this.clock.playing ? '❚❚ pause' : '▶ play';
        if (this.playButton.textContent !== play) this.playButton.textContent = play;
        if (!this.active) {
            delete r.dataset.replayTime;
            if (this.label.textContent !== 'live') this.label.textContent = 'live';
        }
    }

    /// Where a replayed device is at the replay time: {state: 'at', lat, lon, time} (its last
    /// track position at or before it), {state: 'still', ...} (no move in the hour: where it is
    /// now), {state: 'none'} (no position before it), {state: 'loading'}, {state: 'out'} (not
    /// replayed: out of view when the replay started); null when live.
    deviceAt(id) {
        if (!this.active) return null;
        if (!this.replayed.has(id)) return { state: 'out' };
        const entry = this.tracks.get(id);
        if (!entry || (entry.state !== 'ok' && !entry.track.length)) return { state: entry && entry.state === 'error' ? 'error' : 'loading' };
        return this.positionOf(id, entry.track);
    }

    positionOf(id, track) {
        if (!track.length) {
            const d = this.store.devices.get(id);
            const p = d && d.position;
            return p ? { state: 'still', lat: p.lat, lon: p.lon, time: Date.parse(p.time), index: -2 } : { state: 'none', index: -1 };
        }
        const i = indexAt(track.times, this.clock.time);
        if (i < 0) return { state: 'none', index: -1 };
        return { state: 'at', lat: track.lats[i], lon: track.lons[i], time: track.times[i], index: i };
    }

    /// The events shown at the replay time (fix time <= T, the last EVENT_LIMIT of them), newest
    /// first; the marks to draw.
    events() { return this.shownEvents; }
    marks() { return this.shownMarks; }

    /// Called at the start of each rendered frame while replaying: moves the clock on, puts
    /// the replayed devices where they were, picks the events; asks for the next frame while
    /// playing.
    frame() {
        if (!this.active) return;
        const store = this.store;
        const now = this.now();
        const t = this.clock.advance(this.wall(), now);
        if (this.clock.ended) { this.goLive(); return; }
        // The devices: one binary search each; the layer is touched only for those that moved.
        let moved = false;
        const layer = this.map ? this.map.deviceLayer : null;
        for (const [id, applied] of this.replayed) {
            const entry = this.tracks.get(id);
            if (!entry || (entry.state !== 'ok' && !entry.track.length)) continue;
            const at = this.positionOf(id, entry.track);
            if (at.index === applied) continue;
            this.replayed.set(id, at.index);
            moved = true;
            if (layer) layer.set(id, at.state === 'none' ? null : { lat: at.lat, lon: at.lon }, EMPTY);
        }
        if (layer && moved) layer.draw();
        // The events: sorted by fix time once per change of the store's, then a binary search.
        if (this.eventsAt !== store.versions.events) {
            this.eventsAt = store.versions.events;
            // The list's 500 and the marks' 10,000 together: the list at T shows the 500 before T.
            const byId = new Map();
            for (const e of store.marks) byId.set(e.id, e);
            for (const e of store.events) byId.set(e.id, e);
            this.sortedEvents = sortByTime(byId.values());
            this.sortedMarks = sortByTime(store.marks);
            this.cut = -1;
            this.markRange = '';
        }
        const cut = indexAt(this.sortedEvents.times, t) + 1;
        if (cut !== this.cut) {
            this.cut = cut;
            this.shownEvents = this.sortedEvents.list.slice(Math.max(0, cut - EVENT_LIMIT), cut).reverse();
            store.versions.events++;
            this.eventsAt = store.versions.events;
        }
        const marksTo = indexAt(this.sortedMarks.times, t) + 1;
        const marksFrom = indexAt(this.sortedMarks.times, t - MARK_WINDOW_MS) + 1;
        const range = `${marksFrom} ${marksTo}`;
        if (range !== this.markRange || Math.abs(t - this.fadeAt) >= FADE_STEP_MS) {
            this.markRange = range;
            this.fadeAt = t;
            this.shownMarks = visibleMarks(this.sortedMarks.list.slice(marksFrom, marksTo).reverse(), t, () => t);
            store.versions.marks++;
        }
        // The rows and hidden elements of the devices: when something moved, and while playing at
        // most once a second.
        const wall = this.wall();
        if (moved && (!this.clock.playing || wall - this.mirroredAt >= MIRROR_EVERY_MS)) {
            this.mirroredAt = wall;
            store.versions.devices++;
        } else if (!this.clock.playing && this.mirroredAt === -Infinity) {
            this.mirroredAt = wall;
            store.versions.devices++;
        }
        // The bar.
        const iso = new Date(t).toISOString();
        if (this.root.dataset.replayTime !== iso) {
            this.root.dataset.replayTime = iso;
            this.label.textContent = `${iso.slice(11, 19)} UTC · ${Math.round((now - t) / 60000)} min ago`;
            this.slider.value = String(Math.round((t - (now - HOUR_MS)) / 1000));
        }
        this.showState();
        if (this.clock.playing) this.requestRender();
    }
}

/// Events (any order) with their fix times, oldest first: {list, times}; those without a fix
/// time are left out.
function sortByTime(events) {
    const timed = [];
    for (const e of events) {
        const t = fixTime(e);
        if (!Number.isNaN(t)) timed.push([t, e]);
    }
    timed.sort((a, b) => a[0] - b[0]);
    return { list: timed.map((x) => x[1]), times: timed.map((x) => x[0]) };
}
