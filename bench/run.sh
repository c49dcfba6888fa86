#!/usr/bin/env bash
# Builds berth in release mode and runs the benchmarks; prints a Markdown table.
#
# The server rows compare this build with the one issue #18 started from: that revision
# (BERTH_BASELINE_REV, default 4baf2c1; `none` skips it) is exported with `git archive`
# and built once into ~/.cache/berth-bench-baseline (BERTH_BASELINE_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p berth -p berth-python
target="${CARGO_TARGET_DIR:-target}"
extra=()
rev="${BERTH_BASELINE_REV:-4baf2c1}"
if [ "$rev" != none ] && { [[ " $* " != *" --only "* ]] || [[ " $* " == *" server "* ]]; }; then
    base="${BERTH_BASELINE_DIR:-$HOME/.cache/berth-bench-baseline}"
    src="$base/src-$rev"
    if [ ! -f "$src/Cargo.toml" ]; then
        rm -rf "$src" && mkdir -p "$src"
        git archive "$rev" | tar -x -C "$src"
    fi
    echo "building the baseline $rev (once) ..." >&2
    CARGO_TARGET_DIR="$base/target" cargo build --release -q -p berth --manifest-path "$src/Cargo.toml"
    extra=(--baseline "$base/target/release/berth" --baseline-rev "$rev")
fi
exec python3 bench/bench.py --berth "$(realpath "$target/release/berth")" "${extra[@]}" "$@"
