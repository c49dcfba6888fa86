#!/usr/bin/env bash
# A fresh clone's `cargo test --workspace` wall time (build + run), each run with an empty
# target folder, for each revision given, alternating, three rounds; prints each run and
# the median per revision. The tools the tests need come from .ci/run's caches (run
# .ci/run once first), so nothing is skipped. The scratch (a source tree and a ~15 GiB
# target folder at a time) goes under $BERTH_WALL_SCRATCH (default /var/tmp): too large
# for /dev/shm on a 24 GiB machine. A run whose tests fail is reported, not dropped.
#
#   bench/test_wall_time.sh BEFORE_REV AFTER_REV
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 REV [REV ...]" >&2; exit 2; }
cache="$HOME/.cache"
export CI=true CARGO_TERM_COLOR=never
export BERTH_UV="$cache/berth-ci-uv-0.13.9/bin/uv"
export BERTH_MATURIN="$cache/berth-ci-uv-0.13.9/bin/maturin"
export BERTH_MOTO_SERVER="$cache/berth-ci-uv-0.13.9/bin/moto_server"
export BERTH_WHEELHOUSE="$cache/berth-ci-wheels"
export BERTH_SDK_PYTHON="$cache/berth-ci-ohsdk-1.58.2/bin/python"
export BERTH_CLAUDE="$cache/berth-ci-claude-code-2.1.197/node_modules/.bin/claude"
export BERTH_GEMINI="$cache/berth-ci-gemini-cli-0.61.0/node_modules/.bin/gemini"
export BERTH_CODEX="$cache/berth-ci-codex-0.169.0/node_modules/.bin/codex"
for tool in "$BERTH_UV" "$BERTH_SDK_PYTHON" "$BERTH_CLAUDE" "$BERTH_GEMINI" "$BERTH_CODEX"; do
    [ -x "$tool" ] || { echo "missing $tool: run .ci/run once first" >&2; exit 2; }
done
scratch=$(mktemp -d "${BERTH_WALL_SCRATCH:-/var/tmp}/berth-test-wall.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
declare -A times
for round in 1 2 3; do
    for rev in "$@"; do
        src="$scratch/src-$rev"
        rm -rf "$src" "$scratch/target" && mkdir -p "$src"
        git archive "$rev" | tar -x -C "$src"
        start=$(date +%s%N)
        status=passed
        (cd "$src" && CARGO_TARGET_DIR="$scratch/target" cargo test -q --locked --workspace >"$scratch/log" 2>&1) \
            || { status=FAILED; grep -E "^test .*FAILED|^error" "$scratch/log" | head -20 >&2; }
        secs=$(( ($(date +%s%N) - start) / 1000000000 ))
        printf '%s round %d: %d s (%s)\n' "$rev" "$round" "$secs" "$status"
        times[$rev]+="$secs "
    done
done
for rev in "$@"; do
    median=$(printf '%s\n' ${times[$rev]} | sort -n | sed -n 2p)
    printf '%s: median %d s (%s)\n' "$rev" "$median" "${times[$rev]% }"
done
