"""How bench/harness_check.py installs plugins with each real client and reads back what
the client shows of them, offline, as tests/it/harness_forms.rs, copilot_opencode.rs and
materialize.rs do: the same commands, variables and normalisation.

A target is a function yielding one `Client` per pinned version: the client's own
install of the picked plugins (`theirs`, with those it refused), where berth's folder
goes in a fresh scratch folder, and how the client reads it (`read`). An inventory is
kind -> names, as Claude Code's `plugin details` counts components.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

Inventory = dict[str, list[str]]
Reads = dict[str, "Inventory | None"]

# Gemini CLI's hook events back to Claude Code's, as `gemini hooks migrate` maps them.
GEMINI_EVENTS = {"BeforeTool": "PreToolUse", "AfterTool": "PostToolUse",
                 "BeforeAgent": "UserPromptSubmit", "AfterAgent": "Stop",
                 "PreCompress": "PreCompact"}


@dataclass
class Pick:
    name: str
    market: str  # the marketplace's name, as the clients and berth know it
    root: Path  # the plugin's folder in the marketplace's copy
    entry: dict

    @property
    def key(self) -> str:
        return f"{self.name}@{self.market}"


class Run:
    """The scratch folder, one home for every client, and the commands run in it."""

    def __init__(self, berth: Path, scratch: Path):
        self.berth_bin, self.scratch, self.count = berth, scratch, 0
        self.home = scratch / "home"
        self.work = scratch / "work"
        self.home.mkdir()
        self.work.mkdir()
        self.claude_cache: dict[str, tuple[Reads, dict[str, str]]] = {}

    def fresh(self, label: str) -> Path:
        self.count += 1
        folder = self.scratch / f"{self.count:02}-{label}"
        folder.mkdir()
        return folder

    def call(self, argv: list[str], env: dict[str, str], cwd: Path | None = None,
             timeout: int = 600) -> subprocess.CompletedProcess:
        # Into files, not pipes: a Node.js client exiting at once leaves a long output in
        # a pipe unwritten (Gemini CLI's list stops at 128 KiB).
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            done = subprocess.run([str(a) for a in argv], env=dict(os.environ, **env),
                                  cwd=cwd or self.work, stdout=out, stderr=err,
                                  timeout=timeout)
            out.seek(0)
            err.seek(0)
            return subprocess.CompletedProcess(done.args, done.returncode,
                                               out.read().decode(errors="replace"),
                                               err.read().decode(errors="replace"))

    def ok(self, argv: list[str], env: dict[str, str], cwd: Path | None = None) -> str:
        out = self.call(argv, env, cwd)
        if out.returncode != 0:
            raise SystemExit(f"{argv}: {out.stdout}{out.stderr}")
        return out.stdout

    def berth(self, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
        return self.call([self.berth_bin, *args], {
            "HOME": str(self.home), "BERTH_STORE": str(self.scratch / "store"),
            "BERTH_NO_OBSERVE": "1"}, cwd)


@dataclass
class Client:
    name: str  # the client and its version
    theirs: Reads  # what it shows of its own install, by plugin name
    refused: dict[str, str]  # the plugins its own install refused, and why
    into: Callable[[Path], Path]  # berth's folder for a fresh scratch folder
    read: Callable[[Path], Reads]  # what it shows of berth's folder
    extra_ok: Callable[[Pick, str, str], bool] = lambda p, kind, item: False
    refusal_said: str | None = None  # a refused plugin must be warned with this


def why(out: subprocess.CompletedProcess) -> str:
    text = (out.stdout + out.stderr).strip()
    return " ".join(text.splitlines()[-2:])[:300]


def pinned_servers(lock: str) -> set[str]:
    """The servers whose runner line the lock pinned (they start the stored closure)."""
    return set(re.findall(r'^server = "([^"]+)"', lock, re.M))


def version(bin_: str, env: dict[str, str] | None = None) -> str:
    out = subprocess.run([bin_, "--version"], capture_output=True, text=True,
                         env=dict(os.environ, **(env or {})))
    found = re.search(r"\d+\.\d+\.\d+", out.stdout + out.stderr)
    return found.group(0) if found else "?"


def pinned(*variables: str) -> list[str]:
    return [os.environ[v] for v in variables if os.environ.get(v)]


# Claude Code -------------------------------------------------------------------------

def claude_env(run: Run, folder: Path) -> dict[str, str]:
    return {"CLAUDE_CONFIG_DIR": str(folder), "HOME": str(run.home),
            "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1"}


def claude_inventory(details: str) -> Inventory:
    """`Skills (3)  docx, pdf, xlsx` lines of `claude plugin details`, by kind."""
    out: Inventory = {}
    for line in details.splitlines():
        line = line.strip()
        for kind in ("Skills", "Agents", "Hooks", "MCP servers", "LSP servers"):
            if line.startswith(f"{kind} ("):
                names = line.split(")", 1)[1].split("  (")[0].strip()
                out[kind] = sorted(n for n in names.split(", ") if n)
    return out


def claude_reads(run: Run, bin_: str, folder: Path, picks: list[Pick], market: str | None,
                 skip: dict[str, str]) -> Reads:
    out: Reads = {}
    for p in picks:
        if p.name in skip:
            continue
        shown = run.call([bin_, "plugin", "details", f"{p.name}@{market or p.market}"],
                         claude_env(run, folder))
        out[p.name] = claude_inventory(shown.stdout) if shown.returncode == 0 else None
    return out


def claude_own(run: Run, bin_: str, markets, picks: list[Pick]) -> tuple[Reads, dict]:
    """Claude Code's own install (`plugin marketplace add`, `plugin install`), read back;
    kept per binary, for the targets Claude Code's install is the reference of."""
    if bin_ in run.claude_cache:
        return run.claude_cache[bin_]
    folder = run.fresh("claude-own")
    for m in markets:
        run.ok([bin_, "plugin", "marketplace", "add", m.copy], claude_env(run, folder))
    refused = {}
    for p in picks:
        out = run.call([bin_, "plugin", "install", p.key], claude_env(run, folder))
        if out.returncode != 0:
            refused[p.name] = why(out)
    run.claude_cache[bin_] = (claude_reads(run, bin_, folder, picks, None, refused), refused)
    return run.claude_cache[bin_]


def claude(run: Run, markets, picks: list[Pick], lock: str,
           project: Path) -> Iterator[Client]:
    for bin_ in pinned("BERTH_CLAUDE_NEWEST", "BERTH_CLAUDE", "BERTH_CLAUDE_PREVIOUS"):
        theirs, refused = claude_own(run, bin_, markets, picks)
        yield Client(f"Claude Code {version(bin_)}", theirs, refused, lambda base: base,
                     lambda base, b=bin_: claude_reads(run, b, base, picks, "berth", {}),
                     refusal_said="refuses to install")


def front_matter_name(path: Path) -> str | None:
    text = path.read_text(errors="replace")
    head = re.match(r"---\r?\n(.*?)\r?\n---", text, re.S)
    found = head and re.search(r"^name:\s*(.+?)\s*$", head.group(1), re.M)
    return found.group(1).strip("\"'") if found else None


def own_names(root: Path) -> dict[tuple[str, str], str]:
    """What a plugin's skill folders and agent files call themselves (`name` in their front
    matter), by the folder or file name Claude Code's `plugin details` lists them under."""
    out: dict[tuple[str, str], str] = {}
    paths = sorted((p for p in root.rglob("*.md") if ".git" not in p.parts
                    and "node_modules" not in p.parts), key=lambda p: len(p.parts))
    for path in paths:
        if path.name == "SKILL.md":
            key = ("Skills", path.parent.name)
        elif path.parent.name == "agents":
            key = ("Agents", path.stem)
        else:
            continue
        name = key not in out and front_matter_name(path)
        if name:
            out[key] = name
    return out


def reference(run: Run, markets, picks: list[Pick]) -> tuple[Reads, dict[str, str]]:
    """Claude Code's install (`BERTH_CLAUDE`), each skill and agent under the name its
    front matter gives it, as Gemini CLI and OpenCode name them (Claude Code's `plugin
    details` lists a skill by its folder, an agent by its file): what those two are held
    to."""
    theirs, refused = claude_own(run, os.environ["BERTH_CLAUDE"], markets, picks)
    plain: Reads = {}
    for p in picks:
        inv = theirs.get(p.name)
        if inv is None:
            continue
        names = own_names(p.root)
        plain[p.name] = {kind: sorted({names.get((kind, n.rsplit(":", 1)[-1]),
                                                 n.rsplit(":", 1)[-1]) for n in listed})
                         for kind, listed in inv.items()}
    return plain, refused


def named_by_entry(lock: str) -> Callable[[Pick, str, str], bool]:
    """Claude Code's `plugin details` leaves out the commands a marketplace entry names (it
    loads them in a session): the only extra skills allowed."""
    return lambda p, kind, item: kind == "Skills" and f"{item}.md" in lock


# Codex -------------------------------------------------------------------------------

def codex_env(run: Run, home: Path) -> dict[str, str]:
    return {"HOME": str(run.home), "CODEX_HOME": str(home)}


# Codex lists skills within a budget of about 22,000 characters (0.169.0 then drops
# descriptions and skills, 0.171.0 shortens each description), so they are read a few
# plugins at a time, the others turned off for the call (`-c plugins.ID.enabled=false`),
# and a batch whose list comes near the budget is read again in halves.
SKILLS_BUDGET = 16000
BATCH = 8


def codex_skills(run: Run, bin_: str, home: Path, names: list[str], off: list[str],
                 market: Callable[[str], str]) -> tuple[Reads, bool]:
    """The skills Codex offers the model (`debug prompt-input`) of plugins `names`, the
    plugins `off` turned off: `PLUGIN:SKILL: text` by plugin; and whether the list came
    near the budget."""
    config = [a for n in off if "." not in n
              for a in ("-c", f"plugins.{n}@{market(n)}.enabled=false")]
    prompt = json.loads(run.ok([bin_, "debug", "prompt-input", *config], codex_env(run, home)))
    out: Reads = {n: {} for n in names}
    full = False
    for item in prompt:
        for part in item.get("content") or []:
            text = part.get("text") or ""
            if "<skills_instructions>" not in text:
                continue
            full = full or len(text) > SKILLS_BUDGET
            for line in text.splitlines():
                plugin, _, rest = line.removeprefix("- ").partition(":")
                if line.startswith("- ") and plugin in out and ": " in rest:
                    skill, _, text = rest.split(" (file: ")[0].partition(": ")
                    out[plugin].setdefault("Skills", []).append(f"{skill} = {text}")
    return out, full


def codex_reads(run: Run, bin_: str, home: Path, picks: list[Pick], owners,
                pinned_names: set[str], market: Callable[[str], str]) -> Reads:
    """What Codex shows of each plugin: its skills (`codex_skills`, in batches) and the MCP
    servers it starts (`mcp list`), the program's folder left out (each install keeps a
    plugin elsewhere); a server goes to the plugins that define its name."""
    names = [p.name for p in picks]
    out: Reads = {n: {} for n in names}
    queue = [names[i:i + BATCH] for i in range(0, len(names), BATCH)]
    while queue:
        batch = queue.pop()
        read, full = codex_skills(run, bin_, home, batch,
                                  [n for n in names if n not in batch], market)
        if full and len(batch) > 1:
            queue += [batch[:len(batch) // 2], batch[len(batch) // 2:]]
            continue
        if full:
            print(f"codex: the skills of `{batch[0]}` alone come near Codex's budget",
                  file=sys.stderr)
        for plugin, inv in read.items():
            out[plugin].update(inv)
    for server in json.loads(run.ok([bin_, "mcp", "list", "--json"], codex_env(run, home))):
        transport = dict(server["transport"])
        if isinstance(transport.get("command"), str):
            transport["command"] = transport["command"].rsplit("/", 1)[-1]
        if server["name"] in pinned_names:
            transport = "pinned"
        text = f"{server['name']} = {server['enabled']} {json.dumps(transport, sort_keys=True)}"
        for plugin in owners.get(server["name"], ["(a plugin of none picked)"]):
            out.setdefault(plugin, {}).setdefault("MCP servers", []).append(text)
    for inv in out.values():
        for listed in inv.values():
            listed.sort()
    return out


def server_owners(run: Run, markets, picks: list[Pick], project: Path) -> dict[str, list]:
    """Which picked plugins define each MCP server name: berth's set, and Claude Code's
    install of the same plugins."""
    owners: dict[str, set[str]] = {}
    shown = json.loads(run.berth(["plugins", "show", "--json", "--max-skills", "100000"],
                                 project).stdout)
    for name, server in shown.get("mcp_servers", {}).items():
        owners.setdefault(name, set()).add(server["plugin"])
    if os.environ.get("BERTH_CLAUDE"):
        for plugin, inv in reference(run, markets, picks)[0].items():
            for name in (inv or {}).get("MCP servers", []):
                owners.setdefault(name, set()).add(plugin)
    return {name: sorted(plugins) for name, plugins in owners.items()}


def codex(run: Run, markets, picks: list[Pick], lock: str, project: Path) -> Iterator[Client]:
    owners = server_owners(run, markets, picks, project)
    pinned_names = pinned_servers(lock)
    market_of = {p.name: p.market for p in picks}.__getitem__
    for bin_ in pinned("BERTH_CODEX_NEWEST", "BERTH_CODEX"):
        home = run.fresh("codex-own")
        for m in markets:
            run.ok([bin_, "plugin", "marketplace", "add", m.copy], codex_env(run, home))
        refused = {}
        for p in picks:
            out = run.call([bin_, "plugin", "add", p.key], codex_env(run, home))
            if out.returncode != 0:
                refused[p.name] = why(out)
        theirs = codex_reads(run, bin_, home, picks, owners, pinned_names, market_of)
        yield Client(f"Codex {version(bin_)}", theirs, refused, lambda base: base,
                     lambda base, b=bin_: codex_reads(run, b, base, picks, owners, pinned_names,
                                                     lambda _: "berth"))


# Gemini CLI --------------------------------------------------------------------------

def gemini_reads(run: Run, bin_: str, home: Path) -> Reads:
    """`gemini extensions list --output-format json` with `HOME=home`: each extension's
    skills and commands (its `commands/*.toml`), agents, MCP servers, and hook events
    under Claude Code's names."""
    out = run.call([bin_, "extensions", "list", "--output-format", "json"], {"HOME": str(home)})
    text = out.stdout + out.stderr
    if out.returncode != 0:
        raise SystemExit(f"gemini extensions list: {text}")
    # The list is the one JSON array of the output, whichever stream it went to.
    listed = next(found for found in (array_at(text, i) for i in line_starts(text, "["))
                  if found is not None)
    reads: Reads = {}
    for ext in listed:
        names = lambda key: sorted(  # noqa: E731
            [i["name"] for i in ext.get(key) or [] if isinstance(i, dict) and "name" in i]
            if isinstance(ext.get(key), list) else list(ext.get(key) or {}))
        commands = home / ".gemini/extensions" / ext["name"] / "commands"
        toml = [f.name.removesuffix(".toml") for f in commands.glob("*.toml")]
        reads[ext["name"]] = {
            "Skills": sorted(set(names("skills")) | set(toml)),
            "Agents": names("agents"),
            "MCP servers": names("mcpServers"),
            "Hooks": sorted({GEMINI_EVENTS.get(e, e) for e in names("hooks")}),
        }
    return reads


def line_starts(text: str, char: str) -> Iterator[int]:
    return (i for i in range(len(text)) if text[i] == char and (i == 0 or text[i - 1] == "\n"))


def array_at(text: str, at: int) -> list | None:
    try:
        found, _ = json.JSONDecoder().raw_decode(text[at:])
    except json.JSONDecodeError:
        return None
    return found if isinstance(found, list) else None


def no_lists(reads: Reads) -> Reads:
    """An empty list is no component: the reference lists every kind, a reader some."""
    return {n: None if inv is None else {k: v for k, v in inv.items() if v}
            for n, inv in reads.items()}


def gemini(run: Run, markets, picks: list[Pick], lock: str, project: Path) -> Iterator[Client]:
    for bin_ in pinned("BERTH_GEMINI"):
        theirs, refused = reference(run, markets, picks)
        yield Client(f"Gemini CLI {version(bin_)}", no_lists(theirs), refused,
                     lambda base: base / ".gemini",
                     lambda base, b=bin_: no_lists(gemini_reads(run, b, base)),
                     named_by_entry(lock))


# GitHub Copilot CLI ------------------------------------------------------------------

def copilot_env(run: Run, bin_: str, home: Path) -> dict[str, str]:
    # Copilot unpacks itself into its cache folder on a first run: the one beside its npm
    # install (`.ci/run` fills it).
    install = Path(bin_).parents[2]
    return {"HOME": str(run.home), "COPILOT_HOME": str(home),
            "XDG_CACHE_HOME": str(install / "xdg-cache"), "COPILOT_DISABLE_TELEMETRY": "1"}


def copilot_reads(run: Run, bin_: str, home: Path, market_of, roots: dict[str, Path],
                  pinned_names: set[str]) -> Reads:
    """Each plugin's version and state (`plugin list`), its skills with their descriptions
    (`skill list`, by the plugin folder holding them: the longest of `roots`) and its MCP
    servers as Copilot would start them (`mcp list`, the plugin's folder as `<root>`)."""
    env = copilot_env(run, bin_, home)
    get = lambda *args: json.loads(run.ok([bin_, *args], env))  # noqa: E731
    out: Reads = {}
    for plugin in get("plugin", "list", "--json"):
        if plugin["name"] in roots and plugin["marketplace"] == market_of(plugin["name"]):
            out[plugin["name"]] = {"plugin": [f"version {plugin.get('version')} = enabled "
                                              f"{plugin['enabled']}"]}
    for name, server in get("mcp", "list", "--json")["mcpServers"].items():
        plugin = server.get("sourcePlugin")
        if plugin not in out:
            continue
        root = (server.get("env") or {}).get("COPILOT_PLUGIN_ROOT") or "-"
        text = "pinned" if name in pinned_names else json.dumps(server).replace(root, "<root>")
        out[plugin].setdefault("MCP servers", []).append(f"{name} = {text}")
    by_length = sorted(roots.items(), key=lambda kv: -len(str(kv[1])))
    for skill in get("skill", "list", "--json"):
        if skill["source"] != "plugin":
            continue
        plugin = next((n for n, r in by_length if n in out
                       and (skill["path"] + "/").startswith(f"{r}/")), None)
        if plugin:
            out[plugin].setdefault("Skills", []).append(
                f"{skill['name']} = {json.dumps(skill['description'])}")
    for inv in out.values():
        for names in inv.values():
            names.sort()
    return out


def rounds(picks: list[Pick]) -> list[list[Pick]]:
    """The picks in rounds where no two share a folder (`anthropics/skills`' plugins all
    are its root): Copilot's own install reads each from its marketplace's folder, so a
    skill's path says whose it is only then."""
    out: list[list[Pick]] = []
    for p in picks:
        spot = next((r for r in out if all(q.root != p.root for q in r)), None)
        if spot is None:
            out.append(spot := [])
        spot.append(p)
    return out


def copilot(run: Run, markets, picks: list[Pick], lock: str, project: Path) -> Iterator[Client]:
    market_of = {p.name: p.market for p in picks}.get
    pinned_names = pinned_servers(lock)
    for bin_ in pinned("BERTH_COPILOT"):
        theirs: Reads = {}
        refused = {}
        for group in rounds(picks):
            home = run.fresh("copilot-own")
            env = copilot_env(run, bin_, home)
            for m in markets:
                run.ok([bin_, "plugin", "marketplace", "add", m.copy], env)
            for p in group:
                out = run.call([bin_, "plugin", "install", p.key], env)
                if out.returncode != 0:
                    refused[p.name] = why(out)
            roots = {p.name: p.root for p in group}
            theirs.update(copilot_reads(run, bin_, home, market_of, roots, pinned_names))

        def read(base: Path, b=bin_) -> Reads:
            roots = {p.name: base / "berth-marketplace" / p.name for p in picks}
            return copilot_reads(run, b, base, lambda _: "berth", roots, pinned_names)

        yield Client(f"GitHub Copilot CLI {version(bin_, copilot_env(run, bin_, run.home))}",
                     theirs, refused, lambda base: base, read)


# OpenCode ----------------------------------------------------------------------------

def opencode_env(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local/share"), "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_STATE_HOME": str(home / ".local/state"), "OPENCODE_DISABLE_AUTOUPDATE": "1"}


def opencode_reads(run: Run, bin_: str, home: Path, reference_reads: Reads) -> Reads:
    """Each plugin's skills (by the folder they are in), commands among them and agents
    (named `PLUGIN/NAME`); an MCP server (`opencode.json` names them all together) goes
    to the plugins whose install by Claude Code has its name."""
    env = opencode_env(home)
    config = json.loads(run.ok([bin_, "debug", "config"], env))
    skills = json.loads(run.ok([bin_, "debug", "skill"], env))
    folder = home / ".config/opencode/skills"
    out: Reads = {name: {} for name in reference_reads}
    for skill in skills:
        rel = Path(skill["location"]).relative_to(folder) if Path(
            skill["location"]).is_relative_to(folder) else None
        if rel is not None:
            out.setdefault(rel.parts[0], {}).setdefault("Skills", []).append(skill["name"])
    for key, kind in (("command", "Skills"), ("agent", "Agents")):
        for name in config.get(key) or {}:
            plugin, slash, item = name.partition("/")
            if slash:
                out.setdefault(plugin, {}).setdefault(kind, []).append(item)
    servers = set(config.get("mcp") or {})
    for plugin, inv in reference_reads.items():
        found = [s for s in (inv or {}).get("MCP servers", []) if s in servers]
        if found:
            out.setdefault(plugin, {})["MCP servers"] = found
    claimed = {s for inv in reference_reads.values() for s in (inv or {}).get("MCP servers", [])}
    if servers - claimed:
        out["(a plugin of none picked)"] = {"MCP servers": sorted(servers - claimed)}
    for inv in out.values():
        for names in inv.values():
            names.sort()
    return out


def opencode(run: Run, markets, picks: list[Pick], lock: str,
             project: Path) -> Iterator[Client]:
    for bin_ in pinned("BERTH_OPENCODE"):
        theirs, refused = reference(run, markets, picks)
        yield Client(f"OpenCode {version(bin_, opencode_env(run.home))}", no_lists(theirs),
                     refused, lambda base: base / ".config/opencode",
                     lambda base, b=bin_: opencode_reads(run, b, base, theirs),
                     named_by_entry(lock))


# The OpenHands SDK (Agent Plugins) ---------------------------------------------------

SDK_READS = r"""
import json, sys
from pathlib import Path
from openhands.sdk.marketplace import MarketplaceRegistry
from openhands.sdk.marketplace.registration import MarketplaceRegistration
from openhands.sdk.plugin import Plugin

def inventory(p):
    mcp = p.mcp_config or {}
    servers = mcp.get("mcpServers", mcp)
    hooks = p.hooks.model_dump(mode="json", by_alias=True) if p.hooks else {}
    hooks = hooks.get("hooks", hooks)
    return {
        "Skills": sorted(s.name for s in p.skills),
        "Commands": sorted(c.name for c in p.commands),
        "MCP servers": sorted(servers),
        "Agents": sorted(a.name for a in p.agents),
        "Hooks": sorted(e for e, m in hooks.items() if m),
    }

mode, markets, *rest = sys.argv[1:]
out = {}
registry = MarketplaceRegistry([MarketplaceRegistration(name=n, source=s)
                                for n, s in json.loads(markets).items()])
for arg in rest:
    try:
        if mode == "own":
            source = registry.resolve_plugin(arg)
            plugin = Plugin.load(Path(source.source) / (source.repo_path or ""))
            out[arg.split("@")[0]] = inventory(plugin)
        else:
            out[Path(arg).name] = inventory(Plugin.load(arg))
    except Exception as e:  # noqa: BLE001 - a plugin the SDK refuses, and why
        out[(arg.split("@")[0] if mode == "own" else Path(arg).name)] = {"error": repr(e)[:300]}
print(json.dumps(out, sort_keys=True))
"""


def sdk_reads(run: Run, python: str, mode: str, markets, args: list[str]) -> dict:
    names = json.dumps({m.local_name: str(m.copy) for m in markets})
    out = run.ok([python, "-c", SDK_READS, mode, names, *args],
                 {"HOME": str(run.home), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                  "OPENHANDS_SUPPRESS_BANNER": "1"})
    return json.loads(out.strip().splitlines()[-1])


def agent_plugins(run: Run, markets, picks: list[Pick], lock: str,
                  project: Path) -> Iterator[Client]:
    for python in pinned("BERTH_SDK_PYTHON"):
        own = sdk_reads(run, python, "own", markets, [p.key for p in picks])
        refused = {n: inv["error"] for n, inv in own.items() if "error" in inv}

        def read(base: Path, py=python) -> Reads:
            got = sdk_reads(run, py, "berth", markets,
                            [str(base / p.name) for p in picks if (base / p.name).is_dir()])
            return {n: None if "error" in inv else inv for n, inv in got.items()}

        sdk = subprocess.run([python, "-c", "import importlib.metadata as m; "
                              "print(m.version('openhands-sdk'))"], capture_output=True,
                             text=True).stdout.strip()
        yield Client(f"OpenHands SDK {sdk}", {n: inv for n, inv in own.items()
                                              if n not in refused}, refused,
                     lambda base: base, read)


TARGETS = {"claude": claude, "codex": codex, "gemini": gemini, "copilot": copilot,
           "opencode": opencode, "agent-plugins": agent_plugins}
