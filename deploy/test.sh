#!/usr/bin/env bash
# Builds geotrigger and runs its whole test suite on a fresh Debian 12 machine, as root.
# Installs only what is missing (one apt-get update at most), then `swift build`, `swift test`
# and a short fuzzing run of the core (deploy/fuzz.sh, 15 s per target; FUZZ_SECONDS=0 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/setup.sh

install_packages "${BUILD_PACKAGES[@]}" "${RUN_PACKAGES[@]}"
ensure_swift

swift build 2>&1 | tee /tmp/geotrigger-build.log
if grep -q "warning:" /tmp/geotrigger-build.log; then
    echo "test.sh: swift build printed warnings (see above); the project keeps the build warning-free" >&2
    exit 1
fi
swift build --build-tests
swift test --skip-build
if [ "${FUZZ_SECONDS:-15}" != 0 ]; then
    deploy/fuzz.sh "${FUZZ_SECONDS:-15}"
fi
# The dispatcher console in headless Chromium (installs Chromium, its driver, Leaflet and Selenium when missing).
if [ "${CONSOLE_TEST:-1}" != 0 ]; then deploy/console-test.sh; fi
