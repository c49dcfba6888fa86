"""berth for the OpenHands SDK (``openhands-sdk``, imported only when used).

``plugin_sources(lockfile)`` gives the SDK its own ``PluginSource`` objects, pinned to the
locked commits, for callers that must hand the SDK its own type.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from berth import run

if TYPE_CHECKING:
    from openhands.sdk.plugin import PluginSource

__all__ = ["locked_plugins", "plugin_sources"]


def locked_plugins(lockfile: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The lock's plugins as ``berth plugins list --json`` prints them."""
    lock = Path(lockfile).resolve()
    out = run(["plugins", "--lockfile", str(lock), "list", "--json"], cwd=lock.parent)
    plugins: list[dict[str, Any]] = json.loads(out.stdout)["plugins"]
    return plugins


def plugin_sources(lockfile: str | os.PathLike[str]) -> list[PluginSource]:
    """The lock's plugins as the SDK's ``PluginSource`` objects, in lock order.

    A git plugin's ``ref`` is its locked commit, so the SDK fetches exactly what the lock
    pins; a local folder is given as an absolute path. The SDK cannot fetch archives: a
    lock holding one raises ``ValueError`` naming the plugin (use berth's own loading).
    """
    from openhands.sdk.plugin import PluginSource

    lock = Path(lockfile).resolve()
    sources: list[PluginSource] = []
    for plugin in locked_plugins(lock):
        kind = plugin["kind"]
        if kind == "git":
            sources.append(
                PluginSource(
                    source=plugin["source"],
                    ref=plugin["rev"],
                    repo_path=plugin.get("repo_path"),
                )
            )
        elif kind == "local":
            path = (lock.parent / plugin["path"]).resolve()
            sources.append(PluginSource(source=str(path)))
        else:
            raise ValueError(
                f"plugin `{plugin['name']}` comes from the archive `{plugin['source']}`, "
                "which the OpenHands SDK cannot fetch; load the lock with berth instead"
            )
    return sources
