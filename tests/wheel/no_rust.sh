#!/usr/bin/env bash
# The wheel where there is no Rust: built once from this checkout, installed into a fresh
# virtual environment from wheels alone, then run with a PATH holding that environment and
# the system only (no cargo, no rustc): `berth --version`, `berth plugins sync` of the
# shipped example, and the OpenHands drop-in (examples/openhands_sdk.py) with the real SDK.
#
# .ci/run runs it after the tests; by hand it needs what .ci/run exports: BERTH_MATURIN
# (maturin, with the Python it is installed in beside it), BERTH_WHEELHOUSE (the uv 0.13.9
# wheel) and BERTH_SDK_PYTHON (a Python 3.12 with openhands-sdk 1.58.2). The wheel is built
# with the dev profile, reusing what `cargo test` built; a release wheel holds the same
# files, built with the `dist` profile (`pip install .`).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
: "${BERTH_MATURIN:?set BERTH_MATURIN to maturin}"
: "${BERTH_WHEELHOUSE:?set BERTH_WHEELHOUSE to a folder with the uv 0.13.9 wheel}"
: "${BERTH_SDK_PYTHON:?set BERTH_SDK_PYTHON to a Python with openhands-sdk 1.58.2}"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/berth-wheel.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
fail() { echo "wheel check: $*" >&2; exit 1; }

# 1. One wheel, as `pip install .` builds it (through the in-tree backend).
tools="$(dirname "$BERTH_MATURIN")"
PATH="$tools:$PATH" MATURIN_PEP517_ARGS="--profile dev" "$tools/python" -m pip wheel \
  --quiet --no-build-isolation --no-deps --no-index --wheel-dir "$scratch/wheels" "$repo"
wheel="$(ls "$scratch/wheels")"
case "$wheel" in
  berth-0.1.0-*-linux_*.whl | berth-0.1.0-*-manylinux*.whl) ;;
  *) fail "not a platform wheel: $wheel" ;;
esac

# 2. A fresh environment, from the wheels alone: berth and the uv it depends on. It uses
# the SDK's Python, and sees the SDK's packages as a user's environment with the SDK
# installed would (a .pth file; no package of berth's comes from there).
base="$("$BERTH_SDK_PYTHON" -c 'import sys; print(sys._base_executable)')"
"$base" -m venv "$scratch/venv"
"$scratch/venv/bin/pip" install --quiet --no-index \
  --find-links "$BERTH_WHEELHOUSE" --find-links "$scratch/wheels" berth
site() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
site "$BERTH_SDK_PYTHON" > "$(site "$scratch/venv/bin/python")/openhands-sdk.pth"

# 3. Run it where there is no Rust toolchain.
mkdir -p "$scratch/home" "$scratch/project/examples" "$scratch/project/fixtures"
cp -r "$repo/examples/team" "$scratch/project/examples/team"
cp "$repo/examples/openhands_sdk.py" "$scratch/project/examples/"
cp -r "$repo/fixtures/plugins" "$scratch/project/fixtures/plugins"
clean=(env -i "HOME=$scratch/home" "PATH=$scratch/venv/bin:/usr/local/bin:/usr/bin:/bin"
  "BERTH_STORE=$scratch/store" LANG=C.UTF-8 LITELLM_LOCAL_MODEL_COST_MAP=True)
if "${clean[@]}" sh -c 'command -v cargo || command -v rustc'; then
  fail "cargo or rustc is on the clean PATH"
fi
version="$("${clean[@]}" berth --version)"
[ "$version" = "berth 0.1.0" ] || fail "berth --version said: $version"
(cd "$scratch/project" && "${clean[@]}" berth plugins sync --manifest examples/team/plugins.toml)
ls "$scratch/store/store-v1" | grep -q -- '-review$' || fail "the example's plugins are not in the store"
said="$(cd "$scratch/project" && "${clean[@]}" python examples/openhands_sdk.py \
  --manifest examples/team/plugins.toml)"
echo "$said" | grep -q "skills: code-review, review:check, lint-rules, house-style" \
  || fail "the drop-in said: $said"
echo "wheel check: $wheel installed without Rust; berth, its sync and the OpenHands drop-in ran"
