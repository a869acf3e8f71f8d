#!/usr/bin/env python3
"""Draws the example fence layers and the garden walking route, then checks them.

Writes fences/garden-sections.geojson, fences/garden-poi.geojson, fences/fleet.geojson and
deploy/routes/garden-tour.geojson from shapes drawn below in local metres (east, north) around
the Santa Barbara Botanic Garden (34.4560 N, 119.7070 W) and a depot in Santa Barbara. The
shapes are illustrative, not surveyed. Then verifies with shapely and pyproj: every ring valid,
sections not overlapping, the route crossing every section, and each point of interest's
distance to the route (within 10 m for most, farther for some).

Usage: python3 deploy/routes/draw-example-data.py [--check]   (--check: verify only, write nothing)
"""
import json, math, os, re, sys
from shapely.geometry import LineString, Point, Polygon, shape, mapping
from shapely.ops import split
from pyproj import Transformer

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
GARDEN = (34.4560, -119.7070)   # lat, lon of the local origin
FLEET = (34.4290, -119.6930)


def projector(origin):
    lat0, lon0 = origin
    proj = f"+proj=aeqd +lat_0={lat0} +lon_0={lon0} +datum=WGS84 +units=m"
    to_geo = Transformer.from_crs(proj, "EPSG:4326", always_xy=True)
    to_local = Transformer.from_crs("EPSG:4326", proj, always_xy=True)
    return to_geo, to_local


def to_lonlat(points, origin):
    to_geo, _ = projector(origin)
    out = []
    for x, y in points:
        lon, lat = to_geo.transform(x, y)
        out.append([round(lon, 7), round(lat, 7)])
    return out


def ring(points, origin):
    coords = to_lonlat(points, origin)
    if coords[0] != coords[-1]:
        coords.append(coords[0])
    return coords


def feature(id, name, description, geometry, **extra):
    props = {"id": id, "name": name, "description": description}
    props.update(extra)
    return {"type": "Feature", "id": id, "properties": props, "geometry": geometry}


def collection(features, defaults):
    return {"type": "FeatureCollection", "geotrigger": defaults, "features": features}


# --- Garden sections: an outline split into seven sections by a few straight cuts ------------
OUTLINE = Polygon([(-350, -200), (-100, -265), (150, -235), (340, -150), (365, 60), (250, 235),
                   (0, 275), (-225, 240), (-365, 80)])
WEST_CUT = LineString([(-130, -400), (-70, 400)])
EAST_CUT = LineString([(110, -400), (170, 400)])
MIDDLE_CUT = LineString([(-500, 10), (500, 40)])
ISLAND_CUT = LineString([(100, 150), (500, 90)])


def pieces(polygon, cut):
    return sorted(split(polygon, cut).geoms, key=lambda p: (p.centroid.y, p.centroid.x))


def with_shared_vertices(polygons):
    """Adds to each polygon the vertices of its neighbours that lie on its edges, so that shared
    boundaries have the same vertices on both sides and stay identical after rounding."""
    all_vertices = [v for p in polygons for v in p.exterior.coords]
    out = []
    for p in polygons:
        coords = list(p.exterior.coords)
        new = [coords[0]]
        for a, b in zip(coords, coords[1:]):
            edge = LineString([a, b])
            between = {v for v in all_vertices if v != a and v != b and edge.distance(Point(v)) < 1e-6}
            new += sorted(between, key=lambda v: edge.project(Point(v))) + [b]
        out.append(Polygon(new))
    return out


def sections():
    west, rest = sorted(split(OUTLINE, WEST_CUT).geoms, key=lambda p: p.centroid.x)
    middle, east = sorted(split(rest, EAST_CUT).geoms, key=lambda p: p.centroid.x)
    arroyo, meadow = pieces(west, MIDDLE_CUT)
    redwood, desert = pieces(middle, MIDDLE_CUT)
    oak, east_north = pieces(east, MIDDLE_CUT)
    manzanita, island = pieces(east_north, ISLAND_CUT)
    meadow, arroyo, desert, redwood, oak, manzanita, island = with_shared_vertices(
        [meadow, arroyo, desert, redwood, oak, manzanita, island])
    return [
        ("meadow", "Meadow Section", "Native bunchgrass meadow with wildflowers in spring", meadow),
        ("arroyo", "Arroyo Section", "Sycamores and willows along the seasonal creek", arroyo),
        ("desert", "Desert Section", "Cacti, yuccas and agaves of the California deserts", desert),
        ("redwood", "Redwood Section", "A cool grove of coast redwoods beside Mission Creek", redwood),
        ("oak-woodland", "Oak Woodland", "Coast live oaks shading the lower trails", oak),
        ("manzanita", "Manzanita Section", "Red-barked manzanitas and ceanothus on the slope", manzanita),
        ("island", "Island Section", "Plants of the Channel Islands, some found nowhere else", island),
    ]


# --- The walking tour (local metres), crossing every section away from its edges -------------
TOUR = [(-300, -140), (-250, -60), (-230, 60), (-180, 150), (-60, 200), (40, 130), (60, 60),
        (200, 90), (240, 175), (300, 75), (250, -60), (230, -160), (100, -180), (-20, -120),
        (-40, -40), (-160, -20), (-270, -110)]

# Points of interest: (id, name, description, tour leg, fraction along it, metres to its left)
POIS = [
    ("entrance", "Entrance Gate", "Start of the tour; maps and trail guides", 0, 0.15, 4),
    ("meadow-overlook", "Meadow Overlook", "Bench with a view over the meadow to the Santa Ynez Mountains", 2, 0.5, -6),
    ("cactus-bed", "Cactus Bed", "Barrel cacti and chollas in a sunny rock garden", 4, 0.4, 5),
    ("tea-house", "Tea House", "A shaded rest stop with water", 5, 0.7, 3),
    ("island-ironwood", "Island Ironwood", "Catalina ironwoods, native to the Channel Islands only", 8, 0.5, -7),
    ("manzanita-bench", "Manzanita Bench", "Bench among big-berry manzanitas", 9, 0.6, 4),
    ("oak-picnic", "Oak Grove Picnic Tables", "Picnic tables under old coast live oaks", 11, 0.5, 8),
    ("mission-dam", "Mission Dam", "The 1807 dam and aqueduct built for the Santa Barbara Mission", 13, 0.5, -5),
    ("redwood-bridge", "Redwood Creek Bridge", "Footbridge over the creek in the redwood grove", 14, 0.3, 6),
    ("conservation-center", "Conservation Center", "Seed bank and research building, off the tour path", 12, 0.5, 35),
    ("library", "Blaksley Library", "Botanical library, a short detour from the trail", 15, 0.5, -22),
]


def poi_position(leg, fraction, left):
    (x0, y0), (x1, y1) = TOUR[leg], TOUR[leg + 1]
    dx, dy = x1 - x0, y1 - y0
    length = math.hypot(dx, dy)
    return (x0 + fraction * dx - left * dy / length, y0 + fraction * dy + left * dx / length)


# --- Fleet: a depot, two job sites (one with a hole for a building), a road corridor ----------
DEPOT = [(-120, -80), (60, -90), (70, 40), (-110, 50)]
SITE_NORTH = [(-420, 520), (-240, 500), (-230, 640), (-410, 660)]
SITE_NORTH_BUILDING = [(-360, 560), (-300, 555), (-295, 600), (-355, 605)]
SITE_EAST = [(620, 300), (780, 320), (760, 430), (610, 410)]
ROAD = [(-30, 50), (-60, 200), (-150, 330), (-300, 420), (-270, 510), (-200, 560),
        (100, 450), (400, 360), (600, 350)]


def write(path, obj):
    text = json.dumps(obj, indent=1, ensure_ascii=False)
    # One position per line: [lon, lat] instead of three lines.
    text = re.sub(r"\[\s*(-?[\d.]+),\s*(-?[\d.]+)\s*\]", r"[\1, \2]", text)
    with open(os.path.join(ROOT, path), "w") as f:
        f.write(text + "\n")


def draw():
    secs = [feature(id, name, desc, {"type": "Polygon", "coordinates": [ring(list(p.exterior.coords), GARDEN)]})
            for id, name, desc, p in sections()]
    write("fences/garden-sections.geojson", collection(secs, {
        "message": "IIf($fencenotificationtype == 'entered', 'Entered the geofence of ' + $fencefeature.name, 'Left ' + $fencefeature.name)"}))
    pois = [feature(id, name, desc, {"type": "Point", "coordinates": to_lonlat([poi_position(leg, t, left)], GARDEN)[0]})
            for id, name, desc, leg, t, left in POIS]
    write("fences/garden-poi.geojson", collection(pois, {"buffer": 10, "message": "IIf($fencenotificationtype == 'exited', 'Leaving ' + $fencefeature.name, 'Nearby: ' + $fencefeature.name)"}))
    fleet = [
        feature("depot", "Depot", "Vehicle yard and workshop", {"type": "Polygon", "coordinates": [ring(DEPOT, FLEET)]}),
        feature("site-north", "North Job Site", "Construction site; the site office building is excluded",
                {"type": "Polygon", "coordinates": [ring(SITE_NORTH, FLEET), ring(SITE_NORTH_BUILDING, FLEET)]}),
        feature("site-east", "East Job Site", "Landscaping job site", {"type": "Polygon", "coordinates": [ring(SITE_EAST, FLEET)]}),
        feature("road", "Haul Road", "Road corridor between the depot and the job sites",
                {"type": "LineString", "coordinates": to_lonlat(ROAD, FLEET)}, buffer=25),
    ]
    write("fences/fleet.geojson", collection(fleet, {
        "message": "IIf($fencenotificationtype == 'entered', 'Arrived at ', 'Left ') + $fencefeature.name"}))
    # A bare LineString geometry, the simplest route format the simulate and replay commands read.
    write("deploy/routes/garden-tour.geojson", {"type": "LineString", "coordinates": to_lonlat(TOUR, GARDEN)})


def check():
    _, to_local = projector(GARDEN)

    def local(geometry):
        def tx(coords):
            return [to_local.transform(lon, lat) for lon, lat in coords]
        g = geometry
        if g["type"] == "Polygon":
            return Polygon(tx(g["coordinates"][0]), [tx(r) for r in g["coordinates"][1:]])
        if g["type"] == "Point":
            return Point(to_local.transform(*g["coordinates"]))
        return LineString(tx(g["coordinates"]))

    def load(path):
        with open(os.path.join(ROOT, path)) as f:
            return json.load(f)

    problems = []
    for path in ["fences/garden-sections.geojson", "fences/garden-poi.geojson", "fences/fleet.geojson"]:
        for f in load(path)["features"]:
            if not shape(f["geometry"]).is_valid:
                problems.append(f"{path}: {f['id']} is not a valid geometry")
    secs = [(f["id"], local(f["geometry"])) for f in load("fences/garden-sections.geojson")["features"]]
    for i, (a, pa) in enumerate(secs):
        for b, pb in secs[i + 1:]:
            overlap = pa.intersection(pb).area
            if overlap > 0.01:
                problems.append(f"sections {a} and {b} overlap by {overlap:.2f} m2")
    total = sum(p.area for _, p in secs)
    tour = local(load("deploy/routes/garden-tour.geojson"))
    print(f"sections: {len(secs)}, total {total / 10000:.2f} ha; tour {tour.length:.0f} m")
    if not 1000 <= tour.length <= 2000:
        problems.append(f"tour is {tour.length:.0f} m, expected 1-2 km")
    for id, p in secs:
        inside = tour.intersection(p).length
        print(f"  {id:14s} tour inside {inside:6.0f} m")
        if inside < 30:
            problems.append(f"tour barely enters {id}")
    # The tour's vertices stay at least 15 m from every section edge.
    for x, y in tour.coords:
        edge = min(p.exterior.distance(Point(x, y)) for _, p in secs)
        if edge < 15:
            problems.append(f"tour vertex ({x:.0f}, {y:.0f}) is {edge:.1f} m from a section edge")
    near = far = 0
    for f in load("fences/garden-poi.geojson")["features"]:
        d = tour.distance(local(f["geometry"]))
        print(f"  {f['id']:20s} {d:5.1f} m from the tour")
        near += d < 9
        far += d > 15
        if 9 <= d <= 15:
            problems.append(f"{f['id']} is {d:.1f} m from the tour, too close to the 10 m buffer to be a clear case")
    if far < 1 or near < far:
        problems.append(f"expected most points within 10 m of the tour and at least one farther ({near} near, {far} far)")
    for p in problems:
        print("PROBLEM:", p)
    return not problems


if __name__ == "__main__":
    if "--check" not in sys.argv:
        draw()
    sys.exit(0 if check() else 1)
