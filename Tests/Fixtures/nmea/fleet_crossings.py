#!/usr/bin/env python3
"""Oracle for Tests/GatewayTests/GPSDFeedTests: where the fixes of NMEA logs cross the depot
and the Haul Road (buffer 25 m) of fences/fleet.geojson, computed with shapely in UTM 11N
(pyproj), independent of geotrigger's own geometry.

For each log it prints the fix time (RMC hhmmss.ss) of every crossing: the first fix on the
new side, which is the event's `position.time`. The state carries over from one log to the
next, as when the logs are played one after the other. Any fix closer than --margin metres to
a boundary is reported: the expected events are only trustworthy when there are none.

    python3 fleet_crossings.py depot_out.log depot_back.log
"""

import argparse
import json
import os

from pyproj import Transformer
from shapely import transform
from shapely.geometry import Point, shape

HERE = os.path.dirname(os.path.abspath(__file__))
FLEET = os.path.join(HERE, "..", "..", "..", "fences", "fleet.geojson")


def rmc_fixes(path):
    with open(path, encoding="ascii") as handle:
        for line in handle:
            fields = line.strip().split(",")
            if not fields[0].endswith("RMC") or len(fields) < 7 or fields[2] != "A":
                continue
            lat = int(fields[3][:2]) + float(fields[3][2:]) / 60
            lon = int(fields[5][:3]) + float(fields[5][3:]) / 60
            yield (fields[1], -lat if fields[4] == "S" else lat, -lon if fields[6] == "W" else lon)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+")
    parser.add_argument("--margin", type=float, default=1.0, help="metres")
    args = parser.parse_args()
    to_utm = Transformer.from_crs("EPSG:4326", "EPSG:32611", always_xy=True)

    def project(geometry):
        return transform(geometry, lambda xy: list(zip(*to_utm.transform(xy[:, 0], xy[:, 1]))))

    with open(FLEET, encoding="utf-8") as handle:
        features = {feature["id"]: feature for feature in json.load(handle)["features"]}
    depot = project(shape(features["depot"]["geometry"]))
    road = project(shape(features["road"]["geometry"]))
    road_buffer = features["road"]["properties"]["buffer"]

    inside = {"depot": False, "road": False}
    for path in args.logs:
        for time, lat, lon in rmc_fixes(path):
            point = Point(to_utm.transform(lon, lat))
            depot_distance = depot.exterior.distance(point) * (-1 if depot.contains(point) else 1)
            road_distance = road.distance(point) - road_buffer
            for fence, distance in (("depot", depot_distance), ("road", road_distance)):
                if (distance < 0) != inside[fence]:
                    inside[fence] = distance < 0
                    print("%s %s %s %s (%.6f, %.6f)" % (
                        os.path.basename(path), time, "enter" if distance < 0 else "exit", fence, lat, lon))
                if abs(distance) < args.margin:
                    print("  NEAR the %s boundary at %s: %.2f m" % (fence, time, distance))


if __name__ == "__main__":
    main()
