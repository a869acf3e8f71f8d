#!/usr/bin/env bash
# Installs geotrigger as a system service on Debian 12 (x86_64 or aarch64, e.g. a Raspberry Pi),
# as root: packages, a release build, the binary, a user, /etc/geotrigger with the example
# config and fences, the systemd unit, and the mosquitto configuration (not enabled if a
# mosquitto config of the same name exists), and the dispatch console (deploy/console/ with
# Debian's Leaflet) in /usr/share/geotrigger/console, which mosquitto's websockets listener
# serves. Usage: deploy/install.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/setup.sh

install_packages "${BUILD_PACKAGES[@]}" mosquitto mosquitto-clients gpsd tzdata libjs-leaflet
ensure_swift
swift build -c release --static-swift-stdlib
install -m 0755 "$(swift build -c release --show-bin-path)/geotrigger" /usr/local/bin/geotrigger

id geotrigger >/dev/null 2>&1 || useradd --system --home-dir /var/lib/geotrigger --shell /usr/sbin/nologin geotrigger
install -d -m 0750 -g geotrigger /etc/geotrigger /etc/geotrigger/fences
[ -e /etc/geotrigger/geotrigger.json5 ] || install -m 0640 -g geotrigger deploy/geotrigger.example.json5 /etc/geotrigger/geotrigger.json5
# Under the unit only /var/lib/geotrigger is writable, and a relative database path resolves
# against /etc/geotrigger: the config must name the database by its full path (the example does).
grep -Eq '^[^/]*database:[[:space:]]*"/var/lib/geotrigger/' /etc/geotrigger/geotrigger.json5 ||
    echo "install: warning: set gateway.database in /etc/geotrigger/geotrigger.json5 to a file in /var/lib/geotrigger (the unit's only writable folder)" >&2
for f in fences/*.geojson; do [ -e "/etc/geotrigger/$f" ] || install -m 0640 -g geotrigger "$f" /etc/geotrigger/fences/; done
install -d /usr/local/share/doc/geotrigger/docs && install -m 0644 README.md /usr/local/share/doc/geotrigger/
install -m 0644 docs/*.md docs/*.png /usr/local/share/doc/geotrigger/docs/   # the pages the README links to
install -m 0644 deploy/geotrigger.service /etc/systemd/system/geotrigger.service

# The dispatch console: geotrigger.conf's websockets listener serves this folder (http_dir) as
# the mosquitto user, so everything in it is world-readable. Leaflet is copied, not linked:
# mosquitto serves only files inside the folder. Run this again after an upgrade of libjs-leaflet.
CONSOLE=/usr/share/geotrigger/console
rm -rf "$CONSOLE"
install -d -m 0755 "$CONSOLE"
if [ -d deploy/console ]; then
    tar -C deploy/console --exclude=node_modules --exclude=tests -cf - . | tar -C "$CONSOLE" --no-same-owner -xf -
else
    echo "install: deploy/console is not in this checkout; the console's listener serves only Leaflet" >&2
fi
cp -RL /usr/share/javascript/leaflet "$CONSOLE/leaflet"
chmod -R u=rwX,go=rX "$CONSOLE"

# The broker's users and roles: mosquitto's dynamic security plugin (deploy/mosquitto/README.md
# "Users and roles"). Its file holds the password hashes: the broker's alone (owner and group
# mosquitto, 0640); its admin's password is root's (/etc/mosquitto/geotrigger-admin.password,
# 0600), used by geotrigger-dynsec to add users.
install -m 0755 deploy/mosquitto/geotrigger-dynsec.sh /usr/local/sbin/geotrigger-dynsec
DYNSEC=/var/lib/mosquitto/geotrigger-dynsec.json
if [ ! -e /etc/mosquitto/conf.d/geotrigger.conf ]; then
    plugin=$(dpkg -L mosquitto | grep '/mosquitto_dynamic_security\.so$' | head -n 1)
    [ -n "$plugin" ] || { echo "install: mosquitto's dynamic security plugin is missing (dpkg -L mosquitto)" >&2; exit 1; }
    sed "s|^plugin .*/mosquitto_dynamic_security\.so$|plugin $plugin|" deploy/mosquitto/geotrigger.conf > /etc/mosquitto/conf.d/geotrigger.conf
    chmod 0644 /etc/mosquitto/conf.d/geotrigger.conf
    if [ ! -e "$DYNSEC" ]; then
        (umask 077 && head -c 18 /dev/urandom | base64 > /etc/mosquitto/geotrigger-admin.password)
        [ -d /var/lib/mosquitto ] || install -d -o mosquitto -g mosquitto -m 0750 /var/lib/mosquitto
        mosquitto_ctrl dynsec init "$DYNSEC" geotrigger-admin "$(cat /etc/mosquitto/geotrigger-admin.password)" >/dev/null
        chown mosquitto:mosquitto "$DYNSEC"
        chmod 0640 "$DYNSEC"
        systemctl restart mosquitto
        for _ in $(seq 50); do mosquitto_ctrl -h 127.0.0.1 -p 1883 -u geotrigger-admin \
            -P "$(cat /etc/mosquitto/geotrigger-admin.password)" dynsec getDefaultACLAccess >/dev/null 2>&1 && break; sleep 0.2; done
        /usr/local/sbin/geotrigger-dynsec roles >/dev/null
    fi
    echo "install: mosquitto config and roles installed; add the users with geotrigger-dynsec (deploy/mosquitto/README.md)"
elif ! grep -q '^http_dir' /etc/mosquitto/conf.d/geotrigger.conf; then
    echo "install: /etc/mosquitto/conf.d/geotrigger.conf has no console listener: add the last lines of deploy/mosquitto/geotrigger.conf to it" >&2
fi
systemctl daemon-reload 2>/dev/null || true
echo "install: done. Edit /etc/geotrigger/geotrigger.json5, then:"
echo "  geotrigger check --config /etc/geotrigger/geotrigger.json5"
echo "  systemctl enable --now geotrigger"
echo "  the dispatch console: http://$(hostname):9001/ (a dispatcher's user, deploy/mosquitto/README.md)"
