#!/usr/bin/env python3
"""Generate an NMEA 0183 receiver log that drives along a GeoJSON LineString.

Each epoch (one per 1/RATE seconds) has GGA, GSA, optionally GST, and RMC, all with valid
checksums, so `gpsfake -1 -P PORT -c 0.05 LOG` replays it into a real gpsd. The log starts with
STATIONARY fixes at the line's first point (speed 0), then moves along the line at SPEED m/s
and ends with one fix at the last point. Positions are linear in lon/lat along each segment
(edges are straight in lon/lat, as RFC 7946 and docs/configuration.md "Fence files" say); distances use a
spherical earth.

With --no-fix the log has the same epochs but no fix in any of them (GGA quality 0, GSA mode 1,
RMC status V), still carrying the last known position the way real receivers do.

Standard library only. Example (the committed fixture):
    make_nmea.py example_line.geojson --speed 10 --rate 1 --stationary 3 --gst \
        --start 2026-06-01T12:00:00Z -o example_line.log
"""

import argparse
import datetime
import json
import math
import sys

EARTH_RADIUS = 6371008.8  # metres, mean radius (IUGG)
KNOTS_PER_MPS = 1 / 0.514444


def checksum(body):
    value = 0
    for char in body:
        value ^= ord(char)
    return "%02X" % value


def sentence(body):
    return "$%s*%s" % (body, checksum(body))


def nmea_lat(lat):
    hemisphere = "N" if lat >= 0 else "S"
    lat = abs(lat)
    degrees = int(lat)
    minutes = (lat - degrees) * 60
    text = "%02d%09.6f" % (degrees, minutes)
    return text, hemisphere


def nmea_lon(lon):
    hemisphere = "E" if lon >= 0 else "W"
    lon = abs(lon)
    degrees = int(lon)
    minutes = (lon - degrees) * 60
    text = "%03d%09.6f" % (degrees, minutes)
    return text, hemisphere


def distance(a, b):
    """Haversine distance in metres between (lon, lat) points."""
    lon1, lat1, lon2, lat2 = map(math.radians, (a[0], a[1], b[0], b[1]))
    h = (math.sin((lat2 - lat1) / 2) ** 2
         + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2)
    return 2 * EARTH_RADIUS * math.asin(min(1.0, math.sqrt(h)))


def bearing(a, b):
    """Initial bearing in degrees from (lon, lat) a to b."""
    lon1, lat1, lon2, lat2 = map(math.radians, (a[0], a[1], b[0], b[1]))
    y = math.sin(lon2 - lon1) * math.cos(lat2)
    x = (math.cos(lat1) * math.sin(lat2)
         - math.sin(lat1) * math.cos(lat2) * math.cos(lon2 - lon1))
    return (math.degrees(math.atan2(y, x)) + 360) % 360


def read_line_string(path):
    with open(path, encoding="utf-8") as handle:
        document = json.load(handle)
    if document.get("type") == "FeatureCollection":
        features = document.get("features") or []
        if not features:
            sys.exit("%s: the FeatureCollection has no features" % path)
        document = features[0]
    if document.get("type") == "Feature":
        document = document.get("geometry") or {}
    if document.get("type") != "LineString":
        sys.exit("%s: expected a LineString (or a Feature / FeatureCollection whose first "
                 "feature is one), found %r" % (path, document.get("type")))
    points = [(float(p[0]), float(p[1])) for p in document.get("coordinates", [])]
    if len(points) < 2:
        sys.exit("%s: a LineString needs at least 2 positions" % path)
    return points


def positions(points, speed, rate, stationary):
    """Yield (lon, lat, speed m/s, track deg) per epoch."""
    first_track = bearing(points[0], points[1])
    for _ in range(stationary):
        yield points[0][0], points[0][1], 0.0, first_track
    step = speed / rate
    travelled = 0.0
    segment_start = 0.0
    for index in range(len(points) - 1):
        a, b = points[index], points[index + 1]
        length = distance(a, b)
        track = bearing(a, b)
        while travelled < segment_start + length:
            fraction = (travelled - segment_start) / length if length > 0 else 0
            yield (a[0] + (b[0] - a[0]) * fraction, a[1] + (b[1] - a[1]) * fraction,
                   speed, track)
            travelled += step
        segment_start += length
    last = points[-1]
    yield last[0], last[1], speed, bearing(points[-2], points[-1])


def epoch_sentences(when, lon, lat, speed, track, fix, gst, accuracy, altitude):
    clock = when.strftime("%H%M%S.") + "%02d" % (when.microsecond // 10000)
    date = when.strftime("%d%m%y")
    lat_text, ns = nmea_lat(lat)
    lon_text, ew = nmea_lon(lon)
    quality, satellites, status, gsa_mode = ("1", "08", "A", "3") if fix else ("0", "00", "V", "1")
    hdop = "0.9" if fix else ""
    lines = [sentence("GPGGA,%s,%s,%s,%s,%s,%s,%s,%s,%.1f,M,0.0,M,,"
                      % (clock, lat_text, ns, lon_text, ew, quality, satellites, hdop,
                         altitude))]
    used = "02,05,07,09,13,16,20,30" if fix else ""
    used_fields = used.split(",") if used else []
    used_fields += [""] * (12 - len(used_fields))
    dops = "1.6,0.9,1.3" if fix else ",,"
    lines.append(sentence("GPGSA,A,%s,%s,%s" % (gsa_mode, ",".join(used_fields), dops)))
    if gst and fix:
        # 1-sigma errors in metres: RMS, semi-major, semi-minor, orientation, lat, lon, alt.
        sigma = accuracy / math.sqrt(2)
        lines.append(sentence("GPGST,%s,%.1f,%.1f,%.1f,0.0,%.1f,%.1f,%.1f"
                              % (clock, accuracy, sigma, sigma, sigma, sigma, 2 * sigma)))
    knots = speed * KNOTS_PER_MPS
    lines.append(sentence("GPRMC,%s,%s,%s,%s,%s,%s,%.2f,%.1f,%s,,,%s"
                          % (clock, status, lat_text, ns, lon_text, ew, knots, track, date,
                             "A" if fix else "N")))
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("route", help="GeoJSON LineString (or Feature / FeatureCollection)")
    parser.add_argument("--speed", type=float, default=10.0, help="metres per second")
    parser.add_argument("--rate", type=float, default=1.0, help="fixes per second")
    parser.add_argument("--stationary", type=int, default=3,
                        help="leading fixes standing at the first point")
    parser.add_argument("--start", default="2026-06-01T12:00:00Z",
                        help="time of the first epoch, ISO-8601 UTC")
    parser.add_argument("--gst", action="store_true", help="add GST (error estimates)")
    parser.add_argument("--accuracy", type=float, default=3.0,
                        help="horizontal RMS error in metres written to GST")
    parser.add_argument("--altitude", type=float, default=10.0, help="metres above MSL")
    parser.add_argument("--no-fix", action="store_true",
                        help="the receiver never has a fix (GGA 0, GSA 1, RMC V)")
    parser.add_argument("-o", "--output", help="output file (default stdout)")
    args = parser.parse_args()
    if args.speed <= 0 or args.rate <= 0:
        sys.exit("--speed and --rate must be > 0")

    start = datetime.datetime.fromisoformat(args.start.replace("Z", "+00:00"))
    start = start.astimezone(datetime.timezone.utc)
    points = read_line_string(args.route)
    out = open(args.output, "w", encoding="ascii") if args.output else sys.stdout
    out.write("# Name: geotrigger make_nmea.py%s\n" % (" (no fix)" if args.no_fix else ""))
    out.write("# Generated from %s: %.1f m/s, %.2f Hz, %d stationary, start %s\n"
              % (args.route.split("/")[-1], args.speed, args.rate, args.stationary,
                 start.strftime("%Y-%m-%dT%H:%M:%SZ")))
    out.write("# Licence: same as the geotrigger project (generated test data)\n")
    epoch = 0
    for lon, lat, speed, track in positions(points, args.speed, args.rate, args.stationary):
        when = start + datetime.timedelta(seconds=epoch / args.rate)
        for line in epoch_sentences(when, lon, lat, speed if not args.no_fix else 0.0, track,
                                    not args.no_fix, args.gst, args.accuracy, args.altitude):
            out.write(line + "\n")
        epoch += 1
    if out is not sys.stdout:
        out.close()


if __name__ == "__main__":
    main()
