#!/usr/bin/env bash
# The garden tour: installs what is missing, builds a release, starts a private mosquitto on
# a free loopback port (a system mosquitto on 1883 is left alone), runs the gateway on fences/,
# walks deploy/routes/garden-tour.geojson faster than real time with two simulated visitors,
# drives the delivery van's trip (deploy/routes/van-run.jsonl), and shows the dispatch console. The web console (deploy/console/) is served by the broker's
# websockets listener on another free loopback port; its URL is printed. Everything it started
# is stopped by PID at the end or on Ctrl-C.
#
# Usage: deploy/demo.sh [--keep] [RATE]   (RATE: times faster than real time, default 40;
#        --keep: leave the broker, the gateway and the console running until Enter)
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/setup.sh
KEEP=false
RATE=40
for arg in "$@"; do
    case "$arg" in
        --keep) KEEP=true ;;
        *) RATE="$arg" ;;
    esac
done

install_packages "${BUILD_PACKAGES[@]}" mosquitto mosquitto-clients libjs-leaflet
ensure_swift
echo "demo: building a release (the first build takes a few minutes)"
swift build -c release 2>&1 | tail -n 1
BIN="$(swift build -c release --show-bin-path)/geotrigger"

WORK="$(mktemp -d /tmp/geotrigger-demo.XXXXXX)"
PIDS=()
cleanup() {
    trap - EXIT INT TERM
    local pid
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'echo; echo "demo: interrupted"; exit 130' INT TERM

# The console's folder: a copy of deploy/console with Leaflet beside it (mosquitto serves only
# files inside http_dir, as the mosquitto user when started as root: the folders are readable).
chmod 0755 "$WORK"
mkdir -m 0755 "$WORK/console"
if [ -d deploy/console ]; then
    cp -RL deploy/console/. "$WORK/console/"
else
    echo "demo: deploy/console is not in this checkout; the console's URL serves only Leaflet"
fi
cp -RL /usr/share/javascript/leaflet "$WORK/console/leaflet"
chmod -R go+rX "$WORK/console"

PORT="$(free_port)"
WS_PORT="$(free_port)"
while [ "$WS_PORT" = "$PORT" ]; do WS_PORT="$(free_port)"; done
cat > "$WORK/mosquitto.conf" <<CONF
listener $PORT 127.0.0.1
# The web console: its files and MQTT over WebSockets (any user name and password).
listener $WS_PORT 127.0.0.1
protocol websockets
http_dir $WORK/console
allow_anonymous true
persistence false
# A subscriber that falls behind loses messages beyond these (mosquitto's defaults: 20, 1000).
max_inflight_messages 500
max_queued_messages 100000
# No Nagle delay on the way to the gateway (see deploy/mosquitto/geotrigger.conf).
set_tcp_nodelay true
CONF
/usr/sbin/mosquitto -c "$WORK/mosquitto.conf" > "$WORK/mosquitto.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done
echo "demo: mosquitto on 127.0.0.1:$PORT (pid ${PIDS[0]})"
echo "demo: the web console: http://127.0.0.1:$WS_PORT/ (MQTT over WebSockets on the same port, any user name)"

cat > "$WORK/geotrigger.json5" <<CONF
{
  gateway: { id: "demo", fences: "$PWD/fences", database: "$WORK/geotrigger.db" },
  broker: { port: $PORT },
  output: { statusInterval: 5, occupancy: true, metricsFile: "$WORK/geotrigger.prom" },
}
CONF
GEOTRIGGER_LOG_LEVEL=notice "$BIN" serve --config "$WORK/geotrigger.json5" 2> "$WORK/gateway.log" &
PIDS+=($!)
"$BIN" watch --config "$WORK/geotrigger.json5" --plain &
PIDS+=($!)
sleep 1

# Expected arrivals (docs/expectations.md): a dispatcher expects visitor-1 at the fleet depot
# within 5 s; the garden tour never goes there, so the gateway publishes "missed".
mosquitto_sub -p "$PORT" -v -t 'geotriggers/expect/+/result' > "$WORK/expect.log" 2>&1 &
PIDS+=($!)
mosquitto_pub -p "$PORT" -r -q 1 -t geotriggers/expect/visitor-1-depot -m \
    "{\"device\": \"visitor-1\", \"layer\": \"fleet\", \"fence\": \"depot\", \"by\": \"$(date -u -d '+5 seconds' +%FT%TZ)\"}"

echo "demo: two visitors walk the Santa Barbara Botanic Garden tour at ${RATE}x real time"
"$BIN" simulate deploy/routes/garden-tour.geojson --config "$WORK/geotrigger.json5" \
    --device visitor --devices 2 --speed 1.4 --interval 2 --accuracy 5 --noise 1 --rate "$RATE" --quiet
sleep 2
echo
echo "demo: the event journal (geotrigger events --config ...):"
"$BIN" events --config "$WORK/geotrigger.json5" | tail -n 8
for _ in $(seq 1 100); do grep -q '"missed"' "$WORK/expect.log" && break; sleep 0.1; done
echo "demo: the expected arrival (geotriggers/expect/visitor-1-depot/result):"
cat "$WORK/expect.log"
echo "demo: $("$BIN" events --config "$WORK/geotrigger.json5" --json | wc -l) events in the journal"
# Trips (docs/trips.md): the delivery van van-1 leaves the depot for the East Job Site along the
# Haul Road (deploy/routes/van-run.trip.json, beside its recorded run van-run.jsonl), strays off
# its route for a minute, waits in traffic until its ETA passes the deadline (late), and arrives.
# simulate publishes the trip, retained, before the first position, and places the deadline so
# that the gateway's clock reaches it when the play does; at most 20x, so the arrival (35 s of
# fix time before the deadline) is decided well before the clock gets there.
VAN_RATE=$(( RATE > 20 ? 20 : RATE ))
echo "demo: the delivery van van-1 drives its trip at ${VAN_RATE}x (deploy/routes/van-run.jsonl, van-run.trip.json)"
mosquitto_sub -p "$PORT" -t 'geotriggers/events/trips/#' > "$WORK/trips.log" 2>&1 &
PIDS+=($!)
"$BIN" simulate deploy/routes/van-run.jsonl --recorded --config "$WORK/geotrigger.json5" --rate "$VAN_RATE" --quiet
for _ in $(seq 1 100); do grep -q '"type":"\(arrived\|missed\)"' "$WORK/trips.log" && break; sleep 0.1; done
echo "demo: the van's trip events (geotrigger events --trigger trips):"
"$BIN" events --config "$WORK/geotrigger.json5" --trigger trips
echo "demo: the same run offline (geotrigger replay deploy/routes/van-run.jsonl), trip events:"
"$BIN" replay deploy/routes/van-run.jsonl 2>/dev/null | grep '  trigger trips  '
# Crossings (docs/crossings.md): a vehicle reporting every 30 s at 60 km/h has no fix inside the
# 20 m toll gate of deploy/crossings; with crossings on, its enter and exit are inferred.
echo "demo: a vehicle with a fix every 500 m passes the 20 m toll gate (replay, crossings on):"
"$BIN" replay deploy/routes/gate-run.geojson --fences deploy/crossings --speed 16.7
# The Prometheus textfile (docs/metrics.md), as node_exporter would read it; written again at the stop.
echo "demo: the metrics file (output.metricsFile), without zero samples:"
grep -v '^#' "$WORK/geotrigger.prom" | grep -v ' 0$' || true
if $KEEP; then
    echo "demo: still running: the web console at http://127.0.0.1:$WS_PORT/, the broker on 127.0.0.1:$PORT"
    echo "demo: press Enter to stop"
    read -r _ || true
fi
echo "demo: stopping"
