#!/usr/bin/env bash
# Builds geotrigger and runs its whole test suite on a fresh Debian 12 machine, as root.
# Installs only what is missing (one apt-get update at most), then `swift build` and `swift test`.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(pkg-config openssl libmosquitto-dev libgps-dev libsqlite3-dev mosquitto mosquitto-clients
          gpsd gpsd-clients librsvg2-bin)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "test.sh: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Debian's "swift" package is OpenStack Swift, not the compiler: never install it.
if ! command -v swift >/dev/null 2>&1 || ! swift --version 2>&1 | grep -q "Swift version"; then
    for d in /opt/swift/usr/bin /usr/share/swift/usr/bin; do
        [ -x "$d/swift" ] && export PATH="$d:$PATH" && break
    done
fi
if ! swift --version 2>&1 | grep -q "Swift version 6"; then
    echo "test.sh: the Swift 6 toolchain is required (expected 'swift' on PATH or in /opt/swift/usr/bin);" >&2
    echo "         install it from swift.org. Debian's 'swift' package is OpenStack Swift, not this." >&2
    exit 1
fi

swift build 2>&1 | tee /tmp/geotrigger-build.log
if grep -q "warning:" /tmp/geotrigger-build.log; then
    echo "test.sh: swift build printed warnings (see above); the project keeps the build warning-free" >&2
    exit 1
fi
swift build --build-tests
swift test --skip-build
