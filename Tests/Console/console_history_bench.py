#!/usr/bin/env python3
"""A bench scene for the console's last hour (docs/console.md "The last hour"): figures
printed, nothing asserted.

10,000 fences (console_bench.py's grid) and 10,000 devices that drove for the last hour,
fed through the real `geotrigger serve` (a json feed): one fix a minute each, 40 m apart, so
the gateway's track store holds an hour of each (60 positions) and its journal the events of
the 2 % of devices its trigger watches (ids `e...`). Then the page in headless Chromium:
1. load: until every device is listed, and until the last hour of events (the `events`
   query) is in;
2. replay at 60x from an hour back: how long until the tracks of the devices in view are in
   (`#replay[data-loading="0"]`, at most BENCH_TRACKS_WAIT s, default 600); then for
   BENCH_SECONDS, while live state messages come at RATE a second: frame intervals, the replay
   clock's pace against the wall clock, and the live messages' lag (publish to the store).

Environment as console_bench.py (GEOTRIGGER_BIN, BENCH_FENCES, BENCH_DEVICES, BENCH_RATE,
BENCH_SECONDS: how long the replay is watched, default 30 s = 30 minutes at 60x).

    swift build -c release --product geotrigger && /usr/bin/python3 Tests/Console/console_history_bench.py
"""
import json
import math
import os
import random
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from console_bench import (DEVICES, GATEWAY, LAT0, LON0, PREFIX, PROBE_JS, RATE, STEP,  # noqa: E402
                           figures, gateway_binary, iso, percentile, scene, state)
from console_test import Processes, Publisher, browser, retained, wait_until  # noqa: E402

SECONDS = float(os.environ.get('BENCH_SECONDS', 30))
TRACKS_WAIT = float(os.environ.get('BENCH_TRACKS_WAIT', 600))
# A fix a minute for the last hour, this far apart (more than their accuracy: the track keeps each).
FIXES, FIX_EVERY, FIX_STEP = 60, 60.0, 40.0
EVENTFUL = 0.02
# The feed of the fixes, and a trigger for the eventful devices.
EXTRA = ('  feeds: [{ name: "fleet", topic: "bench-in/+/location", format: "json" }],\n'
         '  triggers: [{ name: "zones", fences: ["bench"], devices: ["e*"] }],\n')


def status(port):
    text = retained(port, f'{PREFIX}/status/{GATEWAY}').get(f'{PREFIX}/status/{GATEWAY}', '{}')
    try:
        return json.loads(text)
    except ValueError:
        return {}


def main():
    binary = gateway_binary()
    if not os.access(binary, os.X_OK):
        print(f'console history bench: {binary} is missing: swift build first', file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix='geotrigger-history-bench.')
    procs = Processes(tmp)
    driver = None
    try:
        port, ws_port, side, config = scene(tmp, procs, extra=EXTRA)
        procs.start('gateway', [binary, 'serve', '--config', config], env={**os.environ, 'GEOTRIGGER_LOG_LEVEL': 'notice'})
        if not wait_until(lambda: status(port).get('status') == 'started', 120):
            print('gateway did not start', file=sys.stderr)
            return 1

        # The last hour: each device drives straight on (turning back at the grid's edges).
        rng = random.Random(43)
        span = side * STEP
        metres_lat = 111_000.0
        metres_lon = metres_lat * math.cos(math.radians(LAT0))
        devices = {}
        for n in range(DEVICES):
            name = f'e{n}' if n < DEVICES * EVENTFUL else f'd{n}'
            heading = rng.random() * 2 * math.pi
            devices[name] = [LAT0 + rng.random() * span, LON0 + rng.random() * span,
                             FIX_STEP * math.cos(heading) / metres_lat, FIX_STEP * math.sin(heading) / metres_lon]
        publisher = Publisher(port, 'bench-feed')
        start = time.time() - FIXES * FIX_EVERY
        t = time.time()
        for k in range(FIXES):
            fix = iso(start + k * FIX_EVERY)
            packets = []
            for name, d in devices.items():
                for axis, low in ((0, LAT0), (1, LON0)):
                    if not low <= d[axis] + d[axis + 2] <= low + span:
                        d[axis + 2] = -d[axis + 2]
                    d[axis] += d[axis + 2]
                payload = json.dumps({'lat': round(d[0], 7), 'lon': round(d[1], 7), 'accuracy': 5, 'time': fix},
                                     separators=(',', ':')).encode()
                packets.append(publisher.packet(f'bench-in/{name}/location', payload))
            publisher.send(packets)
            publisher.sync()
            # Paced by the gateway: at most two rounds ahead of what it accepted.
            wait_until(lambda: status(port).get('counters', {}).get('accepted', 0) >= (k - 1) * DEVICES, 120, 0.2)
        total = FIXES * DEVICES
        wait_until(lambda: status(port).get('counters', {}).get('accepted', 0) >= total, 120, 0.5)
        counters = status(port).get('counters', {})
        print(f'history: {total} fixes of the last hour fed in {time.time() - t:.1f} s; the gateway accepted '
              f'{counters.get("accepted")} and decided {counters.get("events")} events', flush=True)

        # 1. Load.
        driver = browser()
        driver.execute_cdp_cmd('Page.addScriptToEvaluateOnNewDocument', {'source': PROBE_JS % DEVICES})
        t = time.time()
        driver.get(f'http://127.0.0.1:{ws_port}/?prefix={PREFIX}')
        listed = wait_until(lambda: driver.execute_script('return window.__bench.devicesListedAt !== null'), 120, 0.1)
        devices_at = time.time() - t
        # The events query's pages are in once the count of marks stops growing for 2 s.
        last, steady = -1, time.time()
        while time.time() - t < 180:
            marks = driver.execute_script('return window.__console.store.marks.length')
            if marks != last:
                last, steady = marks, time.time()
            elif marks > 0 and time.time() - steady > 2:
                break
            time.sleep(0.1)
        events_at = steady - t
        print(f'load: {DEVICES} devices listed at {devices_at:.2f} s{"" if listed else " (NOT within 120 s)"}; '
              f'{last} events of the last hour in at {events_at:.2f} s after navigation', flush=True)

        # 2. Replay at 60x while live states come in.
        driver.execute_script("""const r = window.__console.replay; const speed = document.getElementById('replay-speed');
            speed.value = '60'; speed.dispatchEvent(new Event('change'));
            const b = window.__bench; b.frames = []; b.lags = []; b.lagAt = []; b.applied = 0; b.recording = true;
            b.replayStartWall = performance.now();
            document.querySelector('[data-action="replay-play"]').click();
            b.replayStartTime = r.time;""")
        t = time.time()
        # The tracks of the devices in view first, alone (at most TRACKS_WAIT s).
        loaded = wait_until(lambda: driver.execute_script('return document.getElementById("replay").dataset.loading') == '0',
                            TRACKS_WAIT, 0.2)
        loaded_at = time.time() - t
        left = driver.execute_script('return document.getElementById("replay").dataset.loading')
        print(f'replay: the tracks of the devices in view asked by the page (track queries) in {loaded_at:.1f} s'
              + ('' if loaded else f' (NOT all: {left} still asked after {TRACKS_WAIT} s)'), flush=True)
        held = driver.execute_script("""let ok = 0, failed = 0, positions = 0;
            for (const e of window.__console.replay.tracks.values()) { if (e.state === 'ok') ok++; else if (e.state === 'error') failed++; positions += e.track.length; }
            return { ok, failed, positions };""")
        print(f'        tracks held: {held["ok"]} ok, {held["failed"]} failed, {held["positions"]} positions', flush=True)
        # Loading them took the replay to the present (live) or near it: from an hour back again.
        driver.execute_script("""const b = window.__bench, r = window.__console.replay;
            if (r.active) r.goLive();
            document.querySelector('[data-action="replay-play"]').click();
            b.frames = []; b.lags = []; b.lagAt = []; b.applied = 0; b.replayStartWall = performance.now(); b.replayStartTime = r.time;""")
        t = time.time()
        ids = list(devices)
        publisher_live = Publisher(port, 'bench-live')
        sent = 0
        batch = max(1, RATE // 100)
        while time.time() - t < SECONDS:
            now = time.time()
            packets = []
            for _ in range(batch):
                d = ids[sent % len(ids)]
                p = devices[d]
                packets.append(publisher_live.packet(f'{PREFIX}/devices/{d}/state', state(d, p[0], p[1], now), retain=True))
                sent += 1
            publisher_live.send(packets)
            due = t + sent / RATE
            if due > time.time():
                time.sleep(due - time.time())
        publisher_live.sync()
        run = driver.execute_script("""const b = window.__bench, r = window.__console.replay; b.recording = false;
            return { frames: b.frames, lags: b.lags, applied: b.applied, replayed: r.replayed.size,
                     advanced: r.time - b.replayStartTime, wall: performance.now() - b.replayStartWall,
                     state: document.getElementById('replay').dataset.state,
                     loading: document.getElementById('replay').dataset.loading };""")
        intervals = [b - a for a, b in zip(run['frames'], run['frames'][1:])]
        print(f'        then at 60x for {SECONDS:.0f} s with live states: {run["replayed"]} devices replayed ({run["state"]}, '
              f'{run["loading"]} tracks still asked); the replay clock moved {run["advanced"] / 1000:.0f} s in {run["wall"] / 1000:.1f} s of wall clock '
              f'({run["advanced"] / max(run["wall"], 1):.1f}x)', flush=True)
        print('        ' + figures('frame interval', intervals) + f'; frames over 50 ms: {sum(1 for i in intervals if i > 50)}', flush=True)
        print(f'        live: {sent} state messages at {RATE}/s, {run["applied"]} applied; ' + figures('lag publish -> store', run['lags']), flush=True)
        behind = percentile(run['lags'], 99) > 1000 or run['applied'] < sent * 0.99
        print(f'falls behind: {"yes" if behind else "no"}', flush=True)
        publisher.close()
        publisher_live.close()
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
