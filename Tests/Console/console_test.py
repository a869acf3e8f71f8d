#!/usr/bin/env python3
"""The dispatcher console (deploy/console) in headless Chromium against a real mosquitto and
the real `geotrigger serve`.

mosquitto serves the page from a websockets listener (http_dir: a copy of deploy/console plus
Debian's Leaflet) and carries MQTT over that listener; the gateway runs on the repository's
fences; devices walk through the garden and into the fleet depot (mosquitto_pub, json feed).
The page is checked through its data attributes only: every device within 2 m of its last
position, every event (the truth collected with mosquitto_sub) by id, the gateway started,
occupancy as retained, fences when the gateway answers `features`; every event's mark on the
map within 2 m of its position, the event list and the map selecting together (a row click
marks its mark, a click on a mark marks its row); selecting each device marks exactly the
fences of its retained state's `inside`, selecting a fence lists who is inside; alerts
(an expected arrival the gateway decides `missed`, trip and speed events, a gateway gone
offline) stay until acknowledged and survive a reload, as does the sound setting; trips (one
published by the test, one made on the page's form) shown with the state, along and ETA of the
gateway's retained progress while their devices drive, cancelled from the page, a rejected
one's error; then the
same from the retained topics after a reload; a polygon drawn on the map with clicks is published, and a
device walking into it gives an enter event and occupancy on the page; the features queries
ask for the map's view, never the world as a bbox; bad payloads and a refused login get a word
on the page; a login is kept per broker and a link with ?broker= elsewhere sends none; the
page's Content-Security-Policy refuses an inline script; framed by another page it refuses to
run; no JavaScript error in the browser log. Screenshots go to .build/console-artifacts/.

Run through deploy/console-test.sh (which installs Chromium, its driver, Leaflet and
Selenium when missing). Environment: GEOTRIGGER_BIN (default .build/debug/geotrigger),
CONSOLE_ARTIFACTS (default .build/console-artifacts), LEAFLET_DIR.
"""
import datetime
import json
import math
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
BIN = os.environ.get('GEOTRIGGER_BIN', os.path.join(ROOT, '.build', 'debug', 'geotrigger'))
ARTIFACTS = os.environ.get('CONSOLE_ARTIFACTS', os.path.join(ROOT, '.build', 'console-artifacts'))
PREFIX = 'ctest'
GATEWAY = 'console-gw'


class Results:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def check(self, name, ok, detail=''):
        if ok:
            self.passed += 1
            print(f'ok   {name}', flush=True)
        else:
            self.failed += 1
            print(f'FAIL {name}{": " + detail if detail else ""}', flush=True)
        return ok

    def skip(self, name, reason):
        self.skipped += 1
        print(f'skip {name}: {reason}', flush=True)


class Processes:
    """Every process the test starts, stopped by PID at the end."""

    def __init__(self, directory):
        self.directory = directory
        self.started = []

    def start(self, name, args, **kwargs):
        log = open(os.path.join(self.directory, f'{name}.log'), 'wb')
        p = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, **kwargs)
        self.started.append((name, p, log))
        return p

    def stop(self, process):
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def stop_all(self):
        for _, p, log in reversed(self.started):
            self.stop(p)
            log.close()


def free_port(taken=()):
    """A loopback port nothing listens on, other than the ports in `taken`."""
    while True:
        with socket.socket() as s:
            s.bind(('127.0.0.1', 0))
            port = s.getsockname()[1]
        if port not in taken:
            return port


def wait_port(port, timeout=30, process=None):
    """Waits until something listens on the port; False at once if `process` exited first."""
    end = time.time() + timeout
    while time.time() < end:
        with socket.socket() as s:
            if s.connect_ex(('127.0.0.1', port)) == 0:
                return True
        if process is not None and process.poll() is not None:
            return False
        time.sleep(0.1)
    raise RuntimeError(f'nothing listens on 127.0.0.1:{port} after {timeout} s')


def wait_until(probe, timeout, interval=0.25):
    """Calls probe until it returns something true or the time is up; returns its last value."""
    end = time.time() + timeout
    value = probe()
    while not value and time.time() < end:
        time.sleep(interval)
        value = probe()
    return value


def metres(a, b):
    lat1, lon1, lat2, lon2 = map(math.radians, (a[0], a[1], b[0], b[1]))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return 2 * 6371008.8 * math.asin(math.sqrt(h))


def leaflet_dir():
    for d in [os.environ.get('LEAFLET_DIR'), '/usr/share/javascript/leaflet', '/usr/share/nodejs/leaflet/dist']:
        if d and os.path.isfile(os.path.join(d, 'leaflet.js')) and os.path.isfile(os.path.join(d, 'leaflet.css')):
            return d
    raise RuntimeError('Leaflet not found: install libjs-leaflet (or set LEAFLET_DIR)')


def http_dir(tmp):
    """deploy/console plus leaflet/, copied (mosquitto serves nothing outside http_dir, and a
    symbolic link out of it counts as outside)."""
    target = os.path.join(tmp, 'http')
    shutil.copytree(os.path.join(ROOT, 'deploy', 'console'), target)
    shutil.copytree(leaflet_dir(), os.path.join(target, 'leaflet'))
    return target


def broker_config(tmp, name, port, ws_port, www, anonymous=True, password_file=None):
    lines = [
        'per_listener_settings false',
        f'listener {port} 127.0.0.1',
        f'listener {ws_port} 127.0.0.1',
        'protocol websockets',
        f'http_dir {www}',
        f'allow_anonymous {"true" if anonymous else "false"}',
        'persistence false',
        'max_queued_messages 100000',
        # Started as root, mosquitto would become user mosquitto and lose the private temp dir.
        'user root',
        f'log_dest file {os.path.join(tmp, name + ".broker.log")}',
    ]
    if password_file:
        lines.append(f'password_file {password_file}')
    path = os.path.join(tmp, name + '.conf')
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    return path



def start_broker(procs, tmp, name, www, anonymous=True, password_file=None):
    """A broker of broker_config on two free ports, listening: (port, ws_port). A port taken by
    someone else between choosing and binding makes mosquitto exit: tried again on new ports."""
    for attempt in range(3):
        port = free_port()
        ws_port = free_port(taken=(port,))
        config = broker_config(tmp, name, port, ws_port, www, anonymous, password_file)
        process = procs.start(f'{name}-broker' if attempt == 0 else f'{name}-broker-{attempt}',
                              ['/usr/sbin/mosquitto', '-c', config])
        if wait_port(port, process=process) and wait_port(ws_port, process=process):
            return port, ws_port
        procs.stop(process)
        print(f'     mosquitto ({name}) exited at start (exit {process.returncode}), trying other ports', flush=True)
    raise RuntimeError(f'mosquitto ({name}) would not start: see {name}.broker.log')


def along(coordinates, step):
    """Points every `step` metres along a [lon, lat] line, as (lat, lon)."""
    points = []
    for (lon1, lat1), (lon2, lat2) in zip(coordinates, coordinates[1:]):
        n = max(1, int(metres((lat1, lon1), (lat2, lon2)) // step))
        for i in range(n):
            t = i / n
            points.append((round(lat1 + (lat2 - lat1) * t, 7), round(lon1 + (lon2 - lon1) * t, 7)))
    lon, lat = coordinates[-1]
    points.append((lat, lon))
    return points


def tracks():
    with open(os.path.join(ROOT, 'deploy', 'routes', 'garden-tour.geojson')) as f:
        tour = json.load(f)['coordinates']
    with open(os.path.join(ROOT, 'fences', 'fleet.geojson')) as f:
        fleet = {feature['id']: feature for feature in json.load(f)['features']}
    road = fleet['road']['geometry']['coordinates']
    depot = fleet['depot']['geometry']['coordinates'][0]
    depot_centre = [sum(c[0] for c in depot[:-1]) / 4, sum(c[1] for c in depot[:-1]) / 4]
    walk = along(tour, 12)
    return {
        'walker-1': walk,
        'walker-2': list(reversed(walk)),
        'walker-3': walk[: len(walk) * 3 // 5],
        # Along the road (backwards) and into the depot, where it stays: occupancy 1.
        'van-1': along(list(reversed(road)) + [depot_centre], 25),
    }


def inside_ring(point, ring):
    """(lat, lon) inside a [lon, lat] ring (even-odd)."""
    lat, lon = point
    result = False
    for (x1, y1), (x2, y2) in zip(ring, ring[1:]):
        if (y1 > lat) != (y2 > lat) and lon < (x2 - x1) * (lat - y1) / (y2 - y1) + x1:
            result = not result
    return result


def second_tracks():
    """Fed after the first ones: a van parked on the road where it crosses site-north (in two
    fences at once: the road's 25 m corridor and the site) and a device standing in no fence."""
    with open(os.path.join(ROOT, 'fences', 'fleet.geojson')) as f:
        fleet = {feature['id']: feature for feature in json.load(f)['features']}
    road = along(fleet['road']['geometry']['coordinates'], 10)
    site = fleet['site-north']['geometry']['coordinates'][0]
    on_site = [i for i, p in enumerate(road) if inside_ring(p, site)]
    stop = on_site[len(on_site) // 2]
    return {
        'parked-1': road[max(0, on_site[0] - 5):stop + 1],
        'idle-1': [(34.4405, -119.7255), (34.4405001, -119.7255001)],
    }


def feed(port, tracks_by_device):
    """Each device's track as json-feed updates, 2 s of fix time apart, ending a little
    before now (mosquitto_pub -l: one message per line)."""
    publishers = []
    now = datetime.datetime.now(datetime.timezone.utc)
    for device, points in tracks_by_device.items():
        start = now - datetime.timedelta(seconds=2 * len(points) + 5)
        lines = []
        for i, (lat, lon) in enumerate(points):
            t = (start + datetime.timedelta(seconds=2 * i)).isoformat(timespec='milliseconds').replace('+00:00', 'Z')
            lines.append(json.dumps({'lat': lat, 'lon': lon, 'accuracy': 4, 'time': t}))
        p = subprocess.Popen(['mosquitto_pub', '-p', str(port), '-q', '1', '-t', f'devices/{device}/location', '-l'],
                             stdin=subprocess.PIPE)
        p.stdin.write(('\n'.join(lines) + '\n').encode())
        p.stdin.close()
        publishers.append(p)
    for p in publishers:
        p.wait(60)


def retained(port, topic):
    """The retained messages under a filter: {topic: payload}."""
    out = subprocess.run(['mosquitto_sub', '-p', str(port), '-v', '-t', topic, '--retained-only', '-W', '2'],
                         capture_output=True, text=True).stdout
    result = {}
    for line in out.splitlines():
        t, _, payload = line.partition(' ')
        result[t] = payload
    return result


class Publisher:
    """MQTT 3.1.1 over a plain TCP socket, QoS 0 only: fast enough for thousands a second."""

    def __init__(self, port, client_id):
        self.socket = socket.create_connection(('127.0.0.1', port))
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # Keepalive 0: it stays idle while the page loads.
        body = b'\x00\x04MQTT\x04\x02\x00\x00' + self.string(client_id)
        self.socket.sendall(b'\x10' + self.length(len(body)) + body)
        ack = self.socket.recv(4)
        if len(ack) != 4 or ack[0] != 0x20 or ack[3] != 0:
            raise RuntimeError(f'CONNACK {ack!r}')

    @staticmethod
    def length(n):
        out = bytearray()
        while True:
            byte, n = n % 128, n // 128
            out.append(byte | (0x80 if n else 0))
            if not n:
                return bytes(out)

    @staticmethod
    def string(s):
        b = s.encode()
        return struct.pack('>H', len(b)) + b

    def packet(self, topic, payload, retain=False):
        body = self.string(topic) + payload
        return bytes([0x30 | (1 if retain else 0)]) + self.length(len(body)) + body

    def send(self, packets):
        self.socket.sendall(b''.join(packets))

    def sync(self):
        """A PINGREQ answered: the broker has taken everything sent before it."""
        self.socket.sendall(b'\xc0\x00')
        buffer = b''
        while not buffer.endswith(b'\xd0\x00'):
            chunk = self.socket.recv(65536)
            if not chunk:
                raise RuntimeError('broker closed the connection')
            buffer += chunk

    def close(self):
        self.socket.sendall(b'\xe0\x00')
        self.socket.close()


def events_seen(path):
    """The events mosquitto_sub collected: {id: event}."""
    events = {}
    with open(path, errors='replace') as f:
        for line in f:
            _, _, payload = line.rstrip('\n').partition(' ')
            try:
                e = json.loads(payload)
            except ValueError:
                continue
            events[e['id']] = e
    return events


def results_seen(path):
    """The expected arrivals' results mosquitto_sub collected: {expectation id: result}."""
    results = {}
    with open(path, errors='replace') as f:
        for line in f:
            topic, _, payload = line.rstrip('\n').partition(' ')
            try:
                results[topic.split('/')[-2]] = json.loads(payload)
            except (ValueError, IndexError):
                continue
    return results


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='milliseconds').replace('+00:00', 'Z')


# The ids of the events the test published itself (publish_event): not in the gateway's journal.
PUBLISHED_BY_TEST = set()


def publish_event(port, trigger, device, event):
    """An event as a gateway publishes it (the schema of docs/topics-and-payloads.md), for the
    types the gateway of this branch does not make yet (trips, speed limits)."""
    PUBLISHED_BY_TEST.add(event['id'])
    body = {'gateway': GATEWAY, 'trigger': trigger, 'device': device, 'notification': event['type'],
            'emitted': now_iso(), 'actions': [], 'properties': {}, **event}
    subprocess.run(['mosquitto_pub', '-p', str(port), '-q', '1', '-t', f'{PREFIX}/events/{trigger}/{device}',
                    '-m', json.dumps(body)], check=True)
    return body


def marks_missing(driver, events):
    """The events (id -> event) whose mark is not on the map within 2 m of their position."""
    shown = {m['event-mark']: m for m in rows(driver, '[data-event-mark]', ['event-mark', 'lat', 'lon', 'type'])}
    misses = []
    for event_id, e in events.items():
        p = e.get('position')
        m = shown.get(event_id)
        if not p:
            misses.append(f'{event_id} ({e["type"]}) has no position')
        elif not m:
            misses.append(f'{event_id} ({e["type"]}) has no mark')
        elif m['type'] != e['type']:
            misses.append(f'{event_id}: mark of type {m["type"]}, event {e["type"]}')
        else:
            d = metres((p['lat'], p['lon']), (float(m['lat']), float(m['lon'])))
            if d > 2:
                misses.append(f'{event_id} ({e["type"]}) marked {d:.1f} m from its position')
    return misses


def click_map_at(driver, x, y):
    """A click on the map at container pixel (x, y) (Selenium offsets count from the centre)."""
    surface = driver.find_element(By.ID, 'map')
    size = surface.size
    ActionChains(driver).move_to_element_with_offset(surface, int(round(x - size['width'] / 2)), int(round(y - size['height'] / 2))).click().perform()


def alert_rows(driver):
    return {a['alert']: a for a in rows(driver, '[data-alert]', ['alert', 'acked', 'resolved', 'kind', 'type'])}


ROWS_JS = """
const [selector, names] = arguments;
return Array.from(document.querySelectorAll(selector), (e) => {
    const row = {};
    for (const n of names) row[n] = e.getAttribute('data-' + n);
    row.text = e.textContent;
    return row;
});
"""


def features_queries(path):
    """The `features` bodies of the queries in mosquitto_sub -v output (topic, space, JSON)."""
    found = []
    with open(path, errors='replace') as f:
        for line in f:
            _, _, payload = line.partition(' ')
            try:
                body = json.loads(payload)
            except ValueError:
                continue
            if isinstance(body, dict) and isinstance(body.get('features'), dict):
                found.append(body['features'])
    return found


def rows(driver, selector, names):
    return driver.execute_script(ROWS_JS, selector, names)


def browser():
    options = Options()
    for argument in ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--window-size=1400,900',
                     '--no-first-run', '--disable-extensions']:
        options.add_argument(argument)
    options.set_capability('goog:loggingPrefs', {'browser': 'ALL'})
    for candidate in ['/usr/bin/chromium', '/usr/bin/chromium-browser']:
        if os.path.exists(candidate):
            options.binary_location = candidate
            break
    driver_path = shutil.which('chromedriver') or '/usr/bin/chromedriver'
    return webdriver.Chrome(service=Service(driver_path), options=options)


class BrowserLog:
    """The browser's console; SEVERE entries are JavaScript errors or failed loads."""

    def __init__(self, driver):
        self.driver = driver
        self.entries = []

    def take(self):
        new = self.driver.get_log('browser')
        self.entries += new
        return new

    def severe(self, entries):
        return [e for e in entries if e.get('level') == 'SEVERE']


def feed_times(port, device, points, start, first=0):
    """points[i] as json-feed updates of `device`, at `start` + 2 s * (first + i)."""
    lines = []
    for i, (lat, lon) in enumerate(points):
        t = (start + datetime.timedelta(seconds=2 * (first + i))).isoformat(timespec='milliseconds').replace('+00:00', 'Z')
        lines.append(json.dumps({'lat': lat, 'lon': lon, 'accuracy': 4, 'time': t}))
    subprocess.run(['mosquitto_pub', '-p', str(port), '-q', '1', '-t', f'devices/{device}/location', '-l'],
                   input=('\n'.join(lines) + '\n').encode(), check=True, timeout=60)


def trip_progress(port, trip):
    """The retained progress of a trip on the broker, as JSON (None when there is none)."""
    payload = retained(port, f'{PREFIX}/trips/{trip}/progress').get(f'{PREFIX}/trips/{trip}/progress')
    return json.loads(payload) if payload else None


def trip_shown_as(driver, trip, progress):
    """The page's trip row and its mark on the map agree with `progress`: '' or what differs."""
    row = rows(driver, f'[data-trip="{trip}"]', ['trip', 'state', 'along', 'eta', 'open'])
    mark = rows(driver, f'[data-trip-mark="{trip}"]', ['trip-mark', 'state', 'lat', 'lon'])
    if len(row) != 1 or len(mark) != 1:
        return f'row {row}, mark {mark}'
    row, mark = row[0], mark[0]
    want = (progress['state'], progress.get('along'), progress.get('eta'))
    got = (row['state'], float(row['along']) if row['along'] is not None else None, row['eta'])
    if got != want or mark['state'] != progress['state'] or row['open'] != 'true':
        return f'row {row}, mark {mark}, progress {progress}'
    return ''


def trip_scene(r, driver, port):
    from selenium.webdriver.support.ui import Select
    with open(os.path.join(ROOT, 'fences', 'fleet.geojson')) as f:
        road = {feature['id']: feature for feature in json.load(f)['features']}['road']['geometry']['coordinates']
    drive = along(road, 10)
    part = drive[: len(drive) * 3 // 5]
    now = datetime.datetime.now(datetime.timezone.utc)
    by = (now + datetime.timedelta(hours=1)).isoformat(timespec='seconds').replace('+00:00', 'Z')

    # 1. A trip published by the test (retained, as a dispatcher would).
    request = {'device': 'tripper-1', 'route': {'layer': 'fleet', 'fence': 'road'}, 'corridor': 30, 'by': by}
    subprocess.run(['mosquitto_pub', '-p', str(port), '-q', '1', '-r', '-t', f'{PREFIX}/trips/test-trip', '-m', json.dumps(request)], check=True)
    r.check('a trip published retained is listed and drawn on the map (requested)',
            wait_until(lambda: rows(driver, '[data-trip="test-trip"][data-state="requested"]', ['trip'])
                       and rows(driver, '[data-trip-mark="test-trip"][data-corridor="30"]', ['trip-mark']), 10),
            str(rows(driver, '[data-trip]', ['trip', 'state'])))
    time.sleep(1)  # the gateway takes the request
    feed_times(port, 'tripper-1', part, now - datetime.timedelta(seconds=2 * len(part) + 5))
    progress = wait_until(lambda: (lambda p: p if p and p['state'] == 'onRoute' and 'eta' in p else None)(trip_progress(port, 'test-trip')), 20)
    if r.check('the gateway follows the trip as its device drives (retained progress onRoute, with an ETA)', bool(progress), str(trip_progress(port, 'test-trip'))):
        differs = wait_until(lambda: not trip_shown_as(driver, 'test-trip', progress), 10) or trip_shown_as(driver, 'test-trip', progress)
        r.check('the page shows the trip\'s state, along and ETA as its progress says', differs is True, str(differs))
        mark = rows(driver, '[data-trip-mark="test-trip"]', ['lat', 'lon'])[0]
        at = metres(part[-1], (float(mark['lat']), float(mark['lon'])))
        # Progress is published at most once per 10 s of fix time (5 fixes, 50 m, behind).
        r.check('the map draws the device\'s place on the route where its progress puts it (within 60 m of its last fix)', at < 60, f'{at:.1f} m')
    shot(driver, 'console-trip.png')

    # 2. A trip made on the page's form, for a device the page knows: the gateway follows it.
    second = drive[: len(drive) // 2]
    start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=2 * len(second) + 10)
    feed_times(port, 'tripper-2', second[:3], start)
    form = driver.find_element(By.ID, 'trip-form')
    chosen = wait_until(lambda: form.find_elements(By.CSS_SELECTOR, 'select[name=device] option[value="tripper-2"]')
                        and form.find_elements(By.CSS_SELECTOR, 'select[name=route] option[value="fleet/road"]'), 15)
    if not r.check('the trip form offers the devices and the line fences', bool(chosen)):
        return
    Select(form.find_element(By.NAME, 'device')).select_by_value('tripper-2')
    Select(form.find_element(By.NAME, 'route')).select_by_value('fleet/road')
    form.find_element(By.NAME, 'corridor').clear()
    form.find_element(By.NAME, 'corridor').send_keys('40')
    form.find_element(By.NAME, 'id').send_keys('page-trip')
    form.find_element(By.CSS_SELECTOR, 'button[type=submit]').click()
    published = wait_until(lambda: retained(port, f'{PREFIX}/trips/page-trip').get(f'{PREFIX}/trips/page-trip'), 10)
    sent = json.loads(published) if published else {}
    r.check('the page publishes the trip\'s request retained (device, route, corridor, by)',
            sent.get('device') == 'tripper-2' and sent.get('route') == {'layer': 'fleet', 'fence': 'road'}
            and sent.get('corridor') == 40 and isinstance(sent.get('by'), str), str(published))
    time.sleep(1)
    feed_times(port, 'tripper-2', second[3:], start, first=3)
    progress = wait_until(lambda: (lambda p: p if p and p['state'] == 'onRoute' else None)(trip_progress(port, 'page-trip')), 20)
    if r.check('the gateway follows the trip made on the page (its progress appears)', bool(progress), str(trip_progress(port, 'page-trip'))):
        differs = wait_until(lambda: not trip_shown_as(driver, 'page-trip', progress), 10) or trip_shown_as(driver, 'page-trip', progress)
        r.check('the page shows that trip\'s progress', differs is True, str(differs))
    cancel = driver.find_elements(By.CSS_SELECTOR, '[data-trip="page-trip"] button[data-action=cancel-trip]')
    if r.check('an open trip is listed with a cancel button', bool(cancel)):
        cancel[0].click()
        gone = lambda: (not retained(port, f'{PREFIX}/trips/page-trip') and not trip_progress(port, 'page-trip')
                        and not rows(driver, '[data-trip="page-trip"], [data-trip-mark="page-trip"]', ['trip']))
        r.check('cancel from the page clears the request and the progress on the broker, the row and the drawing',
                wait_until(gone, 15), str(rows(driver, '[data-trip]', ['trip', 'state'])))

    # 3. A route drawn on the map (click, click, double-click): a GeoJSON LineString route.
    form.find_element(By.CSS_SELECTOR, '[data-action=draw-route]').click()
    surface = driver.find_element(By.ID, 'map')
    for x, y in [(-300, -100), (-200, -100)]:
        ActionChains(driver).move_to_element_with_offset(surface, x, y).click().perform()
        time.sleep(0.4)
    ActionChains(driver).move_to_element_with_offset(surface, -200, 0).double_click().perform()
    time.sleep(0.5)
    form.find_element(By.NAME, 'id').clear()
    form.find_element(By.NAME, 'id').send_keys('drawn-trip')
    form.find_element(By.CSS_SELECTOR, 'button[type=submit]').click()
    published = wait_until(lambda: retained(port, f'{PREFIX}/trips/drawn-trip').get(f'{PREFIX}/trips/drawn-trip'), 10)
    sent = json.loads(published) if published else {}
    route = sent.get('route') or {}
    r.check('a route drawn on the map is published as the trip\'s GeoJSON LineString (3 positions)',
            route.get('type') == 'LineString' and len(route.get('coordinates', [])) == 3 and sent.get('device') == 'tripper-2', str(published))
    r.check('the page lists and draws the trip on its drawn route',
            wait_until(lambda: rows(driver, '[data-trip="drawn-trip"][data-open="true"]', ['trip'])
                       and rows(driver, '[data-trip-mark="drawn-trip"]', ['trip-mark']), 10),
            str(rows(driver, '[data-trip]', ['trip', 'state', 'error'])))
    shot(driver, 'console-trip-drawn.png')
    cancel = driver.find_elements(By.CSS_SELECTOR, '[data-trip="drawn-trip"] button[data-action=cancel-trip]')
    if cancel:
        cancel[0].click()
    r.check('and cancels it from its row', wait_until(lambda: not retained(port, f'{PREFIX}/trips/drawn-trip')
                                                      and not rows(driver, '[data-trip="drawn-trip"]', ['trip']), 15))

    # 4. A request the gateway rejects: its error on the trip's row.
    subprocess.run(['mosquitto_pub', '-p', str(port), '-q', '1', '-r', '-t', f'{PREFIX}/trips/bad-trip', '-m', '{"device": "tripper-1"}'], check=True)
    error = wait_until(lambda: rows(driver, '[data-trip="bad-trip"][data-error]', ['error']), 10)
    r.check('a trip the gateway rejects shows its error on the page', bool(error) and '"route" is missing' in (error[0]['error'] or ''),
            str(rows(driver, '[data-trip]', ['trip', 'error'])))
    subprocess.run(['mosquitto_pub', '-p', str(port), '-q', '1', '-r', '-t', f'{PREFIX}/trips/bad-trip', '-n'], check=True)
    subprocess.run(['mosquitto_pub', '-p', str(port), '-q', '1', '-r', '-t', f'{PREFIX}/trips/test-trip', '-n'], check=True)


def iso_ms(t):
    """Unix seconds as ISO-8601 UTC with milliseconds."""
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).isoformat(timespec='milliseconds').replace('+00:00', 'Z')


def parse_iso(text):
    return datetime.datetime.fromisoformat(text.replace('Z', '+00:00')).timestamp()


def fix_time(e):
    """An event's fix time (Unix seconds): its position's time, else its own, else emitted."""
    for t in [(e.get('position') or {}).get('time'), e.get('time'), e.get('emitted')]:
        if isinstance(t, str):
            return parse_iso(t)
    return None


def publish_track(port, device, fixes, accuracy=4):
    """fixes [(lat, lon, unix seconds)] as json-feed updates of `device`, in order."""
    lines = [json.dumps({'lat': lat, 'lon': lon, 'accuracy': accuracy, 'time': iso_ms(t)}) for lat, lon, t in fixes]
    subprocess.run(['mosquitto_pub', '-p', str(port), '-q', '1', '-t', f'devices/{device}/location', '-l'],
                   input=('\n'.join(lines) + '\n').encode(), check=True, timeout=60)


def thinned(fixes, accuracy=4):
    """The positions the gateway's track keeps of `fixes` (docs/control-plane.md, the track
    query): the first, then one at least 10 s of fix time after the last kept and farther from
    it than the fix's accuracy."""
    kept = []
    for lat, lon, t in fixes:
        if kept and (t < kept[-1][2] + 10 or metres(kept[-1][:2], (lat, lon)) <= accuracy):
            continue
        kept.append((lat, lon, t))
    return kept


def wait_for_events(events_log, timeout=30):
    """The events collected once the collector has been quiet for 2 s."""
    previous, quiet_since = -1, time.time()
    end = time.time() + timeout
    while time.time() < end:
        n = len(events_seen(events_log))
        if n != previous:
            previous, quiet_since = n, time.time()
        elif time.time() - quiet_since > 2:
            break
        time.sleep(0.25)
    return events_seen(events_log)


PAINTED_JS = """
const layer = window.__console.map.deviceLayer, canvas = layer.canvas, ratio = layer.ratio, out = {};
for (const id of arguments[0]) {
    const at = layer.pixelOf(id);
    if (!at) { out[id] = 'not drawn'; continue; }
    if (at[0] < 0 || at[1] < 0 || at[0] >= canvas.width / ratio || at[1] >= canvas.height / ratio) { out[id] = 'out of view'; continue; }
    out[id] = canvas.getContext('2d').getImageData(Math.round(at[0] * ratio), Math.round(at[1] * ratio), 1, 1).data[3];
}
return out;
"""


def history_scene(r, driver, port, events_log):
    """The last hour (docs/console.md "The last hour"): a selected device's track from the
    gateway's `track` query; the time slider at a chosen minute and played at 60x; back to live.
    Returns the events published so far (id -> event)."""
    from selenium.webdriver.support.ui import Select
    now = time.time()
    # A device moving 15 m every 3 s (fix time), the last fix 10 s ago: its track keeps one
    # position per 10 s.
    start = now - 10 - 3 * 59
    tracker = [(round(34.4535 + i * 15 / 111_000, 7), -119.7125, start + 3 * i) for i in range(60)]
    publish_track(port, 'tracker-1', tracker)
    # Two devices walking the garden tour (through its sections: events) over the last 45
    # minutes, a fix every 30 s at most, the last one minutes ago.
    with open(os.path.join(ROOT, 'deploy', 'routes', 'garden-tour.geojson')) as f:
        walk = along(json.load(f)['coordinates'], 12)
    step = min(30.0, 40 * 60 / len(walk))
    begin = now - 45 * 60
    walkers = {
        'replay-1': [(lat, lon, begin + step * i) for i, (lat, lon) in enumerate(walk)],
        'replay-2': [(lat, lon, begin + 60 + step * i) for i, (lat, lon) in enumerate(reversed(walk))],
    }
    for device, fixes in walkers.items():
        publish_track(port, device, fixes)
    truth = wait_for_events(events_log)

    def state(device):
        payload = retained(port, f'{PREFIX}/devices/{device}/state').get(f'{PREFIX}/devices/{device}/state')
        return json.loads(payload) if payload else {}

    def at_last(device, fixes):
        p = state(device).get('position')
        return bool(p) and metres((p['lat'], p['lon']), fixes[-1][:2]) < 0.5
    r.check('the gateway took the tracker\'s and the walkers\' fixes (their retained states at their last fixes)',
            wait_until(lambda: all(at_last(d, f) for d, f in [('tracker-1', tracker)] + list(walkers.items())), 15))
    walker_events = [e for e in truth.values() if e.get('device') in walkers]
    r.check('the walkers made events over the last 45 minutes (fix times)', len(walker_events) >= 4
            and min(fix_time(e) for e in walker_events) < now - 30 * 60, str(len(walker_events)))

    # (a) Selecting the tracker draws its track from the gateway's memory: its published
    # positions thinned to one per 10 s.
    row = wait_until(lambda: driver.find_elements(By.CSS_SELECTOR, '[data-device="tracker-1"]'), 15)
    row[0].click()
    expected = thinned(tracker)

    def track_shown():
        if not rows(driver, '[data-track="tracker-1"][data-state="ok"]', ['track']):
            return None
        return rows(driver, '[data-track="tracker-1"] [data-track-point]', ['lat', 'lon', 'time'])
    points = wait_until(track_shown, 20) or []
    misses = []
    if len(points) != len(expected):
        misses.append(f'{len(points)} points drawn, {len(expected)} expected')
    for p, (lat, lon, t) in zip(points, expected):
        d = metres((lat, lon), (float(p['lat']), float(p['lon'])))
        if d > 2 or abs(parse_iso(p['time']) - t) > 0.1:
            misses.append(f'{p} is {d:.1f} m and {parse_iso(p["time"]) - t:+.2f} s from ({lat}, {lon}, {iso_ms(t)})')
    r.check(f'the selected device\'s track is its published positions thinned to one per 10 s '
            f'({len(tracker)} fixes, {len(expected)} kept; within 2 m, same fix times)', not misses and len(expected) > 10,
            '; '.join(misses[:5]))
    # It moves on while selected: its track grows with the new positions the gateway keeps.
    more = [(round(tracker[-1][0] + (i + 1) * 20 / 111_000, 7), -119.7125, tracker[-1][2] + 5 * (i + 1)) for i in range(5)]
    publish_track(port, 'tracker-1', more)
    grown = thinned(tracker + more)
    r.check(f'the selected device\'s track grows as it moves ({len(expected)} -> {len(grown)} positions, asked again within 5 s)',
            len(grown) > len(expected) and wait_until(lambda: rows(driver, f'[data-track="tracker-1"][data-count="{len(grown)}"]', ['track']), 15),
            str(rows(driver, '[data-track]', ['track', 'state', 'count'])))
    time.sleep(1.2)  # the map flew to the device
    shot(driver, 'console-track-straight.png')
    driver.find_element(By.CSS_SELECTOR, '#selection [data-action=deselect]').click()
    r.check('clearing the selection removes the track',
            wait_until(lambda: not driver.find_elements(By.CSS_SELECTOR, '[data-track]'), 5))

    # (b) The slider at a chosen minute, typed as HH:MM (UTC): each walker where it was then,
    # only the events up to then listed and marked.
    # A walker selected (the map flies to the garden): its track through the garden's sections.
    driver.find_element(By.CSS_SELECTOR, '[data-device="replay-1"]').click()
    r.check('a walker\'s track is drawn when it is selected (every position it kept)',
            wait_until(lambda: rows(driver, f'[data-track="replay-1"][data-state="ok"][data-count="{len(thinned(walkers["replay-1"]))}"]', ['track']), 20),
            str(rows(driver, '[data-track]', ['track', 'state', 'count'])))
    time.sleep(1.5)
    driver.find_element(By.CSS_SELECTOR, '.leaflet-control-zoom-out').click()  # the whole tour in view
    time.sleep(0.8)
    shot(driver, 'console-track.png')
    chosen = (int(now - 20 * 60) // 60) * 60
    at = driver.find_element(By.ID, 'replay-at')
    at.clear()
    at.send_keys(datetime.datetime.fromtimestamp(chosen, datetime.timezone.utc).strftime('%H:%M'))
    at.send_keys('\n')
    bar = driver.find_element(By.ID, 'replay')
    replaying = wait_until(lambda: bar.get_attribute('data-state') == 'replay' and bar.get_attribute('data-replay-time') == iso_ms(chosen), 30)
    r.check(f'the slider goes to the minute typed ({iso_ms(chosen)}) and has the tracks of the devices in view',
            bool(replaying), f'{bar.get_attribute("data-state")} {bar.get_attribute("data-replay-time")} loading {bar.get_attribute("data-loading")}')

    def walkers_at_chosen():
        shown = {d['device']: d for d in rows(driver, '[data-device]', ['device', 'lat', 'lon', 'replayed'])}
        misses = []
        for device, fixes in walkers.items():
            kept = [f for f in thinned(fixes) if f[2] <= chosen]
            d = shown.get(device)
            if not d or d['replayed'] != 'at' or d['lat'] is None:
                misses.append(f'{device}: {d}')
                continue
            m = metres(kept[-1][:2], (float(d['lat']), float(d['lon'])))
            if m > 2:
                misses.append(f'{device} shown {m:.1f} m from where it was')
        # Devices whose first fix came after the chosen minute are not shown.
        for device in ['walker-1', 'walker-2', 'tracker-1']:
            d = shown.get(device)
            if d and d['replayed'] in ('at', 'still'):
                misses.append(f'{device} shown at {d["lat"]}, {d["lon"]} ({d["replayed"]}) before its first fix')
        return misses
    misses = wait_until(lambda: not walkers_at_chosen(), 10) or walkers_at_chosen()
    r.check('at the chosen minute each walker is where it was then (within 2 m); devices not there yet are hidden',
            misses is True, '; '.join(misses) if misses is not True else '')
    truth = events_seen(events_log)
    before = {i for i, e in truth.items() if fix_time(e) is not None and fix_time(e) <= chosen}
    after = {i for i, e in truth.items() if fix_time(e) is not None and fix_time(e) > chosen}
    listed = lambda: {e['event'] for e in rows(driver, '[data-event]', ['event'])}
    marked = lambda: {m['event-mark'] for m in rows(driver, '[data-event-mark]', ['event-mark'])}
    ok = wait_until(lambda: listed() == before and marked() == before, 10)
    r.check(f'only the events up to the chosen minute are listed and marked ({len(before)} of {len(truth)})',
            bool(ok) and len(before) > 0 and len(after) > 0,
            f'listed but later: {sorted(listed() & after)[:5]}; missing: {sorted(before - listed())[:5]}; marks: {len(marked())}')
    missing = marks_missing(driver, {i: truth[i] for i in before})
    r.check('their marks are where they happened (within 2 m)', not missing, '; '.join(missing[:5]))
    painted = driver.execute_script(PAINTED_JS, list(walkers) + ['walker-1'])
    r.check('the walkers are painted on the map where they were; a device with no fix yet is not drawn',
            all(painted[d] in (255, 'out of view') for d in walkers) and 255 in painted.values()
            and painted['walker-1'] == 'not drawn', str(painted))
    shot(driver, 'console-replay.png')
    driver.find_element(By.CSS_SELECTOR, '#selection [data-action=deselect]').click()

    # Played at 60x: a wall second is a minute of the hour.
    Select(driver.find_element(By.ID, 'replay-speed')).select_by_value('60')
    driver.find_element(By.CSS_SELECTOR, '[data-action="replay-play"]').click()
    started = time.time()
    time.sleep(3)
    replay_time = parse_iso(bar.get_attribute('data-replay-time'))
    wall = time.time() - started
    r.check('played at 60x the slider moves a minute per second', bar.get_attribute('data-playing') == 'true'
            and 60 * (wall - 1.5) <= replay_time - chosen <= 60 * (wall + 0.5), f'{replay_time - chosen:.0f} s of replay in {wall:.1f} s')
    driver.find_element(By.CSS_SELECTOR, '[data-action="live"]').click()

    def live_again():
        shown = {d['device']: d for d in rows(driver, '[data-device]', ['device', 'lat', 'lon', 'replayed'])}
        if bar.get_attribute('data-state') != 'live' or bar.get_attribute('data-replay-time'):
            return False
        return all(shown.get(d, {}).get('replayed') is None and shown[d]['lat'] is not None
                   and metres(f[-1][:2], (float(shown[d]['lat']), float(shown[d]['lon']))) < 0.5 for d, f in walkers.items())
    r.check('"Live" goes back to the live view: no replay time, every device at its last position again',
            wait_until(live_again, 10), str(rows(driver, '[data-device^="replay-"]', ['device', 'lat', 'lon', 'replayed'])))
    return events_seen(events_log)


def reload_history_scene(r, driver, truth):
    """(c) After a reload the journal's events of the last hour are back, listed and marked (the
    `events` query): the page saw none of them live."""
    driver.refresh()
    r.check('after a reload the page connects again (history)',
            wait_until(lambda: driver.find_element(By.ID, 'connection').get_attribute('data-state') == 'connected', 20))
    now = time.time()
    journal = {i: e for i, e in truth.items() if i not in PUBLISHED_BY_TEST and fix_time(e) is not None and fix_time(e) > now - 3600 + 60}
    listed = lambda: {e['event'] for e in rows(driver, '[data-event]', ['event'])}
    ok = wait_until(lambda: set(journal) <= listed(), 30)
    r.check(f'after a reload the last hour\'s events are listed again, from the events query ({len(journal)})',
            bool(ok) and len(journal) > 0, f'missing {sorted(set(journal) - listed())[:5]} of {len(journal)}')
    missing = wait_until(lambda: not marks_missing(driver, journal), 10) or marks_missing(driver, journal)
    r.check('and marked on the map where they happened', missing is True, '; '.join(missing[:5]) if missing is not True else '')
    counts = {}
    for e in rows(driver, '[data-event]', ['event']):
        counts[e['event']] = counts.get(e['event'], 0) + 1
    r.check('each event once (the journal\'s and the live ones merged by id)', all(n == 1 for n in counts.values()),
            str({k: n for k, n in counts.items() if n > 1}))
    shot(driver, 'console-history-reload.png')


def shot(driver, name):
    os.makedirs(ARTIFACTS, exist_ok=True)
    path = os.path.join(ARTIFACTS, name)
    driver.save_screenshot(path)
    print(f'     screenshot {os.path.relpath(path, ROOT)}', flush=True)


def check_page(r, driver, label, port, last, truth_events=None):
    """The assertions that hold live and after a reload (retained topics)."""
    def gateway_started():
        g = rows(driver, f'[data-gateway="{GATEWAY}"]', ['gateway', 'status'])
        return g and g[0]['status'] == 'started'
    r.check(f'{label}: gateway {GATEWAY} shown as started', wait_until(gateway_started, 20))

    def devices_at_last():
        shown = {d['device']: d for d in rows(driver, '[data-device]', ['device', 'lat', 'lon'])}
        misses = []
        for device, (lat, lon) in last.items():
            d = shown.get(device)
            if not d or d['lat'] is None:
                misses.append(f'{device} missing')
                continue
            if len(d['lat'].split('.')[-1]) < 6 or len(d['lon'].split('.')[-1]) < 6:
                misses.append(f'{device}: fewer than 6 decimals ({d["lat"]}, {d["lon"]})')
                continue
            m = metres((lat, lon), (float(d['lat']), float(d['lon'])))
            if m > 2:
                misses.append(f'{device} {m:.1f} m from its last position')
        return misses
    misses = wait_until(lambda: not devices_at_last(), 20) or devices_at_last()
    r.check(f'{label}: every device within 2 m of its last position ({len(last)})', misses is True, '; '.join(misses) if misses is not True else '')

    occupancy = {}
    for topic, payload in retained(port, f'{PREFIX}/occupancy/#').items():
        if payload:
            o = json.loads(payload)
            if o['count'] > 0:
                occupancy[topic[len(PREFIX) + len('/occupancy/'):]] = o['count']

    def occupancy_shown():
        shown = {o['occupancy']: int(o['count']) for o in rows(driver, '[data-occupancy]', ['occupancy', 'count'])}
        return shown == occupancy and shown
    ok = wait_until(occupancy_shown, 15)
    shown = {o['occupancy']: o['count'] for o in rows(driver, '[data-occupancy]', ['occupancy', 'count'])}
    r.check(f'{label}: occupancy as retained ({json.dumps(occupancy, sort_keys=True)})', bool(ok) and len(occupancy) > 0, f'page shows {shown}')

    if truth_events is not None:
        def missing_events():
            shown = {e['event'] for e in rows(driver, '[data-event]', ['event'])}
            return [i for i in truth_events if i not in shown]
        missing = wait_until(lambda: not missing_events(), 20) or missing_events()
        r.check(f'{label}: every event by id ({len(truth_events)})', missing is True and len(truth_events) > 0,
                f'{len(missing)} missing, e.g. {missing[:3]}' if missing is not True else 'no events were published')

    status = driver.find_element(By.ID, 'fences-status')
    wait_until(lambda: status.get_attribute('data-state') != 'none', 15)
    state, text = status.get_attribute('data-state'), status.text
    if state == 'error' and 'unknown query' in text:
        r.skip(f'{label}: fences from the features query', f'the gateway does not answer "features" yet; the page says: {text}')
        r.check(f'{label}: the features error is shown on the page', 'features' in text and 'error' in text, text)
    else:
        expected = set()
        for name in ['fleet', 'garden-poi', 'garden-sections']:
            with open(os.path.join(ROOT, 'fences', f'{name}.geojson')) as f:
                expected |= {f'{name}/{feature["id"]}' for feature in json.load(f)['features']}

        def fences_missing():
            shown = {f['fence'] for f in rows(driver, '[data-fence]', ['fence'])}
            return sorted(expected - shown)
        missing = wait_until(lambda: not fences_missing(), 15) or fences_missing()
        r.check(f'{label}: every fence of fences/ listed ({len(expected)})', state == 'ok' and missing is True,
                f'status {state} "{text}", missing {missing}')


def print_log_tails(directory, lines=15):
    """The end of every log the test kept, so a failure in CI explains itself."""
    for name in sorted(os.listdir(directory)):
        if not name.endswith('.log'):
            continue
        with open(os.path.join(directory, name), errors='replace') as f:
            tail = f.read().splitlines()[-lines:]
        print(f'     --- {name} ---')
        for line in tail:
            print(f'     {line}')


def main():
    r = Results()
    if not os.access(BIN, os.X_OK):
        print(f'console test: {BIN} is missing: swift build first', file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix='geotrigger-console.')
    procs = Processes(tmp)
    driver = None
    try:
        www = http_dir(tmp)
        port, ws_port = start_broker(procs, tmp, 'open', www)
        config = os.path.join(tmp, 'geotrigger.json5')
        with open(config, 'w') as f:
            f.write(f"""{{
  gateway: {{ id: "{GATEWAY}", fences: "{ROOT}/fences", database: "{tmp}/gateway.db" }},
  broker: {{ port: {port} }},
  output: {{ prefix: "{PREFIX}", statusInterval: 1, stateInterval: 1, occupancy: true }},
  // One trigger per file layer, as without this key, plus one watching runtime layer
  // "console", where the page's drawn fences go: a runtime layer nothing watches decides nothing.
  triggers: [
    {{ name: "fleet", fences: ["fleet"] }},
    {{ name: "garden-poi", fences: ["garden-poi"] }},
    {{ name: "garden-sections", fences: ["garden-sections"] }},
    {{ name: "console", fences: ["console"] }},
  ],
}}
""")
        procs.start('events', ['mosquitto_sub', '-p', str(port), '-q', '1', '-v', '-t', f'{PREFIX}/events/#'])
        procs.start('results', ['mosquitto_sub', '-p', str(port), '-q', '1', '-v', '-t', f'{PREFIX}/expect/+/result'])
        results_log = os.path.join(tmp, 'results.log')
        # Every query the pages publish (topic, then the JSON), for the features bbox check.
        procs.start('queries', ['mosquitto_sub', '-p', str(port), '-q', '1', '-v', '-t', f'{PREFIX}/query/#'])
        queries_log = os.path.join(tmp, 'queries.log')
        # mosquitto_sub's stdout goes to its log file: that is the truth.
        events_log = os.path.join(tmp, 'events.log')
        procs.start('gateway', [BIN, 'serve', '--config', config], env={**os.environ, 'GEOTRIGGER_LOG_LEVEL': 'notice'})

        driver = browser()
        log = BrowserLog(driver)
        driver.get(f'http://127.0.0.1:{ws_port}/?prefix={PREFIX}')
        connection = driver.find_element(By.ID, 'connection')
        r.check('the page connects over MQTT/WebSocket to the listener it came from',
                wait_until(lambda: connection.get_attribute('data-state') == 'connected', 20), connection.text)
        r.check('the gateway is started before the devices move',
                wait_until(lambda: rows(driver, f'[data-gateway="{GATEWAY}"][data-status="started"]', ['gateway']), 30))

        paths = tracks()
        feed(port, paths)
        # After the others, so that the oldest events (where the map flies below) stay theirs.
        more = second_tracks()
        feed(port, more)
        paths.update(more)
        last = {device: points[-1] for device, points in paths.items()}
        # The events are in once the collector has been quiet for 2 s.
        previous, quiet_since = -1, time.time()
        end = time.time() + 30
        while time.time() < end:
            n = len(events_seen(events_log))
            if n != previous:
                previous, quiet_since = n, time.time()
            elif time.time() - quiet_since > 2:
                break
            time.sleep(0.25)
        truth = events_seen(events_log)
        print(f'     {sum(len(p) for p in paths.values())} updates from {len(paths)} devices, {len(truth)} events published', flush=True)

        check_page(r, driver, 'live', port, last, truth_events=list(truth))
        # The map: every device's marker is painted on the devices' canvas where it stands.
        painted = driver.execute_script('''
            const layer = window.__console.map.deviceLayer, canvas = layer.canvas, ratio = layer.ratio;
            const ctx = canvas.getContext('2d'), out = {};
            for (const id of arguments[0]) {
                const at = layer.pixelOf(id);
                if (!at || at[0] < 0 || at[1] < 0 || at[0] >= canvas.width / ratio || at[1] >= canvas.height / ratio) { out[id] = 'out of view'; continue; }
                out[id] = ctx.getImageData(Math.round(at[0] * ratio), Math.round(at[1] * ratio), 1, 1).data[3];
            }
            return out;''', list(last))
        r.check('every device in view is painted on the map (its marker\'s pixel is opaque)',
                all(v == 255 or v == 'out of view' for v in painted.values()) and any(v == 255 for v in painted.values()), str(painted))

        # Events on the map: every event of the scene has its mark where it happened.
        missing = wait_until(lambda: not marks_missing(driver, truth), 15) or marks_missing(driver, truth)
        r.check(f'every event has its mark on the map within 2 m of its position, of its type ({len(truth)})',
                missing is True and len(truth) > 0, '; '.join(missing[:5]) if missing is not True else 'no events were published')
        painted = driver.execute_script('''
            const layer = window.__console.map.eventLayer, canvas = layer.canvas, ratio = window.devicePixelRatio || 1;
            const ctx = canvas.getContext('2d'), out = {};
            for (const id of arguments[0]) {
                const at = layer.pixelOf(id);
                if (!at || at[0] < 0 || at[1] < 0 || at[0] >= canvas.width / ratio || at[1] >= canvas.height / ratio) { out[id] = 'out of view'; continue; }
                out[id] = ctx.getImageData(Math.round(at[0] * ratio), Math.round(at[1] * ratio), 1, 1).data[3];
            }
            return out;''', list(truth))
        r.check('every event mark in view is painted on the events\' canvas',
                all(v == 'out of view' or v > 0 for v in painted.values()) and any(v != 'out of view' for v in painted.values()),
                str(painted)[:600])

        # The event list and the map select together: a row's click marks its mark ...
        first = sorted(truth.values(), key=lambda e: e['emitted'])[0]
        driver.find_element(By.CSS_SELECTOR, f'[data-event="{first["id"]}"]').click()
        selected_marks = lambda: [m['event-mark'] for m in rows(driver, '[data-event-mark][data-selected]', ['event-mark'])]
        r.check('a click on an event row selects its mark on the map (and only it)',
                wait_until(lambda: selected_marks() == [first['id']], 10)
                and driver.find_element(By.ID, 'selection').get_attribute('data-id') == first['id'], str(selected_marks()))
        driver.find_element(By.CSS_SELECTOR, '#selection [data-action=deselect]').click()
        r.check('the selection is cleared (its clear button)', wait_until(lambda: not selected_marks()
                and not driver.find_elements(By.CSS_SELECTOR, '[data-event][data-selected]'), 5))
        time.sleep(1.2)  # the map flew to the event
        # ... and a click on a mark (one standing apart from the others and from the devices) marks its row.
        apart = driver.execute_script('''
            const c = window.__console, layer = c.map.eventLayer, size = c.map.map.getSize();
            const marks = layer.drawn, devices = c.map.deviceLayer.drawn, out = [];
            for (const [x, y, id] of marks) {
                if (x < 30 || y < 30 || x > size.x - 30 || y > size.y - 30) continue;
                const near = marks.concat(devices).filter(([u, v, other]) => other !== id && Math.hypot(u - x, v - y) < 14);
                if (!near.length) out.push([id, x, y]);
            }
            return out;''')
        if r.check('some event marks in view stand apart to be clicked', bool(apart), str(apart)):
            event_id, x, y = apart[0]
            click_map_at(driver, x, y)
            selected_rows = lambda: [e['event'] for e in rows(driver, '[data-event][data-selected]', ['event'])]
            r.check('a click on an event\'s mark on the map selects its row in the event list (and its mark)',
                    wait_until(lambda: selected_rows() == [event_id] and selected_marks() == [event_id], 10),
                    f'clicked {event_id}; rows {selected_rows()}, marks {selected_marks()}')
            details = driver.find_element(By.ID, 'selection')
            r.check('its details are shown (the selection panel and a popup on the map)',
                    details.get_attribute('data-kind') == 'event' and truth[event_id]['device'] in details.text
                    and bool(driver.find_elements(By.CSS_SELECTOR, '.event-popup')), details.text)
            ActionChains(driver).move_to_element(details).perform()  # no fence tooltip over the mark
            time.sleep(0.5)  # the popup fades in
            shot(driver, 'console-event-selected.png')

        # A device's fences: selecting each device marks exactly the fences of its retained state.
        truth_inside = {}
        for device in last:
            payload = retained(port, f'{PREFIX}/devices/{device}/state').get(f'{PREFIX}/devices/{device}/state')
            truth_inside[device] = sorted({f'{i["layer"]}/{i["fence"]}' for i in json.loads(payload)['inside']}) if payload else None
        for device, expected in sorted(truth_inside.items()):
            driver.find_element(By.CSS_SELECTOR, f'[data-device="{device}"]').click()

            def marked():
                if driver.find_element(By.ID, 'selection').get_attribute('data-id') != device:
                    return None
                return (sorted(f['fence'] for f in rows(driver, '#fences [data-highlighted]', ['fence'])),
                        sorted(f['highlighted-fence'] for f in rows(driver, '[data-highlighted-fence]', ['highlighted-fence'])),
                        sorted(f['in-fence'] for f in rows(driver, '#selection [data-in-fence]', ['in-fence'])))
            ok = wait_until(lambda: marked() == (expected, expected, expected), 10)
            r.check(f'selecting {device} marks exactly the fences it is in ({", ".join(expected or []) or "none"}): '
                    f'the fence list, the map, the selection', bool(ok) and expected is not None,
                    f'fence list, map, selection: {marked()}')
        r.check('the scene has devices in no fence, in one and in two (the checks above are not trivial)',
                {0, 1, 2} <= {len(v or []) for v in truth_inside.values()}, str(truth_inside))
        # A device picked on the map (one standing apart from the others and the event marks):
        # idle-1's row flies the map there, the selection is cleared, its marker clicked.
        driver.find_element(By.CSS_SELECTOR, '[data-device="idle-1"]').click()
        driver.find_element(By.CSS_SELECTOR, '#selection [data-action=deselect]').click()
        time.sleep(1.2)
        apart = driver.execute_script('''
            const c = window.__console, size = c.map.map.getSize();
            const devices = c.map.deviceLayer.drawn, marks = c.map.eventLayer.drawn, out = [];
            for (const [x, y, id] of devices) {
                if (x < 30 || y < 30 || x > size.x - 30 || y > size.y - 30) continue;
                if (!devices.concat(marks).some(([u, v, other]) => other !== id && Math.hypot(u - x, v - y) < 14)) out.push([id, x, y]);
            }
            return out;''')
        if r.check('some device in view stands apart to be clicked on the map', bool(apart), str(apart)):
            device, x, y = apart[0]
            click_map_at(driver, x, y)
            r.check(f'a click on {device}\'s marker on the map selects it (its row and the selection panel)',
                    wait_until(lambda: [d['device'] for d in rows(driver, '[data-device][data-selected]', ['device'])] == [device]
                               and driver.find_element(By.ID, 'selection').get_attribute('data-id') == device, 10),
                    str(rows(driver, '[data-device][data-selected]', ['device'])))
        busiest = max(truth_inside, key=lambda d: len(truth_inside[d] or []))
        driver.find_element(By.CSS_SELECTOR, f'[data-device="{busiest}"]').click()
        triggers = {i['trigger'] for i in json.loads(retained(port, f'{PREFIX}/devices/{busiest}/state')[f'{PREFIX}/devices/{busiest}/state'])['inside']}
        r.check(f'the triggers watching {busiest} (of the fences it is in) are listed',
                wait_until(lambda: {t['watching'] for t in rows(driver, '#selection [data-watching]', ['watching'])} == triggers, 10),
                str(rows(driver, '#selection [data-watching]', ['watching'])))
        time.sleep(1.2)
        shot(driver, 'console-device-fences.png')
        # Selecting a fence lists who is inside (the inside query).
        driver.find_element(By.CSS_SELECTOR, '[data-fence="fleet/depot"] strong').click()
        inside_shown = lambda: ([d['inside-device'] for d in rows(driver, '#selection[data-kind=fence][data-inside=ok] [data-inside-device]', ['inside-device'])],
                                driver.find_element(By.ID, 'selection').get_attribute('data-inside'))
        r.check('selecting the depot lists who is inside: van-1 (the inside query); the depot is highlighted',
                wait_until(lambda: inside_shown()[0] == ['van-1'], 15)
                and [f['highlighted-fence'] for f in rows(driver, '[data-highlighted-fence]', ['highlighted-fence'])] == ['fleet/depot'],
                str(inside_shown()))

        row = driver.find_elements(By.CSS_SELECTOR, '[data-event]')
        if row:
            row[-1].click()  # the oldest: the map flies there
            time.sleep(1.2)
        shot(driver, 'console-live.png')

        # Bad input: a word on the page, no blank page, no script error.
        subprocess.run(['mosquitto_pub', '-p', str(port), '-t', f'{PREFIX}/devices/broken/state', '-m', 'not json {'], check=True)
        subprocess.run(['mosquitto_pub', '-p', str(port), '-t', f'{PREFIX}/devices/odd/state', '-m', '{"device": "odd", "position": "nowhere"}'], check=True)

        def notices():
            return ' | '.join(n['text'] for n in rows(driver, '[data-notice]', ['notice']))
        r.check('a payload that is not JSON is named on the page',
                wait_until(lambda: 'devices/broken/state: payload is not JSON' in notices(), 10), notices())
        r.check('a device state of unknown shape is named on the page',
                wait_until(lambda: 'devices/odd/state: device state of unknown shape' in notices(), 10), notices())
        r.check('the bad payloads leave the device list as it was',
                not rows(driver, '[data-device="broken"], [data-device="odd"]', ['device']))

        # An expected arrival from the page's form: van-1 is in the depot, so it arrives at once.
        form = driver.find_element(By.ID, 'expect-form')
        form.find_element(By.NAME, 'device').send_keys('van-1')
        form.find_element(By.NAME, 'fence').send_keys('fleet/depot')
        form.find_element(By.NAME, 'id').send_keys('van-1-depot')
        form.find_element(By.CSS_SELECTOR, 'button[type=submit]').click()
        decided = wait_until(lambda: rows(driver, '[data-expectation="van-1-depot"][data-result]', ['expectation', 'result']), 15)
        r.check('an expected arrival made on the page gets its result (arrived)', decided and decided[0]['result'] == 'arrived',
                str(rows(driver, '[data-expectation]', ['expectation', 'result'])))

        # One that stays open (walker-1 is in the garden, 30 minutes), then cancelled from its row.
        form.find_element(By.NAME, 'device').clear()
        form.find_element(By.NAME, 'device').send_keys('walker-1')
        form.find_element(By.NAME, 'id').clear()
        form.find_element(By.NAME, 'id').send_keys('walker-1-depot')
        form.find_element(By.CSS_SELECTOR, 'button[type=submit]').click()
        cancel = wait_until(lambda: driver.find_elements(By.CSS_SELECTOR, '[data-expectation="walker-1-depot"] button[data-action=cancel]'), 10)
        if r.check('an open expected arrival is listed with a cancel button', bool(cancel)):
            r.check('the open expected arrival is retained on the broker',
                    bool(retained(port, f'{PREFIX}/expect/walker-1-depot').get(f'{PREFIX}/expect/walker-1-depot')))
            cancel[0].click()
            def cancelled():
                row = rows(driver, '[data-expectation="walker-1-depot"]', ['result'])
                return (not retained(port, f'{PREFIX}/expect/walker-1-depot') and len(row) == 1
                        and row[0]['result'] is None and 'cleared' in row[0]['text'])
            r.check('cancel clears it on the broker and on the page (no result)', wait_until(cancelled, 10),
                    str(rows(driver, '[data-expectation]', ['expectation', 'result'])))

        # Who is inside the depot: the inside query, answered on the page's reply topic.
        depot = driver.find_elements(By.CSS_SELECTOR, '[data-fence="fleet/depot"] button[data-action=inside]')
        if r.check('the depot row offers "who is inside"', bool(depot)):
            depot[0].click()
            answers = driver.find_element(By.ID, 'answers')
            r.check('who is inside the depot: van-1 (the inside query)',
                    wait_until(lambda: 'inside fleet/depot: van-1 (fleet' in answers.text, 15), answers.text)

        # A runtime fence drawn on the map: a circle (centre, edge) published retained.
        form = driver.find_element(By.ID, 'fence-form')
        form.find_element(By.NAME, 'layer').send_keys('console')
        form.find_element(By.NAME, 'id').send_keys('drawn-1')
        form.find_element(By.NAME, 'name').send_keys('Drawn circle')
        driver.find_element(By.CSS_SELECTOR, '[data-draw=circle]').click()
        surface = driver.find_element(By.ID, 'map')
        ActionChains(driver).move_to_element_with_offset(surface, 0, 0).click().perform()
        time.sleep(0.3)
        ActionChains(driver).move_to_element_with_offset(surface, 60, 0).click().perform()

        def drawn():
            payload = retained(port, f'{PREFIX}/fences/console/drawn-1').get(f'{PREFIX}/fences/console/drawn-1')
            return json.loads(payload) if payload else None
        feature = wait_until(drawn, 10)
        r.check('a circle drawn on the map is published as a retained runtime fence (Point with buffer)',
                bool(feature) and feature['geometry']['type'] == 'Point' and feature['properties'].get('buffer', 0) > 0
                and feature['properties'].get('name') == 'Drawn circle', json.dumps(feature))
        time.sleep(1.5)  # the gateway applies runtime fences every 250 ms; a rejection is a notice
        notices_now = ' | '.join(n['text'] for n in rows(driver, '[data-notice]', ['notice']))
        r.check('the gateway does not reject the drawn fence', 'console/drawn-1' not in notices_now, notices_now)
        if driver.find_element(By.ID, 'fences-status').get_attribute('data-state') == 'ok':
            delete = wait_until(lambda: driver.find_elements(By.CSS_SELECTOR, '[data-fence="console/drawn-1"] button[data-action=delete]'), 10)
            if r.check('the drawn fence is listed (features) with a delete button', bool(delete)):
                delete[0].click()
                r.check('delete clears the retained runtime fence', wait_until(lambda: drawn() is None, 10))
                r.check('the deleted fence leaves the list',
                        wait_until(lambda: not driver.find_elements(By.CSS_SELECTOR, '[data-fence="console/drawn-1"]'), 10))
        else:
            r.skip('delete a runtime fence from its row', 'rows of fences come from the features query, which the gateway does not answer yet')
            subprocess.run(['mosquitto_pub', '-p', str(port), '-r', '-q', '1', '-t', f'{PREFIX}/fences/console/drawn-1', '-n'], check=True)

        # A fence drawn as a person would: the polygon tool, clicks on the corners around the
        # an empty spot of the map and a double-click on the last; then a device walks into it and the page
        # shows the gateway's enter event and the occupancy of the drawn fence.
        form = driver.find_element(By.ID, 'fence-form')
        for name, value in [('layer', 'console'), ('id', 'drawn-2'), ('name', 'Drawn square')]:
            form.find_element(By.NAME, name).clear()
            form.find_element(By.NAME, name).send_keys(value)
        driver.find_element(By.CSS_SELECTOR, '[data-draw=polygon]').click()
        surface = driver.find_element(By.ID, 'map')
        # Left of the centre (the oldest event, where the map flew), west of the garden: no fence there.
        corners = [(-400, -80), (-280, -80), (-280, 40), (-400, 40)]
        for x, y in corners[:-1]:
            ActionChains(driver).move_to_element_with_offset(surface, x, y).click().perform()
            time.sleep(0.4)
        shot(driver, 'console-drawing.png')
        r.check('nothing is published while drawing (before the double-click on the last corner)',
                not retained(port, f'{PREFIX}/fences/console/drawn-2'))
        x, y = corners[-1]
        ActionChains(driver).move_to_element_with_offset(surface, x, y).double_click().perform()

        def drawn_polygon():
            payload = retained(port, f'{PREFIX}/fences/console/drawn-2').get(f'{PREFIX}/fences/console/drawn-2')
            return json.loads(payload) if payload else None
        polygon = wait_until(drawn_polygon, 15)
        ring = polygon['geometry']['coordinates'][0] if polygon and polygon['geometry']['type'] == 'Polygon' else []
        if r.check('a polygon drawn with clicks is published as a retained runtime fence (4 corners, name from the form)',
                   len(ring) == 5 and ring[0] == ring[-1] and polygon['properties'].get('name') == 'Drawn square', json.dumps(polygon)):
            centre = (sum(c[1] for c in ring[:-1]) / 4, sum(c[0] for c in ring[:-1]) / 4)
            width = max(c[0] for c in ring) - min(c[0] for c in ring)
            # From well outside the square (west of it by ten widths) to its centre.
            outside = (round(centre[0], 7), round(centre[1] - 10 * width, 7))
            inside = (round(centre[0], 7), round(centre[1], 7))

            def listed():
                return driver.find_elements(By.CSS_SELECTOR, '[data-fence="console/drawn-2"]')
            # The gateway has applied the fence once the features answer lists it.
            r.check('the drawn polygon is listed (features)', wait_until(listed, 15))
            time.sleep(1)
            feed(port, {'courier-1': [outside, inside]})
            last['courier-1'] = inside

            def enter_event():
                return [e for e in events_seen(events_log).values()
                        if e.get('device') == 'courier-1' and e.get('type') == 'enter'
                        and e['fence']['layer'] == 'console' and e['fence']['id'] == 'drawn-2']
            entered = wait_until(enter_event, 20)
            if r.check('the gateway publishes enter for the drawn fence when a device walks in (event on the broker)',
                       len(entered) == 1, str(entered)):
                event_id = entered[0]['id']
                shown = wait_until(lambda: rows(driver, f'[data-event="{event_id}"]', ['event']), 20)
                text = shown[0]['text'] if shown else ''
                r.check('the enter into the drawn fence is in the page\'s event list (by id, naming the fence)',
                        bool(shown) and ('drawn-2' in text or 'Drawn square' in text),
                        f'{event_id}: {shown}; rows: {[e["text"] for e in rows(driver, "[data-event]", ["event"])[:3]]}')
            occupied = wait_until(lambda: rows(driver, '[data-fence="console/drawn-2"] [data-occupancy="console/console/drawn-2"]',
                                               ['occupancy', 'count']), 20)
            r.check('the drawn fence shows occupancy 1 in the fence list',
                    bool(occupied) and occupied[0]['count'] == '1', str(rows(driver, '[data-occupancy]', ['occupancy', 'count'])))
        # Cleared, so the reload below sees the fences of fences/ and the occupancy they hold.
        subprocess.run(['mosquitto_pub', '-p', str(port), '-r', '-q', '1', '-t', f'{PREFIX}/fences/console/drawn-2', '-n'], check=True)
        r.check('the drawn polygon, cleared, leaves the list',
                wait_until(lambda: not driver.find_elements(By.CSS_SELECTOR, '[data-fence="console/drawn-2"]'), 15))

        # The fences are asked for the view the map shows: the first (the whole world in view)
        # without a bbox, the ones after the map was fitted (the runtime fence changes above)
        # with the view's; never the world as a bbox (a gateway finds and sorts every fence for it).
        asked = features_queries(queries_log)
        boxes = [q.get('bbox') for q in asked]
        view = driver.execute_script('return window.__console.map.view()')
        r.check('the features queries ask for the view the map shows, never the world',
                bool(asked) and [-180, -90, 180, 90] not in boxes and any(b is not None for b in boxes)
                and all(b is None or (b[2] - b[0]) % 360 < 359 for b in boxes), f'bboxes asked: {boxes}; the view now: {view}')

        # Alerts: an expected arrival the gateway decides `missed` (walker-2 is not going to the
        # depot within 3 s), trip and speed events (published here as a gateway will), a gateway
        # gone offline; each stays until acknowledged.
        form = driver.find_element(By.ID, 'expect-form')
        for name, value in [('device', 'walker-2'), ('fence', 'fleet/depot'), ('minutes', '0.05'), ('id', 'walker-2-late')]:
            form.find_element(By.NAME, name).clear()
            form.find_element(By.NAME, name).send_keys(value)
        form.find_element(By.CSS_SELECTOR, 'button[type=submit]').click()
        missed = wait_until(lambda: results_seen(results_log).get('walker-2-late'), 30)
        r.check('the gateway decides the expected arrival walker-2-late missed', bool(missed) and missed['result'] == 'missed', str(missed))
        missed_id = missed['id'] if missed else 'none'
        garden = last['walker-1']
        off_route = publish_event(port, 'trips', 'van-1', {'id': 'alert-offroute-1', 'type': 'offRoute', 'trip': 'delivery-7',
                                  'position': {'lat': garden[0] + 0.0002, 'lon': garden[1], 'time': now_iso()}, 'along': 420.5, 'remaining': 900})
        overspeed = publish_event(port, 'speed', 'courier-9', {'id': 'alert-overspeed-1', 'type': 'overspeed', 'visit': 'v1',
                                  'fence': {'id': 'main', 'layer': 'roads', 'name': 'Main St', 'properties': {}},
                                  'position': {'lat': garden[0], 'lon': garden[1] + 0.0003, 'time': now_iso(), 'accuracy': 5}, 'speed': 19.4})
        started = publish_event(port, 'trips', 'van-1', {'id': 'trip-started-1', 'type': 'tripStarted', 'trip': 'delivery-7',
                                'position': {'lat': garden[0] - 0.0002, 'lon': garden[1], 'time': now_iso()}, 'along': 12})
        subprocess.run(['mosquitto_pub', '-p', str(port), '-r', '-q', '1', '-t', f'{PREFIX}/status/ghost-gw', '-m', '{"status": "offline"}'], check=True)
        raised = [missed_id, 'alert-offroute-1', 'alert-overspeed-1', 'gateway:ghost-gw']
        shown = wait_until(lambda: all(alert_rows(driver).get(k, {}).get('acked') == 'false' for k in raised) and alert_rows(driver), 15)
        r.check('an expectation missed, offRoute, overspeed and a gateway offline each raise an alert, unacknowledged',
                bool(shown), str(alert_rows(driver)))
        r.check('a tripStarted raises no alert', 'trip-started-1' not in alert_rows(driver), str(list(alert_rows(driver))))
        others = {e['id']: e for e in (off_route, overspeed, started)}
        missing = wait_until(lambda: not marks_missing(driver, others), 10) or marks_missing(driver, others)
        r.check('trip and speed events (types the map learns later too) have their marks at their positions',
                missing is True, '; '.join(missing) if missing is not True else '')
        publish_event(port, 'trips', 'van-1', {'id': 'alert-back-1', 'type': 'backOnRoute', 'trip': 'delivery-7',
                      'position': {'lat': garden[0], 'lon': garden[1], 'time': now_iso()}, 'along': 430})
        r.check('backOnRoute marks the offRoute alert resolved, still listed unacknowledged',
                wait_until(lambda: alert_rows(driver).get('alert-offroute-1', {}).get('resolved') == 'true', 10)
                and alert_rows(driver)['alert-offroute-1']['acked'] == 'false', str(alert_rows(driver).get('alert-offroute-1')))
        time.sleep(2)
        r.check('the alerts stay while nobody acknowledges them',
                all(alert_rows(driver).get(k, {}).get('acked') == 'false' for k in raised), str(alert_rows(driver)))
        for key in ['alert-overspeed-1', 'gateway:ghost-gw']:
            driver.find_element(By.CSS_SELECTOR, f'[data-alert="{key}"] button[data-action=ack]').click()
        r.check('an acknowledged alert says so (data-acked)',
                wait_until(lambda: all(alert_rows(driver)[k]['acked'] == 'true' for k in ['alert-overspeed-1', 'gateway:ghost-gw']), 5),
                str(alert_rows(driver)))
        sound = driver.find_element(By.ID, 'alert-sound')
        if sound.is_selected():
            sound.click()
        r.check('the alert sound is turned off', wait_until(
            lambda: driver.find_element(By.ID, 'alerts-section').get_attribute('data-sound') == 'off', 5))
        shot(driver, 'console-alerts.png')

        entries = log.take()
        severe = log.severe(entries)
        r.check('no JavaScript error in the browser log (live)', not severe, json.dumps(severe)[:1000])

        driver.refresh()
        r.check('after a reload the page connects again',
                wait_until(lambda: driver.find_element(By.ID, 'connection').get_attribute('data-state') == 'connected', 20))
        check_page(r, driver, 'reload', port, last)
        # The alerts after the reload: the page saw none of their messages again (events and
        # results are not retained) but the unacknowledged ones are back from localStorage, the
        # acknowledged ones stay acknowledged (the ghost's retained offline status raises nothing).
        expected_after = {missed_id: ('false', 'false'), 'alert-offroute-1': ('false', 'true'),
                          'alert-overspeed-1': ('true', 'false'), 'gateway:ghost-gw': ('true', 'false')}
        after = lambda: {k: (a['acked'], a['resolved']) for k, a in alert_rows(driver).items() if k in expected_after}
        r.check('after a reload the unacknowledged alerts are still there, the acknowledged ones acknowledged',
                wait_until(lambda: after() == expected_after, 15), f'{after()}; all: {alert_rows(driver)}')
        r.check('the alert sound stays off after the reload',
                driver.find_element(By.ID, 'alerts-section').get_attribute('data-sound') == 'off'
                and not driver.find_element(By.ID, 'alert-sound').is_selected())
        cues = lambda: driver.find_element(By.ID, 'alerts-section').get_attribute('data-cues')
        publish_event(port, 'trips', 'walker-3', {'id': 'alert-late-1', 'type': 'late', 'trip': 'tour-2',
                      'position': {'lat': last['walker-3'][0], 'lon': last['walker-3'][1], 'time': now_iso()}, 'eta': now_iso()})
        r.check('a new alert with the sound off: listed, no cue',
                wait_until(lambda: alert_rows(driver).get('alert-late-1', {}).get('acked') == 'false', 10) and cues() == '0', cues())
        driver.find_element(By.ID, 'alert-sound').click()
        publish_event(port, 'trips', 'walker-3', {'id': 'alert-missed-1', 'type': 'missed', 'trip': 'tour-2',
                      'position': {'lat': last['walker-3'][0], 'lon': last['walker-3'][1], 'time': now_iso()}})
        r.check('a new alert with the sound on: a cue (WebAudio)',
                wait_until(lambda: 'alert-missed-1' in alert_rows(driver) and cues() == '1', 10), cues())
        driver.find_element(By.CSS_SELECTOR, f'[data-alert="{missed_id}"] button[data-action=ack]').click()
        r.check('the expectation\'s alert, acknowledged after the reload, says so',
                wait_until(lambda: alert_rows(driver)[missed_id]['acked'] == 'true', 5))
        driver.find_element(By.CSS_SELECTOR, '[data-action=ack-all]').click()
        r.check('acknowledge all leaves no alert waiting',
                wait_until(lambda: not [k for k, a in alert_rows(driver).items() if a['acked'] == 'false'], 5)
                and driver.find_element(By.ID, 'count-alerts').text == '0', str(alert_rows(driver)))
        subprocess.run(['mosquitto_pub', '-p', str(port), '-r', '-q', '1', '-t', f'{PREFIX}/status/ghost-gw', '-n'], check=True)
        shot(driver, 'console-reload.png')
        severe = log.severe(log.take())
        r.check('no JavaScript error in the browser log (reload)', not severe, json.dumps(severe)[:1000])

        # A crowd: past WINDOWED_ROWS (lists.js) the devices list holds only the rows in view;
        # scrolled to its end, the last device is there with its position.
        crowd = {f'crowd-{n:03d}': (round(34.4 + n * 1e-5, 7), round(-119.7 - n * 1e-5, 7)) for n in range(400)}
        before = int(driver.find_element(By.ID, 'count-devices').text)
        publisher = Publisher(port, 'crowd')
        stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='milliseconds').replace('+00:00', 'Z')
        publisher.send([publisher.packet(f'{PREFIX}/devices/{d}/state', json.dumps(
            {'device': d, 'position': {'lat': lat, 'lon': lon, 'time': stamp}, 'inside': [], 'updated': stamp}).encode(), retain=True)
            for d, (lat, lon) in crowd.items()])
        publisher.sync()
        r.check('a crowd of 400 more devices is counted',
                wait_until(lambda: driver.find_element(By.ID, 'count-devices').text == str(before + 400), 15),
                driver.find_element(By.ID, 'count-devices').text)
        in_page = len(driver.find_elements(By.CSS_SELECTOR, '#devices > li'))
        box = driver.execute_script("const b = document.getElementById('devices-box'); return [b.clientHeight, b.scrollHeight];")
        r.check('the devices list renders only the rows in view (windowed), in a box that scrolls',
                in_page < 100 and 'windowed' in driver.find_element(By.ID, 'devices').get_attribute('class')
                and box[0] <= 360 and box[1] > 400 * 40, f'{in_page} rows in the page; box {box}')
        driver.execute_script("const b = document.getElementById('devices-box'); b.scrollTop = b.scrollHeight;")
        last_row = wait_until(lambda: rows(driver, '[data-device="crowd-399"]', ['device', 'lat', 'lon']), 10)
        in_page = len(driver.find_elements(By.CSS_SELECTOR, '#devices > li'))
        r.check('scrolled to its end, the last device is listed with its position (still windowed)',
                bool(last_row) and abs(float(last_row[0]['lat']) - crowd['crowd-399'][0]) < 1e-6
                and abs(float(last_row[0]['lon']) - crowd['crowd-399'][1]) < 1e-6 and in_page < 100, f'{last_row}; {in_page} rows')
        publisher.send([publisher.packet(f'{PREFIX}/devices/{d}/state', b'', retain=True) for d in crowd])
        publisher.sync()
        publisher.close()
        r.check('the crowd, cleared, leaves the list whole again',
                wait_until(lambda: driver.find_element(By.ID, 'count-devices').text == str(before), 15)
                and 'windowed' not in driver.find_element(By.ID, 'devices').get_attribute('class'))

        # Trips (docs/trips.md): one published by the test, followed by the gateway as its device
        # drives part of the road; the page shows the state, along and ETA of its retained
        # progress, and draws the device's place on the route.
        trip_scene(r, driver, port)

        # The last hour: a device's track, the time slider, the journal's events after a reload.
        truth = history_scene(r, driver, port, events_log)
        severe = log.severe(log.take())
        r.check('no JavaScript error in the browser log (track, slider)', not severe, json.dumps(severe)[:1000])
        reload_history_scene(r, driver, truth)
        severe = log.severe(log.take())
        r.check('no JavaScript error in the browser log (history after a reload)', not severe, json.dumps(severe)[:1000])

        # A broker that refuses anonymous clients: the login form, a refused login, a good one.
        password_file = os.path.join(tmp, 'passwd')
        subprocess.run(['mosquitto_passwd', '-b', '-c', password_file, 'dispatch', 'secret'], check=True, capture_output=True)
        os.chmod(password_file, 0o600)
        locked_port, locked_ws = start_broker(procs, tmp, 'locked', www, anonymous=False, password_file=password_file)
        locked = procs.started[-1][1]
        locked_config = os.path.join(tmp, 'locked.conf')
        # Served by the first broker, talking to the second: ?broker=.
        driver.get(f'http://127.0.0.1:{ws_port}/?prefix={PREFIX}&broker=ws://127.0.0.1:{locked_ws}/')
        login = driver.find_element(By.ID, 'login')
        r.check('a broker refusing anonymous clients brings the login form', wait_until(login.is_displayed, 15),
                driver.find_element(By.ID, 'connection').text)
        driver.find_element(By.ID, 'login-username').send_keys('dispatch')
        driver.find_element(By.ID, 'login-password').send_keys('wrong')
        login.find_element(By.CSS_SELECTOR, 'button[type=submit]').click()
        message = driver.find_element(By.ID, 'login-message')
        r.check('a refused login is said on the page', wait_until(lambda: login.is_displayed() and 'Login refused' in message.text, 15), message.text)
        shot(driver, 'console-login-refused.png')
        driver.find_element(By.ID, 'login-username').clear()
        driver.find_element(By.ID, 'login-username').send_keys('dispatch')
        driver.find_element(By.ID, 'login-password').clear()
        driver.find_element(By.ID, 'login-password').send_keys('secret')
        login.find_element(By.CSS_SELECTOR, 'button[type=submit]').click()
        r.check('a good login connects',
                wait_until(lambda: driver.find_element(By.ID, 'connection').get_attribute('data-state') == 'connected', 15),
                driver.find_element(By.ID, 'connection').text)
        locked_url = f'ws://127.0.0.1:{locked_ws}/'
        stored = driver.execute_script("return [Object.keys(sessionStorage), Object.keys(localStorage), Object.values(localStorage).join('\\n')]")
        r.check('credentials are kept in sessionStorage only, under the broker they were given to (localStorage holds alerts only)',
                stored[0] == [f'geotrigger-console-credentials {locked_url}'] and all(k.startswith('geotrigger-console-alert') for k in stored[1])
                and 'secret' not in stored[2] and 'password' not in stored[2], str(stored)[:600])
        severe = log.severe(log.take())
        r.check('no JavaScript error in the browser log (login)', not severe, json.dumps(severe)[:1000])

        # The broker goes away and comes back on the same port: the page reconnects by itself
        # (with the login of this tab) and subscribes again.
        procs.stop(locked)
        state = lambda: driver.find_element(By.ID, 'connection').get_attribute('data-state')
        r.check('a lost broker is shown', wait_until(lambda: state() == 'closed', 10), state())
        procs.start('locked-broker-again', ['/usr/sbin/mosquitto', '-c', locked_config])
        wait_port(locked_ws)
        r.check('the page reconnects when the broker is back', wait_until(lambda: state() == 'connected', 20), state())
        subprocess.run(['mosquitto_pub', '-p', str(locked_port), '-u', 'dispatch', '-P', 'secret', '-i', 'probe', '-r', '-q', '1',
                        '-t', f'{PREFIX}/status/after-restart', '-m', '{"status": "started"}'], check=True)
        r.check('and subscribes again (a status published after the restart shows)',
                wait_until(lambda: rows(driver, '[data-gateway="after-restart"][data-status="started"]', ['gateway']), 10))
        # While the broker was down the browser logged failed WebSocket connections; nothing else.
        others = [e for e in log.severe(log.take()) if 'WebSocket connection to' not in e.get('message', '')]
        r.check('no JavaScript error in the browser log (reconnect)', not others, json.dumps(others)[:1000])

        # A link whose ?broker= points elsewhere (here the anonymous broker; a hostile one alike),
        # opened in the tab that logged in to the locked broker: the page connects without the
        # login, which is offered only to the broker it was given to.
        open_log = os.path.join(tmp, 'open.broker.log')
        mark = os.path.getsize(open_log)
        driver.get(f'http://127.0.0.1:{ws_port}/?prefix={PREFIX}&broker=ws://127.0.0.1:{ws_port}/')
        r.check('a page opened with ?broker= elsewhere connects (anonymously) to that broker',
                wait_until(lambda: state() == 'connected', 20), state())

        def connects_since(path, offset):
            with open(path, errors='replace') as f:
                f.seek(offset)
                return [line.strip() for line in f if 'New client connected' in line and ' as console-' in line]
        seen = wait_until(lambda: connects_since(open_log, mark), 10)
        r.check('it sends no stored credentials there (the broker saw no user name)',
                bool(seen) and not any("u'" in line for line in seen), str(seen))
        r.check('the login given to the locked broker is still kept for it alone',
                driver.execute_script('return Object.keys(sessionStorage)') == [f'geotrigger-console-credentials {locked_url}'],
                str(driver.execute_script('return Object.keys(sessionStorage)')))

        # The page's Content-Security-Policy: scripts from its own folder only; an inline script
        # put into the page does not run.
        policy = driver.execute_script(
            "const m = document.querySelector('meta[http-equiv=\"Content-Security-Policy\"]'); return m ? m.content : null")
        r.check('index.html carries a Content-Security-Policy (scripts from the page\'s folder only)',
                bool(policy) and "script-src 'self' blob:" in policy and "default-src 'none'" in policy
                and "object-src 'none'" in policy and "base-uri 'none'" in policy, str(policy))
        injected = driver.execute_script(
            "const s = document.createElement('script'); s.textContent = 'window.__injected = 1'; document.head.appendChild(s);"
            "return window.__injected === undefined ? null : window.__injected")
        r.check('an inline script put into the page is refused by the policy', injected is None, str(injected))
        log.take()  # the refusal is logged (SEVERE), as it should be

        # In another page's frame the console refuses to run: it says so and never connects.
        with open(os.path.join(www, 'framing.html'), 'w') as f:
            f.write(f'<!DOCTYPE html><title>framing</title><iframe id="inner" src="index.html?prefix={PREFIX}" width="900" height="600"></iframe>')
        mark = os.path.getsize(open_log)
        driver.get(f'http://127.0.0.1:{ws_port}/framing.html')
        driver.switch_to.frame(driver.find_element(By.ID, 'inner'))
        framed = wait_until(lambda: driver.find_element(By.ID, 'connection').get_attribute('data-state') == 'framed', 10)
        text = driver.find_element(By.ID, 'connection').text
        started = driver.execute_script('return window.__console !== undefined')
        shot(driver, 'console-framed.png')
        driver.switch_to.default_content()
        r.check('framed by another page, the console refuses to run (says so, starts nothing)',
                framed and 'frame' in text and not started, f'{text!r}; app started: {started}')
        r.check('and opens no MQTT connection', not connects_since(open_log, mark), str(connects_since(open_log, mark)))
    except Exception:
        traceback.print_exc()
        r.check('the console test ran to its end', False)
        if driver:
            try:
                shot(driver, 'console-failure.png')
            except Exception:
                pass
    finally:
        if driver:
            driver.quit()
        procs.stop_all()
        if r.failed:
            keep = os.path.join(ARTIFACTS, 'logs')
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(tmp, keep, ignore=shutil.ignore_patterns('http', '*.db*'))
            print(f'     logs kept in {os.path.relpath(keep, ROOT)}; their last lines:')
            print_log_tails(keep)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f'console: {r.passed} passed, {r.failed} failed, {r.skipped} skipped')
    return 1 if r.failed else 0


if __name__ == '__main__':
    sys.exit(main())
