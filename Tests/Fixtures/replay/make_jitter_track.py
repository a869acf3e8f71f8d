#!/usr/bin/env python3
"""Writes a jittery JSON-lines track: a device standing 2 m outside the edge between the
Meadow and Desert sections of fences/garden-sections.geojson with 5 m Gaussian noise per
axis at 1 Hz (10 m accuracy), then walking 20 m into the Desert Section and out again.
Deterministic (seeded). Usage: make_jitter_track.py > jitter.jsonl"""
import json, math, random, sys

random.seed(7)
# A point of the Meadow/Desert edge (from garden-sections.geojson) and the edge direction.
lat0, lon0 = 34.4572826, -119.7079722
M_LAT = 110_950.0                      # metres per degree of latitude here
M_LON = 111_320.0 * math.cos(math.radians(lat0))
t0 = 1_796_040_000                     # 2026-11-30T12:00:00Z

def point(east, north):
    return lat0 + north / M_LAT, lon0 + east / M_LON

def line(t, east, north, noise=5.0):
    lat, lon = point(east + random.gauss(0, noise), north + random.gauss(0, noise))
    return json.dumps({"device": "walker", "lat": round(lat, 7), "lon": round(lon, 7),
                       "time": t0 + t, "accuracy": 10})

out = []
for t in range(0, 120):                # standing 2 m west of the edge (Meadow side)
    out.append(line(t, -2.0, 0.0))
for t in range(120, 180):              # 20 m into the Desert Section for a minute
    out.append(line(t, 20.0, 0.0))
for t in range(180, 240):              # and back out, 20 m west
    out.append(line(t, -20.0, 0.0))
sys.stdout.write("\n".join(out) + "\n")
