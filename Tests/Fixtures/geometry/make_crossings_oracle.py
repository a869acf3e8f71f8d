#!/usr/bin/env python3
"""Writes the crossings oracle used by Tests/CoreTests/CrossingOracleTests.swift.

1,000 random sparse segments (fix A, fix B, their times) over the NYC taxi zones
(``nyc-taxi-zones.geojson`` next to this file) and the example layers (``fences/*.geojson``
of the repository), each with, for every fence of its layer that it passes through with both
ends outside, the first point where it meets the fence's buffered geometry and the last one,
and the times there, interpolated linearly by distance along A-B.

The answers come from shapely and pyproj, not from the Swift code, and the same way
``make_oracle.py`` treats geometry:

* edges (and the segment A-B itself) are straight in lon/lat (RFC 7946): they are densified
  in lon/lat (fence edges every DENSIFY_METRES, the segment every SEGMENT_STEP_METRES) before
  they are projected;
* metres are those of an azimuthal equidistant projection (pyproj, WGS84) centred on the
  segment's midpoint, where the buffered geometry is shapely's ``buffer`` of the projected
  fence (polygons: the area grown by the buffer; points and lines: the buffer around them);
  segments are at most MAX_LENGTH long, where the projection's scale error is below 1e-7;
* the effective buffer is the feature's ``properties.buffer``, else the layer's
  ``geotrigger.buffer``, else 0 (as in make_oracle.py);
* the first entry and last exit are the least and greatest distance along the projected,
  densified segment of its intersection with the buffered geometry; their lon/lat come back
  through the inverse projection; time = tA + (tB - tA) * distance / length.

Segments whose answer depends on less than AMBIGUOUS metres are drawn again: an end within
that distance of a buffered boundary, or a fence the segment passes within that distance of
without going that deep into it. (Sphere tracing in the Swift code may step over a boundary
grazed by less than a few centimetres; the brief's tolerances are 1 m and 0.5 s.)

Output: ``crossings.csv`` next to this file, one segment per line:
``layer,lonA,latA,tA,lonB,latB,tB,crossings`` where ``crossings`` is ``;``-separated
``feature:enterLon:enterLat:enterTime:exitLon:exitLat:exitTime`` (empty when none).

Run from anywhere: ``python3 Tests/Fixtures/geometry/make_crossings_oracle.py`` (a minute or two).
"""

import csv
import glob
import json
import math
import os
import random

import numpy as np
import shapely
from pyproj import Proj
from shapely.geometry import LineString, MultiLineString, MultiPoint, Point, Polygon, box
from shapely.ops import unary_union

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
DENSIFY_METRES = 2.0
SEGMENT_STEP_METRES = 0.5
MAX_LENGTH = 4000.0
AMBIGUOUS = 0.5
SEGMENTS = 1000
A = 6378137.0
E2 = (1 / 298.257223563) * (2 - 1 / 298.257223563)


def metres_per_degree(lat):
    """(east, north) metres per degree of longitude and latitude at `lat` (local plane)."""
    s = math.sin(math.radians(lat))
    w = 1 - E2 * s * s
    north = A * (1 - E2) / (w * math.sqrt(w)) * math.pi / 180
    east = A * math.cos(math.radians(lat)) / math.sqrt(w) * math.pi / 180
    return east, north


def densify(coords, step_m):
    """A lon/lat path with points added every `step_m` metres along each lon/lat-straight edge."""
    out = [coords[0]]
    for (x0, y0), (x1, y1) in zip(coords, coords[1:]):
        east, north = metres_per_degree((y0 + y1) / 2)
        n = max(1, math.ceil(math.hypot((x1 - x0) * east, (y1 - y0) * north) / step_m))
        for k in range(1, n + 1):
            out.append((x0 + (x1 - x0) * k / n, y0 + (y1 - y0) * k / n))
    return out


class Fence:
    """One feature in lon/lat (shapely), with its effective buffer."""

    def __init__(self, index, feature, layer_buffer):
        self.index = index
        own = (feature.get("properties") or {}).get("buffer")
        self.buffer = float(own if own is not None else layer_buffer or 0)
        g = feature["geometry"]
        kind, c = g["type"], g["coordinates"]
        if kind == "Polygon":
            self.shape = Polygon(c[0], c[1:])
        elif kind == "MultiPolygon":
            self.shape = unary_union([Polygon(p[0], p[1:]) for p in c])
        elif kind == "Point":
            self.shape = Point(c)
        elif kind == "MultiPoint":
            self.shape = MultiPoint(c)
        elif kind == "LineString":
            self.shape = LineString(c)
        elif kind == "MultiLineString":
            self.shape = MultiLineString(c)
        else:
            raise ValueError(kind)
        self.bounds = self.shape.bounds

    def projected(self, proj, window):
        """The buffered geometry in `proj`'s metres, clipped (in lon/lat) to `window` first."""
        clipped = shapely.clip_by_rect(self.shape, *window) if self.shape.geom_type not in ("Point", "MultiPoint") else self.shape
        if clipped.is_empty:
            return None

        def line(coords):
            xs, ys = zip(*densify(list(coords), DENSIFY_METRES))
            px, py = proj(np.array(xs), np.array(ys))
            return list(zip(px, py))

        parts = []
        for piece in getattr(clipped, "geoms", [clipped]):
            if piece.geom_type == "Polygon":
                parts.append(Polygon(line(piece.exterior.coords), [line(h.coords) for h in piece.interiors]))
            elif piece.geom_type == "LineString":
                parts.append(LineString(line(piece.coords)))
            elif piece.geom_type == "Point":
                parts.append(Point(proj(piece.x, piece.y)))
        if not parts:
            return None
        shape = unary_union(parts)
        if self.buffer > 0:
            shape = shape.buffer(self.buffer, quad_segs=256)
        return shape


def oracle(fences, a, b, ta, tb):
    """The crossings of segment a-b (lon/lat) over `fences`, or None if some answer is ambiguous."""
    mid = ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)
    proj = Proj(proj="aeqd", lat_0=mid[1], lon_0=mid[0], ellps="WGS84")
    xs, ys = zip(*densify([a, b], SEGMENT_STEP_METRES))
    px, py = proj(np.array(xs), np.array(ys))
    path = LineString(list(zip(px, py)))
    start, end = Point(px[0], py[0]), Point(px[-1], py[-1])
    length = path.length
    lo_x, hi_x = min(a[0], b[0]), max(a[0], b[0])
    lo_y, hi_y = min(a[1], b[1]), max(a[1], b[1])
    result = []
    for fence in fences:
        east, north = metres_per_degree(mid[1])
        margin = fence.buffer + 200.0
        window = (lo_x - margin / east, lo_y - margin / north, hi_x + margin / east, hi_y + margin / north)
        fx0, fy0, fx1, fy1 = fence.bounds
        if fx1 < window[0] or fx0 > window[2] or fy1 < window[1] or fy0 > window[3]:
            continue
        region = fence.projected(proj, window)
        if region is None or region.is_empty:
            continue
        boundary = region.boundary
        if boundary.distance(start) < AMBIGUOUS or boundary.distance(end) < AMBIGUOUS:
            return None
        if region.contains(start) or region.contains(end):
            continue  # not both outside: no crossing to infer
        gap = path.distance(region)
        if gap > 0:
            if gap < AMBIGUOUS:
                return None
            continue
        if not path.intersects(region.buffer(-AMBIGUOUS)):
            return None  # only grazes it
        inter = path.intersection(region)
        along = [path.project(Point(c)) for g in getattr(inter, "geoms", [inter]) for c in g.coords]
        first, last = min(along), max(along)
        p, q = path.interpolate(first), path.interpolate(last)
        lon1, lat1 = proj(p.x, p.y, inverse=True)
        lon2, lat2 = proj(q.x, q.y, inverse=True)
        result.append((fence.index, lon1, lat1, ta + (tb - ta) * first / length,
                       lon2, lat2, ta + (tb - ta) * last / length))
    return result


def main():
    layers = [("nyc-taxi-zones", os.path.join(HERE, "nyc-taxi-zones.geojson"))]
    for path in sorted(glob.glob(os.path.join(REPO, "fences", "*.geojson"))):
        layers.append((os.path.splitext(os.path.basename(path))[0], path))
    loaded = []
    for name, path in layers:
        with open(path) as f:
            collection = json.load(f)
        layer_buffer = (collection.get("geotrigger") or {}).get("buffer")
        loaded.append((name, [Fence(i, feat, layer_buffer) for i, feat in enumerate(collection["features"])]))
    rng = random.Random(3131)
    rows = []
    crossed = 0
    while len(rows) < SEGMENTS:
        # Half over the taxi zones (many neighbours, MultiPolygons, long shared edges), half
        # over the small example fences (gates, buffered points and a buffered road).
        name, fences = loaded[0] if rng.random() < 0.5 else rng.choice(loaded[1:])
        target = rng.choice(fences)
        x0, y0, x1, y1 = target.bounds
        east, north = metres_per_degree((y0 + y1) / 2)
        pad = target.buffer + 30
        cx = rng.uniform(x0 - pad / east, x1 + pad / east)
        cy = rng.uniform(y0 - pad / north, y1 + pad / north)
        length = rng.uniform(20.0, MAX_LENGTH if name == "nyc-taxi-zones" else 800.0)
        heading = rng.uniform(0, 2 * math.pi)
        s = rng.random()
        dx, dy = math.cos(heading) * length / east, math.sin(heading) * length / north
        a = (round(cx - dx * s, 8), round(cy - dy * s, 8))
        b = (round(cx + dx * (1 - s), 8), round(cy + dy * (1 - s), 8))
        ta = round(1_796_040_000 + rng.uniform(0, 86_400), 3)
        tb = round(ta + rng.uniform(max(1.0, length / 60), 300.0), 3)
        answer = oracle(fences, a, b, ta, tb)
        if answer is None:
            continue
        crossed += bool(answer)
        cells = ";".join(
            f"{i}:{l1:.9f}:{a1:.9f}:{t1:.4f}:{l2:.9f}:{a2:.9f}:{t2:.4f}" for i, l1, a1, t1, l2, a2, t2 in answer)
        rows.append((name, f"{a[0]:.8f}", f"{a[1]:.8f}", f"{ta:.3f}", f"{b[0]:.8f}", f"{b[1]:.8f}", f"{tb:.3f}", cells))
    with open(os.path.join(HERE, "crossings.csv"), "w", newline="") as f:
        f.write("# layer,lonA,latA,tA,lonB,latB,tB,crossings (see make_crossings_oracle.py)\n")
        csv.writer(f, lineterminator="\n").writerows(rows)
    print(f"wrote {len(rows)} segments, {crossed} crossing at least one fence")


if __name__ == "__main__":
    main()
