#!/usr/bin/env python3
"""Differential check of berth's plugin loading against the OpenHands SDK's, over any
folders of plugins (a marketplace checkout, say), one plugin at a time.

    python3 bench/sdk_diff.py --berth target/release/berth --sdk-python PY DIR [DIR ...]

Each DIR is a plugin folder. The SDK side runs `fixtures/conformance/oh_plugin_oracle.py
load` once over all of them (per-plugin dumps); the berth side locks, syncs and shows each
plugin alone in a scratch project. Differences are printed per plugin and counted by
kind; the deliberate ones (README, "Deliberate differences") are normalised away first:
plugin-root variables expanded, plugin-relative sources and truncation notices, transport
inferred, a bad entry dropped instead of its file. Exit status 1 when anything is left.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTICE = ("<response clipped><NOTE>Due to the max output limit, only part of the full "
          "description is shown. You can view the complete skill content at ")


def oracle(python: str, dirs: list[Path]) -> list[dict]:
    out = subprocess.run(
        [python, str(ROOT / "fixtures/conformance/oh_plugin_oracle.py"), "load", "--max-skills", "100000",
         *map(str, dirs)],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out)["plugins"]


def berth_set(berth: str, store: Path, work: Path, plugin: Path) -> tuple[dict | None, str]:
    work.mkdir(parents=True, exist_ok=True)
    (work / "plugins.toml").write_text(f'[[plugin]]\nsource = "{plugin}"\n')
    env = dict(os.environ, BERTH_STORE=str(store))
    sync = subprocess.run([berth, "plugins", "sync", "-q"], cwd=work, env=env, capture_output=True, text=True)
    if sync.returncode != 0:
        return None, sync.stderr.strip()
    show = subprocess.run([berth, "plugins", "show", "--json", "--max-skills", "100000"], cwd=work, env=env,
                          capture_output=True, text=True)
    if show.returncode != 0:
        return None, show.stderr.strip()
    return json.loads(show.stdout), sync.stderr.strip()


def normalise(value, root: str):
    """Plugin roots as `<root>` on both sides (berth expands the variables, the SDK keeps
    them), so only real differences remain."""
    text = json.dumps(value)
    for token in ("${CLAUDE_PLUGIN_ROOT}", "${PLUGIN_ROOT}", "<plugin#0>"):
        text = text.replace(token, "<root>")
    if root:
        text = text.replace(root, "<root>")
    return json.loads(text)


def same_description(mine, sdk) -> bool:
    if not (isinstance(mine, str) and isinstance(sdk, str) and NOTICE in sdk):
        return mine == sdk
    head_m, _, tail_m = mine.partition(NOTICE)
    head_s, _, tail_s = sdk.partition(NOTICE)
    tail_m = tail_m.split(".</NOTE>", 1)[-1]
    tail_s = tail_s.split(".</NOTE>", 1)[-1]
    return (head_s.startswith(head_m) or head_m.startswith(head_s)) and (
        tail_s.endswith(tail_m) or tail_m.endswith(tail_s))


def compare(sdk: dict, ours: dict) -> list[tuple[str, str]]:
    diffs: list[tuple[str, str]] = []
    root = ours["plugins"][0]["root"]
    sdk_skills = sdk["skills"] + sdk["command_skills"]
    # A later skill of the same name replaces an earlier one, in place, in both.
    merged: dict[str, dict] = {}
    for s in sdk_skills:
        merged[s["name"]] = s
    sdk_skills = list(merged.values())
    names = [s["name"] for s in ours["skills"]]
    if names != [s["name"] for s in sdk_skills]:
        diffs.append(("skill names", f"berth {names} sdk {[s['name'] for s in sdk_skills]}"))
    else:
        for mine, theirs in zip(ours["skills"], sdk_skills):
            if not same_description(mine["description"], theirs.get("description")):
                diffs.append(("skill description", mine["name"]))
            for key, their_key in (("triggers", "trigger_keywords"), ("content", "content"),
                                   ("inputs", "inputs"), ("allowed_tools", "allowed_tools"),
                                   ("license", "license"), ("metadata", "metadata"),
                                   ("disable_model_invocation", "disable_model_invocation")):
                if normalise(mine[key], root) != normalise(theirs.get(their_key), root):
                    diffs.append((f"skill {key}", f"{mine['name']}: berth {mine[key]!r:.120} sdk {theirs.get(their_key)!r:.120}"))
    sdk_mcp = normalise(sdk["mcp_config"], "")
    ours_mcp = normalise(ours["mcp_servers"], root)
    if sdk["mcp_config"] or not any("mcp" in w.lower() for w in ours["warnings"]):
        if list(sdk_mcp) != list(ours_mcp):
            diffs.append(("mcp server names", f"berth {list(ours_mcp)} sdk {list(sdk_mcp)}"))
    for name, theirs in sdk_mcp.items():
        mine = ours_mcp.get(name)
        if mine is None:
            continue
        for key in ("command", "args", "env", "url", "cwd", "headers", "description", "icon", "timeout",
                    "sse_read_timeout", "keep_alive", "auth"):
            default = [] if key == "args" else {} if key in ("env", "headers") else None
            if mine.get(key) != theirs.get(key, default):
                diffs.append((f"mcp {key}", f"{name}: berth {mine.get(key)!r:.120} sdk {theirs.get(key)!r:.120}"))
        if mine["enabled"] != theirs.get("enabled", True):
            diffs.append(("mcp enabled", name))
    sdk_hooks = normalise(sdk["hooks"] or {}, "")
    ours_hooks = normalise(ours["hooks"], root)
    for event, matchers in sdk_hooks.items():
        mine = ours_hooks.get(event, [])
        if [m["matcher"] for m in mine] != [m["matcher"] for m in matchers]:
            diffs.append(("hook matchers", f"{event}: berth {[m['matcher'] for m in mine]} sdk {[m['matcher'] for m in matchers]}"))
            continue
        for m, s in zip(mine, matchers):
            got = [(h["type"], h["command"] or None, h["timeout"]) for h in m["hooks"]]
            want = [(h["type"], h.get("command"), h.get("timeout")) for h in s["hooks"]]
            if got != want:
                diffs.append(("hook commands", f"{event}: berth {got} sdk {want}"))
    sdk_agents = sdk["agents"]
    if [a["name"] for a in ours["agents"]] != [a["name"] for a in sdk_agents]:
        diffs.append(("agent names", f"berth {[a['name'] for a in ours['agents']]} sdk {[a['name'] for a in sdk_agents]}"))
    else:
        for mine, theirs in zip(ours["agents"], sdk_agents):
            for key in ("description", "model", "color", "tools", "skills", "permission_mode",
                        "max_iteration_per_run", "max_budget_per_run", "profile_store_dir", "condenser",
                        "when_to_use_examples", "metadata"):
                if mine[key] != theirs.get(key):
                    diffs.append((f"agent {key}", f"{mine['name']}: berth {mine[key]!r:.120} sdk {theirs.get(key)!r:.120}"))
            if mine["content"] != theirs["system_prompt"]:
                diffs.append(("agent prompt", mine["name"]))
    return diffs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--berth", required=True)
    parser.add_argument("--sdk-python", required=True)
    parser.add_argument("dirs", nargs="+", type=Path)
    args = parser.parse_args()
    dirs = [d.resolve() for d in args.dirs if d.is_dir()]
    sdk = oracle(args.sdk_python, dirs)
    kinds: collections.Counter[str] = collections.Counter()
    seen: collections.Counter[str] = collections.Counter()
    failing = 0
    with tempfile.TemporaryDirectory(prefix="berth-sdk-diff-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as tmp:
        for i, (d, theirs) in enumerate(zip(dirs, sdk)):
            ours, status = berth_set(args.berth, Path(tmp) / "store", Path(tmp) / f"p{i}", d)
            if theirs["error"] or ours is None:
                if bool(theirs["error"]) != (ours is None):
                    kinds["load fails in one only"] += 1
                    failing += 1
                    print(f"{d}: sdk error {theirs['error']} / berth {status[:300]}")
                continue
            seen.update(skills=len(ours["skills"]), agents=len(ours["agents"]),
                        mcp_servers=len(ours["mcp_servers"]),
                        hooks=sum(len(m) for m in ours["hooks"].values()), warnings=len(ours["warnings"]))
            diffs = compare(theirs, ours)
            if diffs:
                failing += 1
                print(f"{d}:")
                for kind, detail in diffs:
                    kinds[kind] += 1
                    print(f"  {kind}: {detail}")
    print(f"\n{len(dirs)} plugins, {failing} with differences; compared "
          + ", ".join(f"{n} {k}" for k, n in seen.items()), file=sys.stderr)
    for kind, n in kinds.most_common():
        print(f"  {n:4}  {kind}", file=sys.stderr)
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
