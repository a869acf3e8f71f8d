#!/usr/bin/env python3
"""Writes the geometry oracle used by Tests/CoreTests/GeometryOracleTests.swift.

The expected answers come from shapely and pyproj, not from the Swift code:

* ``inside``: shapely's exact point-in-polygon test in lon/lat (edges straight in lon/lat,
  RFC 7946), on the union of a fence's parts (so a MultiPolygon split at the antimeridian
  is one region), or ``distance <= buffer`` for buffered points and lines (the buffer is
  ``properties.buffer``, else the layer's ``geotrigger.buffer``).
* ``distance``: metres on the WGS84 ellipsoid from the point to the nearest point of the
  unbuffered geometry, negative inside a polygon. Every edge is densified in lon/lat
  (every DENSIFY_METRES) and projected to an azimuthal equidistant projection centred on
  the query point, where the distance from the centre is the geodesic distance.

Inputs: ``nyc-taxi-zones.geojson`` and ``synthetic.geojson`` (written by this script, with
deterministic random shapes) next to this file, and every ``fences/*.geojson`` of the
repository if that folder exists. Output: ``oracle.csv`` next to this file, one point per
line: ``layer,feature,lon,lat,inside,distance`` (layer = file name without ``.geojson``).

Run from anywhere: ``python3 Tests/Fixtures/geometry/make_oracle.py`` (about a minute).
"""

import csv
import glob
import json
import math
import os
import random

import numpy as np
import shapely
from pyproj import Geod, Proj
from shapely.geometry import LineString, MultiPolygon, Polygon
from shapely.ops import unary_union

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
DENSIFY_METRES = 20.0
GEOD = Geod(ellps="WGS84")
A = 6378137.0
E2 = (1 / 298.257223563) * (2 - 1 / 298.257223563)


def metres_per_degree(lat):
    """(east, north) metres per degree of longitude and latitude at `lat` (local plane)."""
    s = math.sin(math.radians(lat))
    w = 1 - E2 * s * s
    north = A * (1 - E2) / (w * math.sqrt(w)) * math.pi / 180
    east = A * math.cos(math.radians(lat)) / math.sqrt(w) * math.pi / 180
    return east, north


def unwrap(lons, ref):
    """Longitudes shifted by 360 into [ref - 180, ref + 180)."""
    out = []
    for lon in lons:
        while lon < ref - 180:
            lon += 360
        while lon >= ref + 180:
            lon -= 360
        out.append(lon)
    return out


# --------------------------------------------------------------------------------------------
# Synthetic fences


def star(rng, lon0, lat0, radius_m, n, jitter=0.35, start=0.0):
    """A star-shaped ring of `n` vertices around (lon0, lat0), closed, counter-clockwise."""
    east, north = metres_per_degree(lat0)
    ring = []
    for i in range(n):
        a = start + 2 * math.pi * i / n
        r = radius_m * (1 - jitter + 2 * jitter * rng.random())
        ring.append([round(lon0 + r * math.cos(a) / east, 7), round(lat0 + r * math.sin(a) / north, 7)])
    ring.append(ring[0])
    return ring


def synthetic_fences():
    rng = random.Random(20240607)
    features = []

    def add(name, geometry, **props):
        props = dict(props)
        props["name"] = name
        features.append({"type": "Feature", "id": name, "properties": props, "geometry": geometry})

    # About 50 km across with long edges (straight in lon/lat) and a 10 km hole.
    add(
        "fifty-km",
        {
            "type": "Polygon",
            "coordinates": [
                star(rng, 7.45, 46.6, 25000, 23, 0.3),
                list(reversed(star(rng, 7.47, 46.61, 5000, 9, 0.2))),
            ],
        },
    )
    # Antimeridian: split at +-180 as RFC 7946 asks; the two parts share the seam from
    # -16.42 to -16.02; the eastern part has a hole; a separate island to the west.
    west_part = [[179.62, -16.50], [180.0, -16.50], [180.0, -16.42], [180.0, -16.02], [179.91, -15.94],
                 [179.70, -16.05], [179.66, -16.31], [179.62, -16.50]]
    east_part = [[-180.0, -16.42], [-179.74, -16.47], [-179.69, -16.20], [-179.81, -15.99],
                 [-180.0, -16.02], [-180.0, -16.42]]
    east_hole = [[-179.90, -16.30], [-179.90, -16.20], [-179.80, -16.22], [-179.83, -16.33], [-179.90, -16.30]]
    island = [[179.40, -16.80], [179.48, -16.80], [179.47, -16.70], [179.41, -16.72], [179.40, -16.80]]
    add("antimeridian", {"type": "MultiPolygon",
                         "coordinates": [[west_part], [east_part, east_hole], [island]]})
    # High latitude: 70 N, about 40 km, with a hole.
    add(
        "arctic-70",
        {
            "type": "Polygon",
            "coordinates": [
                star(rng, 25.0, 70.0, 20000, 17, 0.3),
                list(reversed(star(rng, 25.05, 70.02, 4000, 7, 0.2))),
            ],
        },
    )
    # 85.5 N: a few long edges along parallels, where lon/lat-straight edges bend most.
    add(
        "arctic-85",
        {"type": "Polygon",
         "coordinates": [[[10.0, 85.4], [14.0, 85.4], [14.0, 85.6], [12.0, 85.55], [10.0, 85.6], [10.0, 85.4]]]},
    )
    # Staircase: horizontal edges and many vertices sharing latitudes (rays through vertices),
    # and a hole touching another hole at one vertex.
    stair = [[-3.0, 40.0], [-2.99, 40.0], [-2.99, 40.002], [-2.98, 40.002], [-2.98, 40.004], [-2.97, 40.004],
             [-2.97, 40.0], [-2.96, 40.0], [-2.96, 40.01], [-2.97, 40.008], [-2.98, 40.01], [-2.99, 40.008],
             [-3.0, 40.01], [-3.0, 40.0]]
    hole_a = [[-2.995, 40.006], [-2.99, 40.006], [-2.985, 40.007], [-2.99, 40.0075], [-2.995, 40.006]]
    hole_b = [[-2.985, 40.007], [-2.98, 40.0065], [-2.975, 40.007], [-2.98, 40.0075], [-2.985, 40.007]]
    add("staircase", {"type": "Polygon", "coordinates": [stair, hole_a, hole_b]})
    # Buffered points and lines.
    add("bus-stop", {"type": "Point", "coordinates": [-73.98765, 40.75432]}, buffer=15)
    add("stations", {"type": "MultiPoint",
                     "coordinates": [[2.3522, 48.8566], [2.3601, 48.8612], [2.3455, 48.8529]]}, buffer=40)
    add("polar-beacon", {"type": "Point", "coordinates": [-150.0, 71.3]}, buffer=250)
    road = [[-122.42 + 0.004 * i, 37.77 + 0.0025 * math.sin(i)] for i in range(12)]
    add("road", {"type": "LineString", "coordinates": road}, buffer=25)
    add("trails", {"type": "MultiLineString",
                   "coordinates": [[[24.9, 70.1], [24.95, 70.12], [25.02, 70.11]],
                                   [[25.1, 70.0], [25.1, 70.05]]]}, buffer=10)
    # 40 km along a parallel at 60 N: the edge is not a geodesic.
    add("long-line", {"type": "LineString", "coordinates": [[10.0, 60.0], [10.72, 60.0], [10.72, 60.1]]},
        buffer=100)
    add("dateline-cable", {"type": "MultiLineString",
                           "coordinates": [[[179.95, -17.2], [180.0, -17.21]],
                                           [[-180.0, -17.21], [-179.96, -17.22]]]}, buffer=30)
    return {"type": "FeatureCollection", "features": features}


# --------------------------------------------------------------------------------------------
# Fences as the oracle sees them


class OracleFence:
    """One feature: shapely geometry in unwrapped lon/lat plus densified boundary segments."""

    def __init__(self, layer, index, feature, layer_buffer):
        self.layer = layer
        self.index = index
        geometry = feature["geometry"]
        # The effective buffer without a trigger: the feature's, else the layer's default.
        own = (feature.get("properties") or {}).get("buffer")
        self.buffer = float(own if own is not None else layer_buffer or 0)
        kind = geometry["type"]
        coords = geometry["coordinates"]
        if kind == "Polygon":
            polygons, paths, self.kind = [coords], [], "polygon"
        elif kind == "MultiPolygon":
            polygons, paths, self.kind = coords, [], "polygon"
        elif kind == "Point":
            polygons, paths, self.kind = [], [[coords]], "point"
        elif kind == "MultiPoint":
            polygons, paths, self.kind = [], [[c] for c in coords], "point"
        elif kind == "LineString":
            polygons, paths, self.kind = [], [coords], "line"
        elif kind == "MultiLineString":
            polygons, paths, self.kind = [], coords, "line"
        else:
            raise ValueError(f"{layer}: feature {index}: unsupported {kind}")
        all_lons = [c[0] for p in polygons for r in p for c in r] + [c[0] for p in paths for c in p]
        self.ref = self.reference_longitude(all_lons)
        shapes = []
        for p in polygons:
            rings = [list(zip(unwrap([c[0] for c in r], self.ref), [c[1] for c in r])) for r in p]
            shapes.append(Polygon(rings[0], rings[1:]))
        self.paths = [list(zip(unwrap([c[0] for c in p], self.ref), [c[1] for c in p])) for p in paths]
        if shapes:
            # The union removes the seam between parts split at the antimeridian.
            self.area = unary_union(shapes)
            shapely.prepare(self.area)
            boundary = self.area.boundary
            lines = list(boundary.geoms) if hasattr(boundary, "geoms") else [boundary]
            self.paths = [list(line.coords) for line in lines]
        else:
            self.area = None
        self.vertices = [c for p in self.paths for c in p]
        self.segments = self.densify(self.paths)

    @staticmethod
    def reference_longitude(lons):
        raw = max(lons) - min(lons)
        shifted = [l % 360 for l in lons]
        if max(shifted) - min(shifted) < raw:
            mid = (max(shifted) + min(shifted)) / 2
            return mid - 360 if mid >= 180 else mid
        return (max(lons) + min(lons)) / 2

    @staticmethod
    def densify(paths):
        """Arrays (lon0, lat0, lon1, lat1) of boundary pieces at most DENSIFY_METRES long."""
        out = []
        for path in paths:
            if len(path) == 1:
                out.append((path[0][0], path[0][1], path[0][0], path[0][1]))
                continue
            for (x0, y0), (x1, y1) in zip(path, path[1:]):
                east, north = metres_per_degree((y0 + y1) / 2)
                length = math.hypot((x1 - x0) * east, (y1 - y0) * north)
                n = max(1, math.ceil(length / DENSIFY_METRES))
                ts = np.linspace(0.0, 1.0, n + 1)
                xs, ys = x0 + ts * (x1 - x0), y0 + ts * (y1 - y0)
                out.extend(zip(xs[:-1], ys[:-1], xs[1:], ys[1:]))
        return np.array(out, dtype=float)

    def inside(self, lon, lat):
        return self.area is not None and bool(shapely.contains_xy(self.area, lon, lat))

    def distance(self, lon, lat):
        """Geodesic metres from (lon, lat) (unwrapped) to the geometry, negative inside."""
        seg = self.segments
        east, north = metres_per_degree(lat)
        # First pass in a local plane to keep only the pieces that can be nearest.
        ax, ay = (seg[:, 0] - lon) * east, (seg[:, 1] - lat) * north
        bx, by = (seg[:, 2] - lon) * east, (seg[:, 3] - lat) * north
        rough = origin_to_segments(ax, ay, bx, by)
        keep = rough <= rough.min() * 1.6 + 100.0
        sub = seg[keep]
        aeqd = Proj(proj="aeqd", lat_0=lat, lon_0=lon, ellps="WGS84")
        ax, ay = aeqd(sub[:, 0], sub[:, 1])
        bx, by = aeqd(sub[:, 2], sub[:, 3])
        d = float(origin_to_segments(np.asarray(ax), np.asarray(ay), np.asarray(bx), np.asarray(by)).min())
        return -d if self.inside(lon, lat) else d


def origin_to_segments(ax, ay, bx, by):
    dx, dy = bx - ax, by - ay
    len2 = dx * dx + dy * dy
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(len2 > 0, -(ax * dx + ay * dy) / len2, 0.0)
    t = np.clip(t, 0.0, 1.0)
    return np.hypot(ax + t * dx, ay + t * dy)


# --------------------------------------------------------------------------------------------
# Sample points


def offset(lon, lat, east_m, north_m):
    east, north = metres_per_degree(lat)
    return lon + east_m / east, lat + north_m / north


def near_edge(rng, fence, lo, hi):
    """A point `lo..hi` metres (either side) from a random boundary edge, roughly."""
    path = rng.choice([p for p in fence.paths])
    if len(path) == 1:
        a = rng.uniform(0, 2 * math.pi)
        r = rng.uniform(lo, hi)
        return offset(path[0][0], path[0][1], r * math.cos(a), r * math.sin(a))
    i = rng.randrange(len(path) - 1)
    (x0, y0), (x1, y1) = path[i], path[i + 1]
    t = rng.random()
    x, y = x0 + t * (x1 - x0), y0 + t * (y1 - y0)
    east, north = metres_per_degree(y)
    dx, dy = (x1 - x0) * east, (y1 - y0) * north
    length = math.hypot(dx, dy) or 1.0
    r = rng.uniform(lo, hi) * rng.choice([-1, 1])
    return offset(x, y, -dy / length * r, dx / length * r)


def sample_points(rng, fence, budget):
    """About `budget` points of every kind the brief names, in unwrapped lon/lat."""
    points = []
    xs = [v[0] for v in fence.vertices]
    ys = [v[1] for v in fence.vertices]
    min_x, max_x, min_y, max_y = min(xs), max(xs), min(ys), max(ys)
    east, north = metres_per_degree((min_y + max_y) / 2)
    margin = max(fence.buffer * 3, 200.0)
    gx, gy = margin / east, margin / north
    if fence.kind == "polygon":
        n_in = n_out = budget // 5
        tries = 0
        while n_in > 0 and tries < 20000:  # inside (and in holes, by chance)
            tries += 1
            p = (rng.uniform(min_x, max_x), rng.uniform(min_y, max_y))
            if fence.inside(*p):
                points.append(p)
                n_in -= 1
        while n_out > 0:  # outside, near
            p = (rng.uniform(min_x - gx, max_x + gx), rng.uniform(min_y - gy, max_y + gy))
            if not fence.inside(*p):
                points.append(p)
                n_out -= 1
        for interior in getattr(fence.area, "geoms", [fence.area]):  # inside holes
            for hole in interior.interiors:
                hx, hy = hole.xy
                for _ in range(8):
                    for _ in range(200):
                        p = (rng.uniform(min(hx), max(hx)), rng.uniform(min(hy), max(hy)))
                        if shapely.contains_xy(Polygon(hole), *p):
                            points.append(p)
                            break
        for _ in range(budget * 3 // 10):  # within 1 m of an edge, both sides
            points.append(near_edge(rng, fence, 0.12, 1.0))
        for _ in range(budget // 20):  # closer than the 0.1 m the inside answer may differ by
            points.append(near_edge(rng, fence, 0.0, 0.1))
        for _ in range(budget // 10):  # a few metres to a few hundred
            points.append(near_edge(rng, fence, 1.0, 300.0))
        for _ in range(budget // 10):  # on the latitude of a vertex: the ray passes through it
            v = rng.choice(fence.vertices)
            points.append((rng.uniform(min_x - gx, max_x + gx), v[1]))
    else:
        b = fence.buffer
        for _ in range(budget * 4 // 10):  # near the buffered boundary, both sides
            points.append(near_edge(rng, fence, max(0.0, b - 2.0), b + 2.0))
        for _ in range(budget * 3 // 10):  # inside the buffer
            points.append(near_edge(rng, fence, 0.0, b))
        for _ in range(budget * 3 // 10):  # around it
            points.append(near_edge(rng, fence, 0.0, 4 * b + 50))
    return points


def normalize(lon):
    while lon >= 180:
        lon -= 360
    while lon < -180:
        lon += 360
    return lon


def main():
    synthetic = synthetic_fences()
    with open(os.path.join(HERE, "synthetic.geojson"), "w") as f:
        json.dump(synthetic, f, indent=1)
        f.write("\n")
    layers = [("nyc-taxi-zones", os.path.join(HERE, "nyc-taxi-zones.geojson"), 40),
              ("synthetic", os.path.join(HERE, "synthetic.geojson"), 600)]
    for path in sorted(glob.glob(os.path.join(REPO, "fences", "*.geojson"))):
        layers.append((os.path.splitext(os.path.basename(path))[0], path, 60))
    rng = random.Random(7946)
    rows = []
    for layer, path, budget in layers:
        with open(path) as f:
            collection = json.load(f)
        features = collection["features"]
        layer_buffer = (collection.get("geotrigger") or {}).get("buffer")
        for index, feature in enumerate(features):
            fence = OracleFence(layer, index, feature, layer_buffer)
            for lon, lat in sample_points(rng, fence, budget):
                lon_text, lat_text = f"{normalize(lon):.10f}", f"{lat:.10f}"
                # Answers are computed for the rounded coordinates that are written.
                x = unwrap([float(lon_text)], fence.ref)[0]
                y = float(lat_text)
                d = fence.distance(x, y)
                inside = fence.inside(x, y) if fence.kind == "polygon" else d <= fence.buffer
                rows.append((layer, index, lon_text, lat_text, int(inside), f"{d:.4f}"))
        print(f"{layer}: {len(features)} features, {len(rows)} points so far")
    with open(os.path.join(HERE, "oracle.csv"), "w", newline="") as f:
        f.write("# layer,feature,lon,lat,inside,distance (see make_oracle.py)\n")
        csv.writer(f, lineterminator="\n").writerows(rows)
    print(f"wrote {len(rows)} points")


if __name__ == "__main__":
    main()
