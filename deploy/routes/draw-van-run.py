#!/usr/bin/env python3
"""Writes the delivery van's recorded run and its trip (deploy/routes/README.md "van-run").

The van `van-1` leaves the depot of fences/fleet.geojson for the East Job Site along the Haul
Road (the fleet layer's line fence `road`, its trip's route), strays about 110 m north of it for
about a minute, drives back onto it, waits in traffic, and makes up time on the last stretch.
Its trip is due at DUE: its ETA passes DUE while it waits (`late`), and it arrives 45 s before
it. One fix every 5 s, accuracy 5 m, in JSON lines; only the standard library is needed.

    python3 deploy/routes/draw-van-run.py
"""
import json
import math
import os
from datetime import datetime, timedelta, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
START = datetime(2026, 12, 7, 9, 0, 0, tzinfo=timezone.utc)
DUE = START + timedelta(minutes=8)
STEP = 5.0  # seconds between fixes
R = 6371008.8

fleet = json.load(open(os.path.join(ROOT, "fences", "fleet.geojson")))
features = {f["id"]: f for f in fleet["features"]}
road = features["road"]["geometry"]["coordinates"]
depot = features["depot"]["geometry"]["coordinates"][0][:-1]
lon0, lat0 = road[0]
kx = math.radians(1) * R * math.cos(math.radians(lat0))
ky = math.radians(1) * R


def local(c):
    return ((c[0] - lon0) * kx, (c[1] - lat0) * ky)


def lonlat(p):
    return (lon0 + p[0] / kx, lat0 + p[1] / ky)


route = [local(c) for c in road]
cumulative = [0.0]
for a, b in zip(route, route[1:]):
    cumulative.append(cumulative[-1] + math.dist(a, b))


def at(along):
    """The road's point `along` metres from its start, and its unit direction there."""
    for k in range(len(route) - 1):
        if along <= cumulative[k + 1] or k == len(route) - 2:
            a, b = route[k], route[k + 1]
            n = math.dist(a, b)
            s = along - cumulative[k]
            d = ((b[0] - a[0]) / n, (b[1] - a[1]) / n)
            return (a[0] + s * d[0], a[1] + s * d[1]), d


def left(along, metres):
    p, d = at(along)
    return (p[0] - d[1] * metres, p[1] + d[0] * metres)


# The plan: (point to drive to, speed in m/s), or ("stop", seconds).
depot_centre = local((sum(c[0] for c in depot) / 4, sum(c[1] for c in depot) / 4))
legs = [(route[0], 5.0)]
legs += [(at(a)[0], 5.0) for a in cumulative[1:] if a < 680] + [(at(680)[0], 5.0)]
# The stray: 110 m to the left of the road, 200 m on beside it, and back onto it.
legs += [(left(680, 110), 5.0), (left(880, 110), 5.0), (at(880)[0], 5.0)]
legs += [(at(a)[0], 5.0) for a in cumulative[1:] if 880 < a < 1040] + [(at(1040)[0], 5.0)]
legs += [("stop", 143.0)]
# The last stretch at 15 m/s, then 20 m on into the job site at walking pace, and parked.
legs += [(at(a)[0], 15.0) for a in cumulative[1:] if a > 1040]
end, direction = at(cumulative[-1])
legs += [((end[0] + 20 * direction[0], end[1] + 20 * direction[1]), 5.0), ("stop", 10.0)]

# Positions as a function of time, sampled every STEP seconds.
timeline = [(0.0, depot_centre)]  # (time, position) at each leg's end
for leg in legs:
    t, p = timeline[-1]
    if leg[0] == "stop":
        timeline.append((t + leg[1], p))
    else:
        q, speed = leg
        timeline.append((t + math.dist(p, q) / speed, q))


def position(t):
    for (t0, p), (t1, q) in zip(timeline, timeline[1:]):
        if t <= t1:
            f = 0 if t1 == t0 else (t - t0) / (t1 - t0)
            return (p[0] + f * (q[0] - p[0]), p[1] + f * (q[1] - p[1]))
    return timeline[-1][1]


lines = []
t = 0.0
while t <= timeline[-1][0]:
    lon, lat = lonlat(position(t))
    time = (START + timedelta(seconds=t)).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines.append(json.dumps({"device": "van-1", "lat": round(lat, 7), "lon": round(lon, 7), "time": time, "accuracy": 5}))
    t += STEP
with open(os.path.join(HERE, "van-run.jsonl"), "w") as f:
    f.write("\n".join(lines) + "\n")

trip = {
    "id": "van-1-east",
    "device": "van-1",
    "route": {"layer": "fleet", "fence": "road"},
    "to": {"layer": "fleet", "fence": "site-east"},
    "by": DUE.strftime("%Y-%m-%dT%H:%M:%SZ"),
    "corridor": 50,
    "offRouteAfter": 30,
}
with open(os.path.join(HERE, "van-run.trip.json"), "w") as f:
    json.dump(trip, f, indent=1)
    f.write("\n")
print(f"van-run.jsonl: {len(lines)} fixes over {timeline[-1][0]:.0f} s; route {cumulative[-1]:.0f} m; due {trip['by']}")
