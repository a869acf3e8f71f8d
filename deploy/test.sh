#!/usr/bin/env bash
# Builds geotrigger and runs its whole test suite on a fresh Debian 12 machine, as root.
# Installs only what is missing (one apt-get update at most), then `swift build` and `swift test`.
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
