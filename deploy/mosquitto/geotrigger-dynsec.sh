#!/bin/sh
# The roles and users of the shipped broker config (geotrigger.conf), kept by mosquitto's
# dynamic security plugin (deploy/mosquitto/README.md "Users and roles"). It talks to the
# running broker as the plugin's admin with mosquitto_ctrl; changes apply at once, no reload.
#
#   geotrigger-dynsec roles                       the roles and the default access (once)
#   geotrigger-dynsec add ROLE USER [PASSWORD]    a user with one role: gateway, dispatcher,
#                                                 homeassistant or device (asks for the
#                                                 password when none is given)
#   geotrigger-dynsec show USER                   the user and its roles
#   geotrigger-dynsec remove USER                 the user (and a device's own role)
#
# The connection: $GEOTRIGGER_DYNSEC_CONNECT, the mosquitto_ctrl options (default: the local
# plain listener as geotrigger-admin, its password from /etc/mosquitto/geotrigger-admin.password).
set -eu

if [ -n "${GEOTRIGGER_DYNSEC_CONNECT:-}" ]; then
    connect=$GEOTRIGGER_DYNSEC_CONNECT
else
    connect="-h 127.0.0.1 -p 1883 -u geotrigger-admin -P $(cat /etc/mosquitto/geotrigger-admin.password)"
fi

ctrl() {
    # shellcheck disable=SC2086 # the connection options are words
    mosquitto_ctrl $connect dynsec "$@" 2>&1 | grep -v -e 'running mosquitto_ctrl without encryption' \
        -e 'configuration changes you are making are visible' -e '^$' || true
}

# ROLE reads TOPIC (a subscription filter: subscribing to it or to a topic under it, and
# receiving its messages).
reads() { ctrl addRoleACL "$1" subscribePattern "$2" allow; ctrl addRoleACL "$1" publishClientReceive "$2" allow; }
# ROLE writes TOPIC.
writes() { ctrl addRoleACL "$1" publishClientSend "$2" allow; }

roles() {
    # Nothing without a role's ACL: no publishing, subscribing or receiving.
    ctrl setDefaultACLAccess publishClientSend deny
    ctrl setDefaultACLAccess publishClientReceive deny
    ctrl setDefaultACLAccess subscribe deny
    ctrl setDefaultACLAccess unsubscribe allow

    # The gateway (and its -failed user, which says starting and failedToStart): it reads
    # locations, runtime fences, queries, expected arrivals, trips and the phones' transitions;
    # it writes events, states, status, occupancy, Home Assistant configs, fence errors, query
    # replies, expectation results, trips' progress and errors, OwnTracks transitions, the
    # phones' region commands (no one else may) and its own position; a runtime fence only to
    # put back its database's version over an older one (a broker restarted from an old save);
    # an expectation's or a trip's request only to clear it once settled.
    ctrl createRole gateway
    for t in owntracks/+/+ fleet/+/+/location devices/+/location geotriggers/fences/+/+ geotriggers/query/+ \
        geotriggers/expect/+ geotriggers/trips/+ owntracks/+/+/event; do reads gateway "$t"; done
    for t in geotriggers/events/# geotriggers/devices/# geotriggers/status/# geotriggers/occupancy/# homeassistant/# \
        geotriggers/fences/+/+ geotriggers/fences/+/+/error geotriggers/query/+/reply geotriggers/replies/# \
        geotriggers/expect/+ geotriggers/expect/+/result geotriggers/expect/+/error \
        geotriggers/trips/+ geotriggers/trips/+/progress geotriggers/trips/+/error owntracks/+/+/event \
        owntracks/+/+/cmd owntracks/gateway/#; do writes gateway "$t"; done

    # Dispatchers (and their consoles): they read the gateway's outputs and the phones'
    # transitions, and only they publish runtime fences, queries, expected arrivals and trips.
    ctrl createRole dispatcher
    reads dispatcher 'geotriggers/#'
    reads dispatcher 'owntracks/+/+/event'
    for t in geotriggers/fences/+/+ geotriggers/query/+ geotriggers/expect/+ geotriggers/trips/+; do writes dispatcher "$t"; done

    # Home Assistant's MQTT integration: the discovery configs and what they point at, and
    # its own birth message.
    ctrl createRole homeassistant
    reads homeassistant 'geotriggers/#'
    reads homeassistant 'homeassistant/#'
    writes homeassistant 'homeassistant/#'
}

# The device role of USER. mosquitto 2.0's plugin does not put the user name into an ACL's
# topic (no %u, as an acl_file's pattern lines have), so each device gets the device role
# made for it, device-USER: its own location topic (an OwnTracks phone owntracks/USER/DEVICE,
# a vehicle fleet/vehicles/USER/location or devices/USER/location), its own transitions,
# and reading its own region commands. Nobody else has these rights.
device_role() {
    user=$1
    ctrl createRole "device-$user"
    writes "device-$user" "owntracks/$user/+"
    reads "device-$user" "owntracks/$user/+/event"
    writes "device-$user" "owntracks/$user/+/event"
    reads "device-$user" "owntracks/$user/+/cmd"
    writes "device-$user" "fleet/vehicles/$user/location"
    writes "device-$user" "devices/$user/location"
}

case "${1:-}" in
roles)
    roles
    ;;
add)
    [ $# -ge 3 ] || { echo "usage: $0 add gateway|dispatcher|homeassistant|device USER [PASSWORD]" >&2; exit 2; }
    role=$2 user=$3
    case "$role" in
    gateway | dispatcher | homeassistant) ;;
    device) device_role "$user"; role="device-$user" ;;
    *) echo "$0: the roles are gateway, dispatcher, homeassistant and device, not $role" >&2; exit 2 ;;
    esac
    if [ $# -ge 4 ]; then
        ctrl createClient "$user" -p "$4"
    else
        # shellcheck disable=SC2086
        mosquitto_ctrl $connect dynsec createClient "$user"  # asks for the password
    fi
    ctrl addClientRole "$user" "$role"
    ;;
show)
    [ $# -ge 2 ] || { echo "usage: $0 show USER" >&2; exit 2; }
    ctrl getClient "$2"
    ;;
remove)
    [ $# -ge 2 ] || { echo "usage: $0 remove USER" >&2; exit 2; }
    ctrl deleteClient "$2"
    ctrl deleteRole "device-$2"
    ;;
*)
    echo "usage: $0 roles | add ROLE USER [PASSWORD] | show USER | remove USER" >&2
    exit 2
    ;;
esac
