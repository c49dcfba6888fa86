#!/usr/bin/env bash
# The change a developer makes most: one reader file touched, then `cargo test -p` on the
# crate that holds the reader, on a warm target. Prints the median of RUNS wall times.
#
#   bench/incremental.sh CRATE FILE [RUNS]
#   bench/incremental.sh berth-plugin plugin/src/skills/mod.rs
#
# Run it from a checkout, with CARGO_TARGET_DIR set to a target the checkout built before
# (it builds once first, untimed). docs/testing.md has its figures before and after the
# runtime was split.
set -euo pipefail
crate=$1 file=$2 runs=${3:-5}
cargo test -q -p "$crate" >/dev/null 2>&1
times=()
for _ in $(seq "$runs"); do
  touch "$file"
  start=$(date +%s.%N)
  cargo test -q -p "$crate" >/dev/null 2>&1
  end=$(date +%s.%N)
  times+=("$(echo "$end - $start" | bc)")
done
printf '%s\n' "${times[@]}" | sort -n | awk -v c="$crate" -v f="$file" \
  '{t[NR]=$1} END {printf "%s after touching %s: median %.1f s of %d (min %.1f, max %.1f)\n", c, f, t[int((NR+1)/2)], NR, t[1], t[NR]}'
