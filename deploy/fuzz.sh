#!/usr/bin/env bash
# Fuzzes the pure core with libFuzzer: deploy/fuzz.sh [SECONDS] [TARGET...]
#
# Builds GeotriggerCore once as a static library with coverage and AddressSanitizer, links
# each target in Tests/Fuzz against it (outside SwiftPM: no product links any of this), seeds
# each corpus from the fixtures (tokens from Tests/Fuzz/dictionaries), then runs the targets one
# after another for SECONDS each (default 60). Everything lives in .build/fuzz/ (lib/, bin/,
# corpus/TARGET/, crashes/TARGET/, logs/TARGET.log); builds are cached by a hash of the
# compiler version, flags and sources. Exits non-zero if any target crashed, trapped, timed out
# or ran out of memory; its input is in crashes/TARGET/.
# Reproduce one with: .build/fuzz/bin/TARGET .build/fuzz/crashes/TARGET/crash-...
set -euo pipefail
cd "$(dirname "$0")/.."
. deploy/setup.sh
ensure_swift

seconds=${1:-60}
shift || true
all_targets=(payload json fences arcade tracks query)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
case "$seconds" in '' | *[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number, found '$seconds'" >&2; exit 2 ;; esac

out=.build/fuzz
mkdir -p "$out/lib" "$out/bin" "$out/logs"
# -sanitize=fuzzer on a compile that does not link only instruments (coverage + ASan); the
# libFuzzer runtime and its main come in at each target's link. lld ships with the toolchain
# (gold warns about every ASan symbol).
# -package-name: the core has `package` declarations (for the benchmarks), which need one.
flags=(-swift-version 6 -parse-as-library -O -sanitize=fuzzer,address -package-name geotrigger)
link_flags=(-use-ld=lld)

stamp() { { printf '%s\n' "$@"; cat "${@:2}"; } | sha256sum | cut -d' ' -f1; }

core_sources=()
while IFS= read -r f; do core_sources+=("$f"); done < <(find Sources/GeotriggerCore -name '*.swift' | LC_ALL=C sort)
core_stamp=$(stamp "$(swiftc --version 2>&1 | head -1) ${flags[*]}" "${core_sources[@]}")
if [ "$(cat "$out/lib/stamp" 2>/dev/null)" != "$core_stamp" ]; then
    echo "fuzz.sh: building GeotriggerCore (instrumented, -O; about a minute)"
    rm -f "$out/lib/stamp"
    swiftc "${flags[@]}" -module-name GeotriggerCore -whole-module-optimization \
        -emit-module -emit-module-path "$out/lib/GeotriggerCore.swiftmodule" \
        -emit-library -static -o "$out/lib/libGeotriggerCore.a" "${core_sources[@]}"
    echo "$core_stamp" > "$out/lib/stamp"
fi

# The targets build side by side, one per core (each is a separate swiftc and link).
builds=()
for t in "${targets[@]}"; do
    [ -f "Tests/Fuzz/$t.swift" ] || { echo "fuzz.sh: no target '$t' (Tests/Fuzz/$t.swift); targets: ${all_targets[*]}" >&2; exit 2; }
    sources=("Tests/Fuzz/$t.swift" Tests/Fuzz/Support/*.swift)
    s=$(stamp "$core_stamp ${link_flags[*]}" "${sources[@]}")
    if [ "$(cat "$out/bin/$t.stamp" 2>/dev/null)" != "$s" ]; then
        while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n || true; done
        echo "fuzz.sh: building $t"
        (swiftc "${flags[@]}" "${link_flags[@]}" -module-name "Fuzz_$t" -I "$out/lib" -L "$out/lib" -lGeotriggerCore \
            "${sources[@]}" -o "$out/bin/$t" && echo "$s" > "$out/bin/$t.stamp") &
        builds+=("$t:$!")
    fi
done
for b in "${builds[@]}"; do
    wait "${b#*:}" || { echo "fuzz.sh: building ${b%%:*} failed" >&2; exit 1; }
done

# seed TARGET PREFIX FILE...: copies each FILE (its first 16 KB, the inputs' limit) into the
# target's corpus, behind PREFIX (a selector byte in printf notation, or '').
seed() {
    local t=$1 prefix=$2 f
    shift 2
    for f in "$@"; do
        [ -f "$f" ] || continue
        { printf "$prefix"; head -c 16384 "$f"; } > "$out/corpus/$t/seed-$(echo "$f" | tr '/' '_')"
    done
}
for t in "${targets[@]}"; do
    mkdir -p "$out/corpus/$t"
    [ -d "Tests/Fuzz/seeds/$t" ] && cp Tests/Fuzz/seeds/$t/* "$out/corpus/$t/"
    case $t in
    json | query)
        seed "$t" '' Tests/Fixtures/config/*.json5 fences/*.geojson Tests/Fixtures/fences-bad/*.geojson \
            Tests/Fixtures/tracks/*.geojson Tests/Fixtures/replay/*.json5 deploy/geotrigger.example.json5 ;;
    fences)
        seed fences '' fences/*.geojson Tests/Fixtures/fences-bad/*.geojson Tests/Fixtures/geometry/synthetic.geojson \
            Tests/Fixtures/tracks/polygon.geojson Tests/Fixtures/nmea/*.geojson deploy/routes/*.geojson ;;
    tracks)
        seed tracks '\000' Tests/Fixtures/tracks/*.gpx
        seed tracks '\001' Tests/Fixtures/tracks/*.nmea Tests/Fixtures/nmea/*.log
        seed tracks '\002' Tests/Fixtures/tracks/*.jsonl Tests/Fixtures/replay/*.jsonl
        seed tracks '\003' Tests/Fixtures/tracks/*.rec Tests/Fixtures/tracks/rec/*/*/*.rec
        seed tracks '\004' Tests/Fixtures/tracks/*.geojson deploy/routes/*.geojson ;;
    esac
done

# Swift's own crash reporter would wait on the dying process; libFuzzer reports instead.
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:allocator_may_return_null=1}
failed=()
printf '%-8s %12s %8s  %s\n' target executions seconds result
for t in "${targets[@]}"; do
    crashes="$out/crashes/$t"
    mkdir -p "$crashes"
    before=$(ls "$crashes" | wc -l)
    log="$out/logs/$t.log"
    set +e
    timeout --kill-after=10 $((seconds + 60)) "$out/bin/$t" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
        -max_len=16384 -print_final_stats=1 -artifact_prefix="$crashes/" -dict="Tests/Fuzz/dictionaries/$t.dict" \
        "$out/corpus/$t" > "$log" 2>&1
    rc=$?
    set -e
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    [ -n "$runs" ] || runs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
    after=$(ls "$crashes" | wc -l)
    if [ "$rc" -ne 0 ] || [ "$after" -gt "$before" ]; then
        failed+=("$t")
        found=$(grep -o "Test unit written to .*" "$log" | tail -1 | sed 's/Test unit written to //')
        printf '%-8s %12s %8s  %s\n' "$t" "${runs:-?}" "$seconds" "FOUND (exit $rc) ${found:-see $log}"
        grep -m1 -E "Fatal error|ERROR: (libFuzzer|AddressSanitizer)" "$log" | sed 's/^/         /' || true
    else
        printf '%-8s %12s %8s  %s\n' "$t" "${runs:-?}" "$seconds" "no crash"
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz.sh: ${failed[*]} found a crash (inputs in $out/crashes/, logs in $out/logs/)" >&2
    exit 1
fi
