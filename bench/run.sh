#!/usr/bin/env bash
# Builds berth in release mode and runs the benchmarks; prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p berth
target="${CARGO_TARGET_DIR:-target}"
exec python3 bench/bench.py --berth "$(realpath "$target/release/berth")" "$@"
