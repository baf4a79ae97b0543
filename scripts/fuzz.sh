#!/usr/bin/env bash
# Fuzz smoke run: builds the cargo-fuzz crate in fuzz/ with nightly and runs every target for
# SECONDS each (default 30), one after the other, one libFuzzer process at a time.
#
#   scripts/fuzz.sh [SECONDS]
#
# Prints each target's executions, exec/s, corpus size and whether it found a crash (panic,
# sanitizer report, OOM > 4 GB, or an input slower than FUZZ_TIMEOUT seconds; the input is in
# fuzz/artifacts/<target>/). Exits 1 on a finding, or when nightly or cargo-fuzz is missing.
#
# Environment: FUZZ_TARGETS (space-separated subset), FUZZ_SANITIZER (address | none; default
# address), FUZZ_TIMEOUT (seconds per input, default 20), CARGO_BUILD_JOBS (default 1).
# Seeds are in fuzz/seeds/<target>/ (committed); the corpus libFuzzer grows is fuzz/corpus/<target>/
# (gitignored), logs are fuzz/logs/<target>.log.
set -euo pipefail

SECONDS_EACH="${1:-30}"
if ! [[ "$SECONDS_EACH" =~ ^[0-9]+$ ]] || [ "$SECONDS_EACH" -lt 1 ]; then
    echo "usage: scripts/fuzz.sh [SECONDS]   (SECONDS: a positive integer, default 30)" >&2
    exit 2
fi
SANITIZER="${FUZZ_SANITIZER:-address}"
TIMEOUT="${FUZZ_TIMEOUT:-20}"
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-1}"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT/fuzz"

if ! command -v rustup >/dev/null 2>&1 || ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "fuzz.sh: no nightly toolchain (cargo-fuzz needs nightly for the sanitizer flags)." >&2
    echo "         install it with:  rustup toolchain install nightly" >&2
    exit 1
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: cargo-fuzz is not installed." >&2
    echo "         install it with:  cargo install cargo-fuzz" >&2
    exit 1
fi

# -O: optimised, with debug assertions (cargo fuzz's default keeps them on)
FUZZ_FLAGS=(-O -s "$SANITIZER")
echo "== building the fuzz targets: cargo +nightly fuzz build ${FUZZ_FLAGS[*]} (CARGO_BUILD_JOBS=$CARGO_BUILD_JOBS)"
cargo +nightly fuzz build "${FUZZ_FLAGS[@]}"

TARGETS="${FUZZ_TARGETS:-$(cargo +nightly fuzz list)}"
mkdir -p logs
found=0
summary=()
for t in $TARGETS; do
    mkdir -p "corpus/$t"
    if [ -d "seeds/$t" ]; then
        cp -n seeds/"$t"/* "corpus/$t/" 2>/dev/null || true
    fi
    if [ "$t" = export ]; then
        # full-file seeds: the target writes each file of its base export as an input
        first="$(ls seeds/export | head -n1)"
        HOPBENCH_FUZZ_EXPORT_SEEDS="$PWD/corpus/export" \
            cargo +nightly fuzz run "${FUZZ_FLAGS[@]}" export "$PWD/seeds/export/$first" \
            >"logs/export-seeds.log" 2>&1 || {
            echo "fuzz.sh: export: writing the full-file seeds failed (logs/export-seeds.log)" >&2
            found=1
        }
    fi
    echo "== $t: ${SECONDS_EACH}s"
    set +e
    cargo +nightly fuzz run "${FUZZ_FLAGS[@]}" "$t" "$PWD/corpus/$t" -- \
        -max_total_time="$SECONDS_EACH" -rss_limit_mb=4096 -timeout="$TIMEOUT" \
        -print_final_stats=1 >"logs/$t.log" 2>&1
    rc=$?
    set -e
    execs="$(grep -o 'stat::number_of_executed_units:[[:space:]]*[0-9]*' "logs/$t.log" | tail -n1 | grep -o '[0-9]*$' || true)"
    speed="$(grep -o 'stat::average_exec_per_sec:[[:space:]]*[0-9]*' "logs/$t.log" | tail -n1 | grep -o '[0-9]*$' || true)"
    corp="$(grep -o 'corp: [0-9]*/[0-9.]*[a-zA-Z]*' "logs/$t.log" | tail -n1 | cut -d' ' -f2 || true)"
    if [ -z "$execs" ]; then
        # no final stats: the run died; take the last status line
        execs="$(grep -o '^#[0-9]*' "logs/$t.log" | tail -n1 | tr -d '#' || true)"
    fi
    if [ "$rc" -eq 0 ]; then
        verdict="no crash"
    else
        found=1
        artifact="$(grep -o 'Test unit written to [^ ]*' "logs/$t.log" | tail -n1 | sed 's/Test unit written to //' || true)"
        kind="$(grep -m1 -o -E 'panicked at [^ ]*' "logs/$t.log" || true)"
        if [ -z "$kind" ]; then
            kind="$(grep -m1 -o -E 'ERROR: (AddressSanitizer|libFuzzer): [a-z-]*' "logs/$t.log" || true)"
        fi
        verdict="CRASH (exit $rc${kind:+: $kind}${artifact:+; input: $artifact}; log: fuzz/logs/$t.log)"
    fi
    line="$(printf '%-10s executions %-10s exec/s %-6s corpus %-12s %s' "$t" "${execs:-?}" "${speed:-?}" "${corp:-?}" "$verdict")"
    echo "$line"
    summary+=("$line")
done

echo
echo "== summary (${SECONDS_EACH}s per target)"
printf '%s\n' "${summary[@]}"
if [ "$found" -ne 0 ]; then
    echo "fuzz.sh: FINDINGS: see the CRASH lines above (reproduce: cd fuzz && cargo +nightly fuzz run ${FUZZ_FLAGS[*]} <target> <input>)" >&2
    exit 1
fi
echo "fuzz.sh: no findings"
