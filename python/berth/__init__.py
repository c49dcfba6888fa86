"""berth: reproducible, content-addressed plugin sets for AI coding agents.

The wheel carries the ``berth`` binary (in the environment's ``bin/``, next to the pinned
uv it depends on). This module finds it and runs it; ``berth.Client`` talks to
``berth serve``, and ``berth.openhands`` loads a locked plugin set into the OpenHands SDK.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path

from berth.client import Client, ServerConversation, ServerError

__all__ = ["BerthError", "Client", "ServerConversation", "ServerError", "find_berth_bin", "run"]

_EXE = "berth" + (".exe" if sys.platform == "win32" else "")


def find_berth_bin() -> Path:
    """The ``berth`` binary this package installed.

    ``BERTH_BIN`` names another one (a development build). Otherwise it is looked for
    where pip puts scripts: this interpreter's scheme (a venv, a system or a
    ``--user`` install), then next to the interpreter. Raises ``FileNotFoundError`` naming
    the places tried.
    """
    override = os.environ.get("BERTH_BIN")
    if override:
        return Path(override)
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


def run(
    args: Sequence[str],
    *,
    check: bool = True,
    cwd: str | os.PathLike[str] | None = None,
    store: str | os.PathLike[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Runs ``berth ARGS`` (in ``cwd``, with ``--store STORE`` when given) and returns what
    it printed (text). With ``check``, a failure raises ``BerthError`` carrying berth's
    error message."""
    options = ["--store", os.fspath(store)] if store is not None else []
    done = subprocess.run(
        [str(find_berth_bin()), *options, *args],
        check=False,
        capture_output=True,
        text=True,
        cwd=cwd,
    )
    if check and done.returncode != 0:
        raise BerthError(done.returncode, done.stderr)
    return done


class BerthError(RuntimeError):
    """berth exited with a failure; ``message`` is what it printed on stderr."""

    def __init__(self, returncode: int, message: str) -> None:
        super().__init__(message.strip() or f"berth exited with status {returncode}")
        self.returncode = returncode
        self.message = message
