#!/usr/bin/env python3
"""Fences on and across the real recording ``korita-zbevnica.gpx`` and the visits a GIS
library counts for them, for ``Tests/GatewayTests/ReplayRealRecordingTests.swift``.

The recording is read here with ElementTree, not with the Swift reader: its two timed tracks
(``ACTIVE LOG`` and ``ACTIVE LOG #2``, each a device) in file order; the two saved tracks
without times are not replayed. Fences (layer ``korita``, ``crossings: true``, the default
``crossingMaxGap`` of 300 s):

* ``square-D-K``: a 40 m square centred on fix K of device D (every 40th fix): fixes land in
  it, and the track may leave and come back;
* ``gate-D-K``: a 12 m square centred on the middle of the segment from fix K to fix K+1 of
  device D, for every segment of at least GATE_MIN_SEGMENT metres: no fix lands in it, the
  track jumps over it between two fixes;
* ``gap-D-K``: a 4 m square centred on the middle of a segment of at least 10 m whose fixes
  are more than ``crossingMaxGap`` apart (the receiver paused for 723 s and 999 s): the track
  jumps over it too, but no visit may be inferred there.

A square is moved east in 3 m steps until every fix of the file is at least MARGIN metres
from every fence boundary, so no answer depends on rounding.

Visits, per device and fence, as the engine's rules say (docs/configuration.md "Crossings and schedules", docs/crossings.md)
with the default trigger (enterAfter, exitAfter, exitMargin 0): a fix inside after one outside
(or as the device's first fix) is an ``enter`` at its time, a fix outside after one inside an
``exit`` at its time; two consecutive fixes both outside, at most 300 s apart, whose straight
lon/lat segment meets the fence, give an inferred ``enter`` and ``exit`` at the first and last
point where the segment meets it, timed linearly by the fraction of the segment. Edges and
segments are straight in lon/lat (RFC 7946), so shapely works in lon/lat directly; metres are
those of the local scale (WGS84 radii of curvature) and only size fences and margins.

Output next to this file: ``fences/korita.geojson`` and ``visits.csv``
(``device,fence,type,inferred,time`` with epoch seconds, in time order per device).
Run: ``python3 Tests/Fixtures/tracks/gpxpy/make_visits_oracle.py`` (needs shapely).
"""

import csv
import datetime
import json
import math
import os
import xml.etree.ElementTree as ET

from shapely.geometry import LineString, Point, Polygon

HERE = os.path.dirname(os.path.abspath(__file__))
GPX = os.path.join(HERE, "korita-zbevnica.gpx")
NS = "{http://www.topografix.com/GPX/1/0}"
SQUARE = 40.0
GATE = 12.0
GATE_MIN_SEGMENT = 22.0
SQUARE_EVERY = 40
MARGIN = 1.0
MAX_GAP = 300.0
A = 6378137.0
E2 = (1 / 298.257223563) * (2 - 1 / 298.257223563)


def metres_per_degree(lat):
    s = math.sin(math.radians(lat))
    w = math.sqrt(1 - E2 * s * s)
    meridional = A * (1 - E2) / w**3
    parallel = A / w * math.cos(math.radians(lat))
    return meridional * math.pi / 180, parallel * math.pi / 180


def device_id(name):
    # As docs/commands.md "Tracks and routes" says, replay makes a track name into a device id: '+' and '#' dropped,
    # runs of spaces made one, trimmed.
    return " ".join(name.replace("#", "").replace("+", "").split())


def read_devices():
    devices = []
    for trk in ET.parse(GPX).getroot().findall(NS + "trk"):
        fixes = []
        for p in trk.iter(NS + "trkpt"):
            t = p.find(NS + "time")
            if t is None:
                continue
            when = datetime.datetime.fromisoformat(t.text.replace("Z", "+00:00")).timestamp()
            fixes.append((float(p.get("lon")), float(p.get("lat")), when))
        if fixes:
            devices.append((device_id(trk.find(NS + "name").text), fixes))
    return devices


def square(lon, lat, side):
    per_lat, per_lon = metres_per_degree(lat)
    dx, dy = side / 2 / per_lon, side / 2 / per_lat
    return Polygon([(lon - dx, lat - dy), (lon + dx, lat - dy), (lon + dx, lat + dy), (lon - dx, lat + dy)])


def boundary_metres(polygon, lon, lat):
    per_lat, per_lon = metres_per_degree(lat)
    ring = [((x - lon) * per_lon, (y - lat) * per_lat) for x, y in polygon.exterior.coords]
    return LineString(ring).distance(Point(0, 0))


def clear(polygon, all_fixes):
    return all(boundary_metres(polygon, lon, lat) >= MARGIN for lon, lat, _ in all_fixes)


def visits(fixes, fence):
    out = []
    inside = False
    previous = None
    for lon, lat, t in fixes:
        now_inside = fence.contains(Point(lon, lat))
        if previous is not None and not inside and not now_inside and t - previous[2] <= MAX_GAP:
            segment = LineString([previous[:2], (lon, lat)])
            if segment.intersects(fence):
                cut = segment.intersection(fence)
                fractions = [segment.project(Point(c)) / segment.length for c in cut.coords]
                ta, tb = previous[2], t
                out.append(("enter", True, ta + (tb - ta) * min(fractions)))
                out.append(("exit", True, ta + (tb - ta) * max(fractions)))
        if now_inside != inside:
            out.append(("enter" if now_inside else "exit", False, t))
        inside = now_inside
        previous = (lon, lat, t)
    return out


def main():
    devices = read_devices()
    all_fixes = [f for _, fixes in devices for f in fixes]
    fences = []
    for device, fixes in devices:
        slug = device.replace(" ", "-").lower()
        for k in range(SQUARE_EVERY // 2, len(fixes), SQUARE_EVERY):
            lon, lat, _ = fixes[k]
            per_lat, per_lon = metres_per_degree(lat)
            shift = 0
            while not clear(square(lon + shift * 3 / per_lon, lat, SQUARE), all_fixes):
                shift += 1
            fences.append((f"square-{slug}-{k}", square(lon + shift * 3 / per_lon, lat, SQUARE)))
        for k in range(len(fixes) - 1):
            (lon1, lat1, _), (lon2, lat2, _) = fixes[k], fixes[k + 1]
            per_lat, per_lon = metres_per_degree(lat1)
            length = math.hypot((lon2 - lon1) * per_lon, (lat2 - lat1) * per_lat)
            if fixes[k + 1][2] - fixes[k][2] > MAX_GAP and length >= 10:
                marker = square((lon1 + lon2) / 2, (lat1 + lat2) / 2, 4.0)
                assert clear(marker, all_fixes)
                fences.append((f"gap-{slug}-{k}", marker))
            if length < GATE_MIN_SEGMENT:
                continue
            gate = square((lon1 + lon2) / 2, (lat1 + lat2) / 2, GATE)
            assert clear(gate, all_fixes), f"gate-{slug}-{k} has a fix within {MARGIN} m of its boundary"
            fences.append((f"gate-{slug}-{k}", gate))

    layer = {
        "type": "FeatureCollection",
        "geotrigger": {"crossings": True},
        "features": [
            {
                "type": "Feature",
                "id": fence_id,
                "properties": {"name": fence_id},
                "geometry": {"type": "Polygon", "coordinates": [[[round(x, 9), round(y, 9)] for x, y in polygon.exterior.coords]]},
            }
            for fence_id, polygon in fences
        ],
    }
    os.makedirs(os.path.join(HERE, "fences"), exist_ok=True)
    with open(os.path.join(HERE, "fences", "korita.geojson"), "w") as f:
        json.dump(layer, f, indent=1)
        f.write("\n")
    # Read back the rounded coordinates, so the oracle judges the fences as written.
    rounded = {feature["id"]: Polygon(feature["geometry"]["coordinates"][0]) for feature in layer["features"]}
    rows = []
    for device, fixes in devices:
        events = []
        for fence_id, _ in fences:
            assert clear(rounded[fence_id], all_fixes)
            events += [(t, fence_id, kind, inferred) for kind, inferred, t in visits(fixes, rounded[fence_id])]
        events.sort(key=lambda e: (e[0], e[2] == "enter"))
        rows += [(device, fence_id, kind, "true" if inferred else "false", f"{t:.3f}") for t, fence_id, kind, inferred in events]
    with open(os.path.join(HERE, "visits.csv"), "w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["device", "fence", "type", "inferred", "time"])
        writer.writerows(rows)
    inferred = sum(1 for r in rows if r[3] == "true") // 2
    print(f"{len(fences)} fences, {len(rows)} events ({inferred} inferred visits)")


if __name__ == "__main__":
    main()
