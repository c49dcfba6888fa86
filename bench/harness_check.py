#!/usr/bin/env python3
"""Every `berth materialize` target on real plugins, each judged by its real client
(issue #56; the method of docs/harnesses.md, on marketplaces fetched once by hand).

    set -a; . /tmp/berth-env; set +a      # the pinned clients, as .ci/run exports them
    python3 bench/harness_check.py --berth target/debug/berth MARKET_DIR [MARKET_DIR ...]

Each MARKET_DIR is a checkout of a marketplace (a folder with
`.claude-plugin/marketplace.json`). From their entries whose source is a relative path
(installable offline) the script picks `--count` plugins (100), spread over the
marketplaces in turn and evenly over each catalog, one plugin of a name. It copies each
marketplace (hard links; a name Claude Code keeps for Anthropic's own
GitHub marketplaces, as `claude-plugins-official`, becomes `local-NAME` in the copy, for
every client alike), writes a berth project declaring them as local folders, and locks
and syncs it. Then, for each target and each pinned version of its client, it compares
plugin by plugin the client's own install of the plugins with what `berth materialize
TARGET` wrote into a fresh folder, both read by the same client, as the tests in
tests/it/harness_forms.rs and tests/it/copilot_opencode.rs do on the fixture:

    claude         BERTH_CLAUDE_NEWEST, BERTH_CLAUDE, BERTH_CLAUDE_PREVIOUS
    codex          BERTH_CODEX_NEWEST, BERTH_CODEX
    gemini         BERTH_GEMINI       (reference: Claude Code's install, BERTH_CLAUDE)
    copilot        BERTH_COPILOT
    opencode       BERTH_OPENCODE     (reference: Claude Code's install, BERTH_CLAUDE)
    agent-plugins  BERTH_SDK_PYTHON   (the OpenHands SDK)

A plugin is `equal`, `warned` (it differs, and a warning of `materialize` names the plugin
and what differs), `refused` (the client refused it in its own install) or `UNWARNED` (it
differs and nothing said so: a berth bug). Every client runs offline, its home and
configuration folders in a scratch folder on /dev/shm. Exit status 1 when any unwarned
difference remains. An MCP server whose runner line the lock pinned (`npx`, `uvx`) starts
the stored closure, by design: it is compared by name only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness_clients as clients  # noqa: E402
from harness_clients import Inventory, Pick, Run  # noqa: E402

# Marketplace names Claude Code keeps for Anthropic's GitHub marketplaces ("reserved for
# official Anthropic marketplaces"): a local copy of one is added under `local-NAME`.
RESERVED = {"claude-plugins-official", "anthropic-agent-skills", "knowledge-work-plugins"}

# What a warning says of a whole kind of component (`its LSP servers are not written`),
# when it names no item; and of a plugin built from its marketplace entry.
KIND_PHRASES = {"Hooks": "hook", "LSP servers": "lsp server", "MCP servers": "mcp server",
                "plugin": "not written"}
ENTRY_PHRASE = "marketplace entry defines"


@dataclass
class Market:
    source: Path  # the checkout given
    name: str  # its catalog's name
    commit: str
    entries: list[dict]  # the entries with a relative-path source
    copy: Path | None = None
    local_name: str = ""


def catalog_of(folder: Path) -> Path:
    for rel in (".plugin/marketplace.json", ".claude-plugin/marketplace.json"):
        if (folder / rel).is_file():
            return folder / rel
    raise SystemExit(f"{folder}: no marketplace.json")


def read_market(folder: Path) -> Market:
    catalog = json.loads(catalog_of(folder).read_text())
    commit = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "(not a git checkout)"
    seen: dict[str, int] = {}
    for entry in catalog.get("plugins", []):
        seen[entry.get("name", "")] = seen.get(entry.get("name", ""), 0) + 1
    entries = [e for e in catalog.get("plugins", [])
               if isinstance(e.get("source"), str) and e["source"].startswith("./")
               and seen[e["name"]] == 1]
    return Market(folder, catalog["name"], commit, entries)


def pick(markets: list[Market], count: int, only: set[str]) -> list[Pick]:
    """`count` plugins (or those named in `only`): each marketplace's share in turn, then
    evenly over its catalog. A name an earlier marketplace offers is left out of the later
    ones."""
    taken: set[str] = set()
    candidates: list[list[dict]] = []
    for market in markets:
        own = [e for e in market.entries if e["name"] not in taken
               and (not only or e["name"] in only)]
        taken.update(e["name"] for e in market.entries)
        candidates.append(own)
    quota = [0] * len(markets)
    while sum(quota) < count and any(q < len(c) for q, c in zip(quota, candidates)):
        for i, c in enumerate(candidates):
            if quota[i] < len(c) and sum(quota) < count:
                quota[i] += 1
    picks = []
    for market, own, q in zip(markets, candidates, quota):
        for i in range(q):
            entry = own[i * len(own) // q]
            picks.append(Pick(entry["name"], market.local_name, market.copy / entry["source"],
                              entry))
    return picks


def copy_market(market: Market, into: Path) -> None:
    """The marketplace as the clients and berth get it: hard links (its `.git` too: Codex
    clones a plugin its own catalog gives as a URL), the catalog renamed where Claude Code
    keeps the name."""
    market.copy = into / market.source.name
    shutil.copytree(market.source, market.copy, copy_function=os.link, symlinks=True)
    market.local_name = f"local-{market.name}" if market.name in RESERVED else market.name
    path = catalog_of(market.copy)
    catalog = json.loads(path.read_text())
    catalog["name"] = market.local_name
    path.unlink()  # a hard link to the checkout's file
    path.write_text(json.dumps(catalog, indent=2) + "\n")


def berth_project(run: Run, markets: list[Market], picks: list[Pick]) -> Path:
    project = run.scratch / "project"
    project.mkdir()
    text = "".join(f'[[marketplace]]\nname = "{m.local_name}"\nsource = "{m.copy}"\n\n'
                   for m in markets)
    text += "".join(f'[[plugin]]\nsource = "{p.name}@{p.market}"\n\n' for p in picks)
    (project / "plugins.toml").write_text(text)
    out = run.berth(["plugins", "sync"], cwd=project)
    if out.returncode != 0:
        raise SystemExit(f"berth plugins sync: {out.stderr}")
    return project


def materialize(run: Run, project: Path, target: str, folder: Path) -> list[str]:
    out = run.berth(["materialize", target, str(folder)], cwd=project)
    if out.returncode != 0:
        raise SystemExit(f"berth materialize {target}: {out.stderr}")
    return [line.removeprefix("warning: ") for line in out.stderr.splitlines()
            if line.startswith("warning: ")]


@dataclass
class Verdict:
    """One target at one client version: each plugin's outcome, with what says why."""
    target: str
    client: str
    equal: list[str] = field(default_factory=list)
    warned: dict[str, list[str]] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    unwarned: dict[str, list[str]] = field(default_factory=dict)


def about(plugin: str, warnings: list[str]) -> list[str]:
    return [w for w in warnings if f"`{plugin}`" in w.split(":", 1)[0]
            or w.startswith(f"plugin `{plugin}`")]


def names_in(warning: str) -> set[str]:
    """What a warning names in backticks, and of a path its file's stem and its folder
    (`skills/ui-toolkit/SKILL.md`, `agents/silent-failure-hunter.md`)."""
    out = set()
    for token in re.findall(r"`([^`]+)`", warning):
        out.add(token)
        if "/" in token:
            path = Path(token)
            out.update({path.stem, path.parent.name})
    return out


def said(kind: str, name: str, mine: list[str]) -> str | None:
    """The warning that names this difference: the item itself, else the plugin's entry
    (what the client reads differently of it), else its kind as a whole."""
    for test in (lambda w: kind != "plugin" and name in names_in(w),
                 lambda w: ENTRY_PHRASE in w,
                 lambda w: kind in KIND_PHRASES and KIND_PHRASES[kind] in w.lower()):
        found = [w for w in mine if test(w)]
        if found:
            # The one saying what is not written, where several name the kind.
            return next((w for w in found if "not written" in w), found[0])
    return None


def differences(theirs: Inventory, ours: Inventory, extra_ok) -> list[tuple[str, str, str]]:
    """(kind, item, where it is only) for each item the two do not share."""
    out = []
    for kind in sorted(set(theirs) | set(ours)):
        a, b = set(theirs.get(kind, [])), set(ours.get(kind, []))
        out += [(kind, i, "only in the client's own install") for i in sorted(a - b)]
        out += [(kind, i, "only in berth's") for i in sorted(b - a) if not extra_ok(kind, i)]
    return out


def judge(verdict: Verdict, picks: list[Pick], theirs: dict[str, Inventory | None],
          refused: dict[str, str], ours: dict[str, Inventory | None], warnings: list[str],
          extra_ok, refusal_warned: str | None) -> Verdict:
    for p in picks:
        key, mine = p.key, about(p.name, warnings)
        if p.name in refused:
            verdict.refused[key] = refused[p.name]
            if refusal_warned and not any(refusal_warned in w for w in mine):
                verdict.unwarned[key] = [f"the client refuses it ({refused[p.name]}); "
                                         "berth writes it and says nothing"]
            continue
        own, got = theirs.get(p.name), ours.get(p.name)
        if own is None or got is None:
            diffs = [("plugin", p.name, "read by the client from "
                      + ("neither" if own is got else "berth's only" if own is None
                         else "its own install only"))]
        else:
            diffs = differences(own, got, lambda kind, i: extra_ok(p, kind, i))
        if not diffs:
            verdict.equal.append(key)
            continue
        lines, bad = [], []
        for kind, item, where in diffs:
            w = said(kind, item.split(" = ", 1)[0], mine)
            line = f"{kind}: {item} ({where})" + (f"; warned: {w}" if w else "")
            (lines if w else bad).append(line)
        if bad:
            verdict.unwarned[key] = bad + lines
        else:
            verdict.warned[key] = lines
    return verdict


def details(v: Verdict, verbose: bool) -> None:
    print(f"\n## {v.target}: {v.client}\n  equal {len(v.equal)}, warned {len(v.warned)}, "
          f"refused by the client itself {len(v.refused)}, "
          f"unwarned differences {len(v.unwarned)}", flush=True)
    for key, lines in v.warned.items():
        print(f"  warned    {key}")
        for line in lines if verbose else lines[:3]:
            print(f"      {line[:400]}")
    for key, reason in v.refused.items():
        print(f"  refused   {key}: {reason[:300]}")
    for key, lines in v.unwarned.items():
        print(f"  UNWARNED  {key}")
        for line in lines:
            print(f"      {line[:400]}")


def table(verdicts: list[Verdict]) -> None:
    print("\n| target | client | equal | warned | refused by the client | unwarned |")
    print("|---|---|---|---|---|---|")
    for v in verdicts:
        print(f"| `{v.target}` | {v.client} | {len(v.equal)} | {len(v.warned)} | "
              f"{len(v.refused)} | {len(v.unwarned)} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--berth", required=True, help="the berth binary")
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--only", default="", help="comma-separated plugin names to check "
                        "instead of a pick (the first marketplace offering each)")
    parser.add_argument("--targets", default=",".join(clients.TARGETS),
                        help="comma-separated, of " + ", ".join(clients.TARGETS))
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument("--verbose", action="store_true", help="every warning of a plugin")
    parser.add_argument("markets", nargs="+", type=Path)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="berth-harness-check-",
                                    dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    try:
        return check(args, scratch)
    finally:
        if args.keep:
            print(f"scratch kept: {scratch}", file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def check(args, scratch: Path) -> int:
    run = Run(Path(args.berth).resolve(), scratch)
    markets = [read_market(m.resolve()) for m in args.markets]
    (scratch / "markets").mkdir()
    for market in markets:
        copy_market(market, scratch / "markets")
    picks = pick(markets, args.count, set(filter(None, args.only.split(","))))
    for market in markets:
        n = sum(p.market == market.local_name for p in picks)
        print(f"{market.name} {market.commit} ({len(market.entries)} relative entries, "
              f"{n} picked)", file=sys.stderr)
    project = berth_project(run, markets, picks)
    lock = (project / "plugins.lock").read_text()
    verdicts = []
    for target in args.targets.split(","):
        for client in clients.TARGETS[target](run, markets, picks, lock, project):
            base = run.fresh(target)
            warnings = materialize(run, project, target, client.into(base))
            ours = client.read(base)
            verdict = judge(Verdict(target, client.name), picks, client.theirs,
                            client.refused, ours, warnings, client.extra_ok,
                            client.refusal_said)
            verdicts.append(verdict)
            details(verdict, args.verbose)
    table(verdicts)
    return 1 if any(v.unwarned for v in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
