# Shared by deploy/test.sh, deploy/demo.sh and deploy/install.sh (sourced, not run):
# install what is missing from Debian's packages, and find the Swift 6 toolchain.

# install_packages PACKAGE...: apt-get installs the ones not installed yet (one apt-get update).
install_packages() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "setup: installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
}

# Build and run-time packages of the gateway (the C libraries it links, pkg-config for SwiftPM).
BUILD_PACKAGES=(pkg-config libmosquitto-dev libgps-dev libsqlite3-dev)
# What the demo and the tests run: the broker, gpsd and gpsfake, openssl for test certificates,
# rsvg-convert for replay pictures, tzdata for schedules (/usr/share/zoneinfo), promtool
# (package prometheus) to check the metrics file (the Prometheus server it brings is not used),
# curl for the console's WebSocket upgrade over TLS.
RUN_PACKAGES=(mosquitto mosquitto-clients gpsd gpsd-clients openssl librsvg2-bin nats-server tzdata prometheus curl)

# ensure_swift: puts the Swift 6 toolchain on PATH, or explains where it is expected.
# Debian's "swift" package is OpenStack Swift, not the compiler: never install it.
ensure_swift() {
    if ! swift --version 2>&1 | grep -q "Swift version 6"; then
        local d
        for d in /opt/swift/usr/bin /usr/share/swift/usr/bin /usr/local/swift/usr/bin; do
            if [ -x "$d/swift" ]; then export PATH="$d:$PATH"; break; fi
        done
    fi
    if ! swift --version 2>&1 | grep -q "Swift version 6"; then
        echo "setup: the Swift 6 toolchain is required: 'swift' on PATH, or in /opt/swift/usr/bin." >&2
        echo "       Install it from swift.org (Debian 12 tarball). Debian's 'swift' package is" >&2
        echo "       OpenStack Swift, an object store, not the compiler: do not install it." >&2
        exit 1
    fi
}

# free_port: prints a free TCP port on 127.0.0.1.
free_port() {
    local port
    for _ in $(seq 1 50); do
        port=$(( (RANDOM << 1 | RANDOM & 1) % 30000 + 20000 ))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return 0; fi
    done
    echo "setup: no free port found" >&2
    return 1
}
