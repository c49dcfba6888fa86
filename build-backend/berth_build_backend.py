"""berth's build backend: maturin's, with berth's Python extension built first.

maturin puts one Rust target in a wheel: here the ``berth`` binary (``bindings = "bin"``
in pyproject.toml). The extension ``berth._native`` (the crate in python-ext/, PyO3 with
the stable ABI of CPython 3.10) is built with cargo just before, copied into the package
folder for maturin to pack beside the Python modules, and removed again afterwards, so
one wheel carries the binary and the extension and the checkout is left as it was. (It
cannot be in .gitignore: maturin leaves out of a wheel what git ignores.)

Cargo's profile follows maturin's: ``MATURIN_PEP517_ARGS="--profile dev"`` builds both
with the dev profile (the tests and .ci/run do); the default is ``[tool.maturin]``'s
``profile``, ``dist`` (fat LTO, one codegen unit: the build people install). The
extension is stripped of symbols when maturin strips the binary (``strip = true`` in
``[tool.maturin]``).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import maturin
from maturin import (  # noqa: F401  (the rest of the PEP 517 interface, as maturin has it)
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "berth"
CRATE = "berth-python"
TARGET = "berth_native"
# The name Python imports `berth._native` from: the stable-ABI suffix on every platform
# CPython loads abi3 extensions from (Windows takes `.pyd`).
NATIVE = PACKAGE / ("_native.pyd" if sys.platform == "win32" else "_native.abi3.so")


def _maturin_setting(key: str, default: object) -> object:
    """``[tool.maturin]``'s ``key`` in pyproject.toml (Python 3.10 has no tomllib: the
    default, which is what pyproject.toml says)."""
    if sys.version_info >= (3, 11):
        import tomllib

        with (ROOT / "pyproject.toml").open("rb") as f:
            return tomllib.load(f).get("tool", {}).get("maturin", {}).get(key, default)
    return default


def _profile() -> str:
    args = shlex.split(os.environ.get("MATURIN_PEP517_ARGS", ""))
    for i, arg in enumerate(args):
        if arg == "--profile" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--profile="):
            return arg.split("=", 1)[1]
    return str(_maturin_setting("profile", "dist"))


def _strip() -> bool:
    return bool(_maturin_setting("strip", True))


def build_extension() -> Path:
    """Builds the extension with cargo and copies it to ``python/berth``; returns the copy."""
    cargo = os.environ.get("CARGO", "cargo")
    command = [
        cargo,
        "rustc",
        "--profile",
        _profile(),
        "-p",
        CRATE,
        "--lib",
        "--message-format=json-render-diagnostics",
    ]
    if _strip():
        command += ["--", "-C", "strip=symbols"]
    env = dict(os.environ, PYO3_BUILD_EXTENSION_MODULE="1")
    done = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"`{shlex.join(command)}` failed (its errors are above)")
    built: list[str] = []
    for line in done.stdout.splitlines():
        message = json.loads(line) if line.startswith("{") else {}
        if message.get("reason") == "compiler-artifact" and message["target"]["name"] == TARGET:
            built = [f for f in message["filenames"] if f.endswith((".so", ".dylib", ".dll"))]
    if not built:
        raise RuntimeError(f"`{shlex.join(command)}` named no library of {TARGET}")
    partial = NATIVE.with_name(NATIVE.name + ".partial")
    shutil.copyfile(built[0], partial)
    partial.replace(NATIVE)
    return NATIVE


def build_wheel(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    native = build_extension()
    try:
        wheel: str = maturin.build_wheel(wheel_directory, config_settings, metadata_directory)
        return wheel
    finally:
        native.unlink(missing_ok=True)


def build_editable(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    # An editable install reads python/berth in place, so the extension stays there.
    build_extension()
    wheel: str = maturin.build_editable(wheel_directory, config_settings, metadata_directory)
    return wheel
