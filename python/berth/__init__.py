"""berth: reproducible, content-addressed plugin sets for AI coding agents.

The wheel carries the ``berth`` binary (in the environment's ``bin/``, next to the pinned
uv it depends on). This module finds it and runs it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path

__all__ = ["find_berth_bin", "run"]

_EXE = "berth" + (".exe" if sys.platform == "win32" else "")


def find_berth_bin() -> Path:
    """The ``berth`` binary this package installed.

    Looked for where pip puts scripts: this interpreter's scheme (a venv, a system or a
    ``--user`` install), then next to the interpreter. Raises ``FileNotFoundError`` naming
    the places tried.
    """
    candidates: list[Path] = []
    for scheme in (None, f"{os.name}_user"):
        try:
            scripts = (
                sysconfig.get_path("scripts")
                if scheme is None
                else sysconfig.get_path("scripts", scheme)
            )
        except KeyError:
            continue
        if scripts:
            candidates.append(Path(scripts) / _EXE)
    candidates.append(Path(sys.executable).parent / _EXE)
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    tried = ", ".join(str(p) for p in candidates)
    raise FileNotFoundError(f"the berth binary is not installed (looked at {tried})")


def run(args: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Runs ``berth ARGS`` and returns what it printed (text)."""
    return subprocess.run(
        [str(find_berth_bin()), *args],
        check=check,
        capture_output=True,
        text=True,
    )
