#!/usr/bin/env python3
"""A bench scene for the dispatcher console (deploy/console): figures printed, nothing asserted.

10,000 fences (small polygons in one GeoJSON layer file, in one view) for the real
`geotrigger serve`, 10,000 devices with retained states on the broker, then the page in
headless Chromium:
1. load: from navigation until the device list has every device and the fences are drawn;
2. moving devices: state messages at RATE a second for SECONDS; frame time (requestAnimationFrame
   intervals), lag (from the `updated` stamped at publish to the store applying the state),
   whether the page falls behind (messages not applied, time to drain after the last publish),
   and where a frame's time goes (map and list renders, the store's message handling);
3. replay: every device given an hour of track (a position every 10 s, handed to the time
   slider's cache directly: the gateway of this scene has no tracks) and all in view, the slider
   played at REPLAY_SPEED x for REPLAY_SECONDS: frame time, the time of the slider's own part of
   a frame and of the map and list renders, and whether the replay clock kept up.

The page is read through `window.__console` (store, map, lists; set by app.js) and a small
script added before the page's own (window.__bench). Same environment as console_test.py
(GEOTRIGGER_BIN, default .build/release/geotrigger when built, else .build/debug/), plus
BENCH_FENCES, BENCH_DEVICES, BENCH_RATE, BENCH_SECONDS, BENCH_REPLAY_SPEED (60), BENCH_REPLAY_SECONDS
(10); BENCH_PROFILE=1 adds Chromium's CPU profile
of the moving phase (the functions with the most self time).

    swift build -c release --product geotrigger && /usr/bin/python3 Tests/Console/console_bench.py
"""
import datetime
import json
import os
import random
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from console_test import (ROOT, Processes, Publisher, browser, http_dir, retained, start_broker,  # noqa: E402
                          wait_until)

FENCES = int(os.environ.get('BENCH_FENCES', 10000))
DEVICES = int(os.environ.get('BENCH_DEVICES', 10000))
RATE = int(os.environ.get('BENCH_RATE', 5000))
PROFILE = os.environ.get('BENCH_PROFILE') == '1'
SECONDS = float(os.environ.get('BENCH_SECONDS', 10))
REPLAY_SPEED = int(os.environ.get('BENCH_REPLAY_SPEED', 60))
REPLAY_SECONDS = float(os.environ.get('BENCH_REPLAY_SECONDS', 10))
PREFIX = 'bench'
GATEWAY = 'bench-gw'
# The scene: a grid of fences around this corner, the devices among them.
LON0, LAT0, STEP = -119.80, 34.40, 0.001


def gateway_binary():
    if os.environ.get('GEOTRIGGER_BIN'):
        return os.environ['GEOTRIGGER_BIN']
    release = os.path.join(ROOT, '.build', 'release', 'geotrigger')
    return release if os.access(release, os.X_OK) else os.path.join(ROOT, '.build', 'debug', 'geotrigger')


def iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).isoformat(timespec='milliseconds').replace('+00:00', 'Z')


def fence_file(directory):
    """FENCES small quadrilaterals on a grid, one layer file."""
    side = int(FENCES ** 0.5 + 0.999)
    features = []
    for n in range(FENCES):
        i, j = n % side, n // side
        lon, lat = LON0 + i * STEP, LAT0 + j * STEP
        ring = [[round(lon, 5), round(lat, 5)], [round(lon + 0.0006, 5), round(lat, 5)],
                [round(lon + 0.0007, 5), round(lat + 0.0006, 5)], [round(lon, 5), round(lat + 0.0005, 5)]]
        ring.append(ring[0])
        features.append({'type': 'Feature', 'id': f'f{n}', 'properties': {'id': f'f{n}'},
                         'geometry': {'type': 'Polygon', 'coordinates': [ring]}})
    os.makedirs(directory)
    with open(os.path.join(directory, 'bench.geojson'), 'w') as f:
        json.dump({'type': 'FeatureCollection', 'features': features}, f, separators=(',', ':'))
    return side


def state(device, lat, lon, t):
    return json.dumps({'device': device, 'position': {'lat': round(lat, 7), 'lon': round(lon, 7), 'accuracy': 5, 'time': iso(t)},
                       'inside': [], 'updated': iso(t)}, separators=(',', ':')).encode()


# Added before the page's own scripts: frame times, and wrappers around the store and the
# renders as soon as app.js sets window.__console.
PROBE_JS = """
(() => {
  const b = window.__bench = { frames: [], lags: [], lagAt: [], applied: 0, handleMs: 0, handled: 0, canvasMs: 0,
    mapMs: [], listsMs: [], recording: false, devicesListedAt: null, fencesDrawnAt: null, want: %d };
  const loop = (t) => { b.frames.push(t); requestAnimationFrame(loop); };
  requestAnimationFrame(loop);
  let value;
  Object.defineProperty(window, '__console', { configurable: true, get: () => value, set: (c) => {
    value = c;
    const store = c.store;
    const deviceState = store.deviceState;
    store.deviceState = function (id, topic, payload) {
      deviceState.call(this, id, topic, payload);
      b.applied++;
      if (b.recording) {
        const d = this.devices.get(id);
        const at = Date.parse(d && d.updated);
        if (!Number.isNaN(at)) { b.lags.push(Date.now() - at); b.lagAt.push(performance.now()); }
      }
    };
    const handle = store.handle;
    store.handle = function (topic, payload) {
      const t = performance.now();
      try { return handle.call(this, topic, payload); } finally { b.handleMs += performance.now() - t; b.handled++; }
    };
    if (c.map) {
      const render = c.map.render;
      c.map.render = function (s, ...rest) {
        const t = performance.now();
        const r = render.call(this, s, ...rest);
        const now = performance.now();
        b.mapMs.push(now - t);
        if (b.fencesDrawnAt === null && s.featuresStatus.state !== 'none' && s.fences.size > 0) b.fencesDrawnAt = now;
        return r;
      };
    }
    // Leaflet's canvas repaints in a frame callback of its own, outside map.render.
    if (window.L && L.Canvas && !L.Canvas.prototype.__benched) {
      const redraw = L.Canvas.prototype._redraw;
      L.Canvas.prototype._redraw = function () {
        const t = performance.now();
        try { return redraw.call(this); } finally { b.canvasMs += performance.now() - t; }
      };
      L.Canvas.prototype.__benched = true;
    }
    const lists = c.lists.render;
    c.lists.render = function (s, ...rest) {
      const t = performance.now();
      const r = lists.call(this, s, ...rest);
      const now = performance.now();
      b.listsMs.push(now - t);
      if (b.devicesListedAt === null && Number(this.parts.counts.devices.textContent) >= b.want) b.devicesListedAt = now;
      return r;
    };
  } });
})();
"""


# Phase 3: every device an hour of track (a position every 10 s at a phase of its own, a small
# walk around where it is), put in the slider's cache as if the track query had brought it, the map fitted to them
# all; the slider's frame timed.
REPLAY_SETUP_JS = """
const c = window.__console, r = c.replay, s = c.store, b = window.__bench;
const heap = () => (performance.memory ? performance.memory.usedJSHeapSize / 1048576 : NaN);
const heapBefore = heap();
const t0 = performance.now(), now = Date.now(), n = 360;
let south = 90, north = -90, west = 180, east = -180;
for (const [id, d] of s.devices) {
    const p = d.position;
    if (!p) continue;
    const times = new Array(n), lats = new Array(n), lons = new Array(n);
    let lat = p.lat, lon = p.lon;
    const phase = Math.floor(Math.random() * 10000); // fixes come at any moment, not all at once
    for (let i = 0; i < n; i++) {
        times[i] = now - 3600000 + i * 10000 + phase;
        lat += (Math.random() - 0.5) * 0.0002; lon += (Math.random() - 0.5) * 0.0002;
        lats[i] = lat; lons[i] = lon;
    }
    r.tracks.set(id, { track: { times, lats, lons, length: n, last: times[n - 1] }, state: 'ok', fetched: now + 1e9 });
    south = Math.min(south, p.lat); north = Math.max(north, p.lat); west = Math.min(west, p.lon); east = Math.max(east, p.lon);
}
const frame = r.frame;
r.frame = function () { const t = performance.now(); try { return frame.call(this); } finally { b.replayMs.push(performance.now() - t); } };
b.replayMs = [];
c.map.map.fitBounds([[south, west], [north, east]]);
return { devices: r.tracks.size, positions: n, ms: performance.now() - t0, heapBefore, heapAfter: heap() };
"""


def print_profile(profile, top=20):
    """The functions with the most self time and with the most time including their callees,
    from a CDP CPU profile (in samples)."""
    nodes = {n['id']: n for n in profile['nodes']}
    parent = {c: n['id'] for n in profile['nodes'] for c in n.get('children', [])}

    def name(node_id):
        frame = nodes[node_id]['callFrame']
        return f"{frame['functionName'] or '(anonymous)'} {os.path.basename(frame['url'].split('?')[0])}:{frame['lineNumber'] + 1}"
    counts = {}
    for sample in profile.get('samples', []):
        counts[sample] = counts.get(sample, 0) + 1
    total = sum(counts.values()) or 1
    own, inclusive = {}, {}
    for node_id, count in counts.items():
        own[name(node_id)] = own.get(name(node_id), 0) + count
        seen = set()
        at = node_id
        while at is not None:
            n = name(at)
            if n not in seen:
                seen.add(n)
                inclusive[n] = inclusive.get(n, 0) + count
            at = parent.get(at)
    for title, table in (('self time', own), ('with callees', inclusive)):
        print(f'        CPU profile, {title} ({total} samples):', flush=True)
        for n, count in sorted(table.items(), key=lambda kv: -kv[1])[:top]:
            print(f'          {100 * count / total:5.1f} %  {n}', flush=True)


def percentile(values, p):
    if not values:
        return float('nan')
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def figures(label, values, unit='ms'):
    if not values:
        return f'{label}: none'
    return (f'{label}: p50 {percentile(values, 50):.1f} {unit}, p99 {percentile(values, 99):.1f} {unit}, '
            f'max {max(values):.1f} {unit} (n={len(values)})')


def scene(tmp, procs, extra=''):
    """The broker serving the page, the fence grid and the gateway's config (with `extra`
    top-level keys) in `tmp`: (port, ws_port, side, config)."""
    port, ws_port = start_broker(procs, tmp, 'bench', http_dir(tmp))
    side = fence_file(os.path.join(tmp, 'fences'))
    config = os.path.join(tmp, 'geotrigger.json5')
    with open(config, 'w') as f:
        f.write(f"""{{
  gateway: {{ id: "{GATEWAY}", fences: "{tmp}/fences", database: "{tmp}/gateway.db" }},
  broker: {{ port: {port} }},
  output: {{ prefix: "{PREFIX}", statusInterval: 1 }},
{extra}}}
""")
    return port, ws_port, side, config


def main():
    binary = gateway_binary()
    if not os.access(binary, os.X_OK):
        print(f'console bench: {binary} is missing: swift build first', file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix='geotrigger-bench.')
    procs = Processes(tmp)
    driver = None
    try:
        port, ws_port, side, config = scene(tmp, procs)
        t = time.time()
        procs.start('gateway', [binary, 'serve', '--config', config], env={**os.environ, 'GEOTRIGGER_LOG_LEVEL': 'notice'})
        started = wait_until(lambda: '"started"' in retained(port, f'{PREFIX}/status/{GATEWAY}').get(f'{PREFIX}/status/{GATEWAY}', ''), 120)
        print(f'gateway {os.path.relpath(binary, ROOT)} started on {FENCES} fences: {time.time() - t:.1f} s' + ('' if started else ' (NOT started)'), flush=True)

        # The devices' retained states, spread over the fence grid.
        rng = random.Random(41)
        span = side * STEP
        where = {f'd{n}': [LAT0 + rng.random() * span, LON0 + rng.random() * span] for n in range(DEVICES)}
        publisher = Publisher(port, 'bench-publisher')
        t = time.time()
        publisher.send([publisher.packet(f'{PREFIX}/devices/{d}/state', state(d, lat, lon, t), retain=True) for d, (lat, lon) in where.items()])
        publisher.sync()
        print(f'{DEVICES} retained device states published: {time.time() - t:.2f} s', flush=True)

        # 1. Load.
        driver = browser()
        driver.execute_cdp_cmd('Page.addScriptToEvaluateOnNewDocument', {'source': PROBE_JS % DEVICES})
        driver.get(f'http://127.0.0.1:{ws_port}/?prefix={PREFIX}')
        loaded = wait_until(lambda: driver.execute_script(
            'const b = window.__bench; return b.devicesListedAt !== null && b.fencesDrawnAt !== null'
            ' || (b.devicesListedAt !== null && window.__console.store.featuresStatus.state === "error")'), 60, 0.1)
        load = driver.execute_script("""
            const b = window.__bench, s = window.__console.store;
            return { devices: b.devicesListedAt, fences: b.fencesDrawnAt, count: s.devices.size, fenceCount: s.fences.size,
                     status: s.featuresStatus, mapMs: b.mapMs, listsMs: b.listsMs, handleMs: b.handleMs, handled: b.handled,
                     nav: performance.getEntriesByType('navigation').map((e) => e.domContentLoadedEventEnd)[0] };""")
        print(f'load: devices listed ({load["count"]}) at {load["devices"] / 1000 if load["devices"] else float("nan"):.2f} s, '
              f'fences drawn ({load["fenceCount"]}, "{load["status"]["text"]}") at {load["fences"] / 1000 if load["fences"] else float("nan"):.2f} s'
              f' after navigation{"" if loaded else " (NOT reached within 60 s)"}; DOMContentLoaded at {load["nav"] / 1000:.2f} s', flush=True)
        print(f'      during load: {len(load["mapMs"])} map renders, {sum(load["mapMs"]):.0f} ms in all (longest {max(load["mapMs"] or [0]):.0f} ms); '
              f'{len(load["listsMs"])} list renders, {sum(load["listsMs"]):.0f} ms (longest {max(load["listsMs"] or [0]):.0f} ms); '
              f'store.handle {load["handleMs"]:.0f} ms for {load["handled"]} messages', flush=True)
        if load['fenceCount'] < FENCES:
            # The features reply did not bring them all (mosquitto's websockets listener is slow
            # with large messages; the reply is cut at 900 KiB): the fence set as the gateway
            # would answer it, handed to the store directly, to time the drawing.
            with open(os.path.join(tmp, 'fences', 'bench.geojson')) as f:
                collection = json.load(f)
            for feature in collection['features']:
                feature['properties'] = {'layer': 'bench', 'fence': feature['id'], 'name': None, 'buffer': 0,
                                         'triggers': ['bench'], 'properties': feature['properties']}
            collection['truncated'] = False
            drawn = driver.execute_script("""const b = window.__bench; b.fencesDrawnAt = null; b.mapMs = [];
                const t = performance.now(); window.__console.store.setFeatures(arguments[0]);
                return new Promise((done) => { const wait = () => b.fencesDrawnAt !== null
                    ? done({ ms: b.fencesDrawnAt - t, count: window.__console.store.fences.size, longest: Math.max(...b.mapMs) })
                    : setTimeout(wait, 5); wait(); });""", collection)
            print(f'      {drawn["count"]} fences handed to the store directly: drawn {drawn["ms"]:.0f} ms later (longest map render {drawn["longest"]:.0f} ms)', flush=True)
        time.sleep(2)

        # 2. Moving devices at RATE a second.
        if PROFILE:
            driver.execute_cdp_cmd('Profiler.enable', {})
            driver.execute_cdp_cmd('Profiler.setSamplingInterval', {'interval': 1000})
            driver.execute_cdp_cmd('Profiler.start', {})
        driver.execute_script("""const b = window.__bench; b.frames = []; b.lags = []; b.lagAt = []; b.mapMs = []; b.listsMs = [];
            b.handleMs = 0; b.handled = 0; b.applied = 0; b.canvasMs = 0; b.recording = true; b.t0 = performance.now();""")
        ids = list(where)
        total = int(RATE * SECONDS)
        batch = max(1, RATE // 100)  # every 10 ms
        start = time.time()
        sent = 0
        late = 0.0
        while sent < total:
            packets = []
            now = time.time()
            for _ in range(min(batch, total - sent)):
                d = ids[sent % len(ids)]
                p = where[d]
                p[0] += rng.uniform(-0.00005, 0.00005)
                p[1] += rng.uniform(-0.00005, 0.00005)
                packets.append(publisher.packet(f'{PREFIX}/devices/{d}/state', state(d, p[0], p[1], now), retain=True))
                sent += 1
            publisher.send(packets)
            due = start + sent / RATE
            if due > time.time():
                time.sleep(due - time.time())
            else:
                late = max(late, time.time() - due)
        publisher.sync()
        published_in = time.time() - start
        last_publish = time.time()
        drained = wait_until(lambda: driver.execute_script('return window.__bench.applied') >= total, 60, 0.05)
        drain = time.time() - last_publish
        time.sleep(0.5)
        run = driver.execute_script("""const b = window.__bench; b.recording = false;
            return { frames: b.frames, lags: b.lags, lagAt: b.lagAt, applied: b.applied, mapMs: b.mapMs, listsMs: b.listsMs,
                     handleMs: b.handleMs, handled: b.handled, t0: b.t0, canvasMs: b.canvasMs,
                     busy: b.frames.length > 1 ? b.frames[b.frames.length - 1] - b.frames[0] : 0 };""")
        publisher.close()
        if PROFILE:
            print_profile(driver.execute_cdp_cmd('Profiler.stop', {})['profile'])
        intervals = [b - a for a, b in zip(run['frames'], run['frames'][1:])]
        print(f'moving: {total} state messages in {published_in:.2f} s ({total / published_in:.0f}/s asked {RATE}/s; publisher at most {late * 1000:.0f} ms behind schedule)', flush=True)
        print(f'        applied by the store: {run["applied"]} of {total}; '
              + (f'all applied {drain:.2f} s after the last publish' if drained else f'NOT all applied 60 s after the last publish'), flush=True)
        print('        ' + figures('frame interval', intervals) + f'; frames over 50 ms: {sum(1 for i in intervals if i > 50)}', flush=True)
        print('        ' + figures('lag publish -> store', run['lags']), flush=True)
        per_second = {}
        for lag, at in zip(run['lags'], run['lagAt']):
            per_second.setdefault(int((at - run['t0']) // 1000), []).append(lag)
        print('        lag p50 by second: ' + ', '.join(f'{s}s {percentile(v, 50):.0f} ms' for s, v in sorted(per_second.items())), flush=True)
        print('        ' + figures('map render', run['mapMs']) + f', {sum(run["mapMs"]):.0f} ms in all', flush=True)
        print('        ' + figures('list render', run['listsMs']) + f', {sum(run["listsMs"]):.0f} ms in all', flush=True)
        print(f'        store.handle: {run["handleMs"]:.0f} ms for {run["handled"]} messages; Leaflet canvas repaints: {run["canvasMs"]:.0f} ms; '
              f'frames span {run["busy"]:.0f} ms', flush=True)
        behind = not drained or percentile(run['lags'], 99) > 1000
        print(f'falls behind at {RATE}/s: {"yes" if behind else "no"} (targets: load under 5 s; {RATE}/s without falling behind)', flush=True)

        # 3. The time slider replaying an hour of every device's track.
        time.sleep(1)
        made = driver.execute_script(REPLAY_SETUP_JS)
        print(f'replay: {made["devices"]} tracks of {made["positions"]} positions each handed to the slider in {made["ms"]:.0f} ms; '
              f'JS heap {made["heapBefore"]:.0f} -> {made["heapAfter"]:.0f} MB', flush=True)
        time.sleep(1.5)  # the map fitted to the devices
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import Select
        driver.execute_script('const b = window.__bench; b.frames = []; b.mapMs = []; b.listsMs = []; b.replayMs = []; b.canvasMs = 0;')
        Select(driver.find_element(By.ID, 'replay-speed')).select_by_value(str(REPLAY_SPEED))
        driver.find_element(By.CSS_SELECTOR, '[data-action="replay-play"]').click()
        started = time.time()
        first = driver.execute_script('return Date.parse(document.getElementById("replay").dataset.replayTime || "")')
        time.sleep(REPLAY_SECONDS)
        run = driver.execute_script("""const b = window.__bench, bar = document.getElementById('replay');
            const drawn = window.__console.map.deviceLayer.devices.size;
            return { frames: b.frames, mapMs: b.mapMs, listsMs: b.listsMs, replayMs: b.replayMs, canvasMs: b.canvasMs, drawn,
                     time: Date.parse(bar.dataset.replayTime), state: bar.dataset.state, playing: bar.dataset.playing };""")
        wall = time.time() - started
        driver.find_element(By.CSS_SELECTOR, '[data-action="live"]').click()
        intervals = [b - a for a, b in zip(run['frames'], run['frames'][1:])]
        replayed = (run['time'] - first) / 1000 if first == first else float('nan')
        print(f'        played at {REPLAY_SPEED}x for {wall:.1f} s: {replayed:.0f} s of the hour replayed ({replayed / wall:.1f}x), '
              f'{run["drawn"]} devices drawn, state {run["state"]}, playing {run["playing"]}', flush=True)
        print('        ' + figures('frame interval', intervals) + f'; frames over 50 ms: {sum(1 for i in intervals if i > 50)}', flush=True)
        print('        ' + figures('slider frame (positions, events)', run['replayMs']) + f', {sum(run["replayMs"]):.0f} ms in all', flush=True)
        print('        ' + figures('map render', run['mapMs']) + f', {sum(run["mapMs"]):.0f} ms in all', flush=True)
        print('        ' + figures('list render', run['listsMs']) + f', {sum(run["listsMs"]):.0f} ms in all', flush=True)
        return 0
    finally:
        if driver:
            driver.quit()
        procs.stop_all()
        if os.environ.get('BENCH_KEEP'):
            print(f'kept {tmp}')
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
