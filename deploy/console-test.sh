#!/usr/bin/env bash
# The dispatcher console's tests (deploy/console): its MQTT client (packets against known
# bytes, exchanges over a stand-in WebSocket), its store, queries, alerts, event marks and trips,
# with node; then the page in
# headless Chromium against a real mosquitto and the real `geotrigger serve`
# (Tests/Console/console_test.py, through Selenium). Installs what is missing (Chromium, its
# driver, Leaflet, Selenium, node) from Debian's packages; builds the debug gateway if it is
# not built. Screenshots: .build/console-artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/setup.sh

install_packages mosquitto mosquitto-clients chromium chromium-driver libjs-leaflet python3-selenium nodejs
if [ -z "${GEOTRIGGER_BIN:-}" ] && [ ! -x .build/debug/geotrigger ]; then
    install_packages "${BUILD_PACKAGES[@]}"
    ensure_swift
    swift build 2>&1 | tail -n 1
fi

node Tests/Console/mqtt_packets.mjs
node Tests/Console/store_test.mjs
node Tests/Console/actions_test.mjs
node Tests/Console/alerts_test.mjs
node Tests/Console/marks_test.mjs
node Tests/Console/trips_test.mjs
node Tests/Console/history_test.mjs
# Debian's python3 (its python3-selenium), not whatever python3 comes first on PATH.
/usr/bin/python3 Tests/Console/console_test.py
