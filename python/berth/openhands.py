"""berth for the OpenHands SDK (``openhands-sdk``, imported only when used).

``load_plugins(lockfile, agent)`` is the SDK's ``load_plugins`` built from a berth lock and
the store alone: berth's runtime reads the locked plugins (it never fetches) and this
module turns its plugin set into the SDK's own objects (``Skill``, ``MCPServer``,
``HookConfig``, ``AgentDefinition``) and merges them into the agent with the SDK's rules.
The runtime runs inside this process when the wheel's extension ``berth._native`` loads,
and as the bundled ``berth`` binary otherwise (or when ``BERTH_NATIVE=0``); both give the
same plugin set. ``plugin_sources(lockfile)`` gives the SDK its own ``PluginSource`` objects,
pinned to the locked commits, for callers that must hand the SDK its own type.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import importlib.util
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, Protocol, cast

from berth import BerthError, run

if TYPE_CHECKING:
    from types import ModuleType

    from openhands.sdk.agent.base import AgentBase
    from openhands.sdk.conversation.impl.local_conversation import LocalConversation
    from openhands.sdk.hooks import HookConfig
    from openhands.sdk.marketplace import MarketplaceRegistration
    from openhands.sdk.mcp.config import MCPServer
    from openhands.sdk.plugin import PluginSource
    from openhands.sdk.skills import Skill
    from openhands.sdk.subagent.schema import AgentDefinition

    from berth.types import (
        AgentHookMatcher,
        AgentMcpServer,
        ListedPlugin,
        LockedMarketplace,
        PluginList,
        PluginSet,
        SetAgent,
        SetPlugin,
        SetSkill,
    )

__all__ = [
    "SdkPluginSet",
    "agent_definitions",
    "check_registrations",
    "load_plugin",
    "load_plugins",
    "locked_marketplaces",
    "locked_plugins",
    "native",
    "plugin_set",
    "plugin_sources",
    "start_request",
    "to_sdk",
]

# berth's own skill limit is applied after merging with the agent's skills, as the SDK
# does; the binary is asked not to refuse first.
_NO_LIMIT = 1 << 32

PathLike = str | os.PathLike[str]


def _listing(lockfile: PathLike, store: PathLike | None = None) -> PluginList:
    """``berth plugins list --json`` of the lock."""
    lock = Path(lockfile).resolve()
    out = run(["plugins", "--lockfile", str(lock), "list", "--json"], cwd=lock.parent, store=store)
    listing: PluginList = json.loads(out.stdout)
    return listing


def locked_plugins(lockfile: PathLike, store: PathLike | None = None) -> list[ListedPlugin]:
    """The lock's plugins as ``berth plugins list --json`` prints them."""
    return _listing(lockfile, store)["plugins"]


def locked_marketplaces(
    lockfile: PathLike, store: PathLike | None = None
) -> list[LockedMarketplace]:
    """The lock's ``[[marketplace]]`` tables, as ``berth plugins list --json`` prints them."""
    return _listing(lockfile, store).get("marketplaces", [])


def _auto_load(value: object) -> bool | list[str]:
    """``auto_load`` as the SDK's registration means it (``[]`` is ``False``)."""
    if isinstance(value, list):
        return list(value) if value else False
    return bool(value)


#: In a marketplace folder berth made, the registration it stands for.
_ORIGIN = ".berth-registration.json"


def _registered_as(reg: MarketplaceRegistration) -> dict[str, Any]:
    """A registration's fields, or those of the registration a berth-made marketplace
    folder stands for."""
    origin = Path(reg.source) / _ORIGIN if reg.source.startswith("/") else None
    if origin is not None and origin.is_file():
        fields: dict[str, Any] = json.loads(origin.read_text())
        return fields
    return {
        "source": reg.source,
        "ref": reg.ref,
        "repo_path": reg.repo_path,
        "auto_load": _auto_load(reg.auto_load),
    }


def _marketplace_home() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME")
    return (Path(cache) if cache else Path.home() / ".cache") / "berth" / "openhands-marketplaces"


def marketplace_folder(lockfile: PathLike, name: str, store: PathLike | None = None) -> Path:
    """A local marketplace standing for the locked marketplace ``name``: a catalog listing
    the lock's plugins picked from it (``PLUGIN@name``), each a link to its verified store
    entry, and the registration it stands for (``.berth-registration.json``). A
    registration whose ``source`` is this folder lets the SDK's own registry and
    ``load_plugin`` read the locked plugins with no fetch. One folder per lock and name
    (``$XDG_CACHE_HOME/berth/openhands-marketplaces/``), rewritten when the lock changes."""
    lock = Path(lockfile).resolve()
    listing = _listing(lock, store)
    locked = {m["name"]: m for m in listing.get("marketplaces", [])}
    if name not in locked:
        raise BerthError(1, f"error: the lock holds no marketplace `{name}`")
    market = locked[name]
    doc = plugin_set(lock, store)
    picked = [
        p
        for p in listing["plugins"]
        if p.get("requested", "").endswith(f"@{name}") and not p.get("standalone_skill")
    ]
    paths = {p["name"]: p["path"] for p in doc.get("plugins", [])}
    key = hashlib.sha256(f"{lock}\0{name}".encode()).hexdigest()[:16]
    folder = _marketplace_home() / key / name
    (folder / ".plugin").mkdir(parents=True, exist_ok=True)
    entries = []
    for plugin in picked:
        link = folder / plugin["name"]
        target = paths[plugin["name"]]
        if not (link.is_symlink() and str(link.readlink()) == target):
            temporary = folder / f".{plugin['name']}.berth-tmp"
            temporary.unlink(missing_ok=True)
            temporary.symlink_to(target)
            temporary.replace(link)
        entries.append({"name": plugin["name"], "source": f"./{plugin['name']}"})
    origin = {
        "source": market["source"],
        "ref": market.get("ref"),
        "repo_path": market.get("repo_path"),
        "auto_load": _auto_load(market.get("auto_load", False)),
    }
    catalog = {"name": name, "owner": {"name": "berth"}, "plugins": entries}
    for rel, value in ((_ORIGIN, origin), (".plugin/marketplace.json", catalog)):
        with tempfile.NamedTemporaryFile(
            "w", dir=folder / Path(rel).parent, delete=False, suffix=".berth-tmp"
        ) as out:
            json.dump(value, out, indent=2)
        Path(out.name).replace(folder / rel)
    return folder


def check_registrations(
    lockfile: PathLike,
    registrations: Sequence[MarketplaceRegistration],
    store: PathLike | None = None,
) -> None:
    """Checks an ``AgentContext``'s ``registered_marketplaces`` against the lock: each must
    be a ``[[marketplace]]`` the lock holds with the same ``source``, ``ref``, ``repo_path``
    and ``auto_load``, and every marketplace the lock auto-loads must be registered.
    Raises :class:`BerthError` naming each one that is not (nothing is ever fetched: add it
    to ``plugins.toml`` with ``berth marketplace add`` and lock)."""
    locked = {m["name"]: m for m in locked_marketplaces(lockfile, store)}
    problems: list[str] = []
    for reg in registrations:
        found = locked.get(reg.name)
        if found is None:
            problems.append(
                f"marketplace `{reg.name}` ({reg.source}) is registered but the lock does not "
                f"hold it: run `berth marketplace add {reg.name} {reg.source}` and lock"
            )
            continue
        asked = _registered_as(reg)
        pinned = {
            "source": found["source"],
            "ref": found.get("ref"),
            "repo_path": found.get("repo_path"),
            "auto_load": _auto_load(found.get("auto_load", False)),
        }
        differing = [
            f"{key}: {pinned[key]!r} locked, {asked[key]!r} registered"
            for key in asked
            if asked[key] != pinned[key]
        ]
        if differing:
            problems.append(
                f"marketplace `{reg.name}` is registered otherwise than it is locked "
                f"({'; '.join(differing)}): change plugins.toml to match and lock"
            )
    registered = {reg.name for reg in registrations}
    for name, found in locked.items():
        if found.get("auto_load") and name not in registered:
            problems.append(
                f"the lock auto-loads marketplace `{name}`, which the agent does not register"
            )
    if problems:
        raise BerthError(1, "error: " + "\n".join(problems))


class NativeModule(Protocol):
    """What ``berth.openhands`` uses of ``berth._native`` (its stub: ``_native.pyi``)."""

    def plugin_set(self, lockfile: str, store: str | None = None) -> PluginSet | None: ...


@functools.cache
def native() -> NativeModule | None:
    """The extension module ``berth._native`` (the runtime inside this process), or
    ``None`` when this interpreter cannot load it (not CPython 3.10+, a wheel without it,
    a checkout that has not built it) or ``BERTH_NATIVE=0`` asks for the binary.
    ``BERTH_NATIVE=PATH`` loads the extension from a build at PATH."""
    setting = os.environ.get("BERTH_NATIVE", "")
    if setting == "0":
        return None
    if setting:
        spec = importlib.util.spec_from_file_location("berth._native", setting)
        if spec is None or spec.loader is None:
            raise ImportError(f"BERTH_NATIVE={setting} is not a loadable extension")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return _as_native(module)
    try:
        from berth import _native
    except ImportError:
        return None
    return _native


def _as_native(module: ModuleType) -> NativeModule:
    """An extension loaded from a path, which only its use can check."""
    return cast("NativeModule", module)


def plugin_set(lockfile: PathLike, store: PathLike | None = None) -> PluginSet:
    """The lock's merged plugin set, as ``berth plugins show --json`` prints it (docs/spec.md §5):
    built from the lock and the store only; a plugin missing from the store is a
    ``BerthError`` telling you to run ``berth plugins sync``.

    Built in this process by ``berth._native`` when it loads; by the binary otherwise,
    and always when a policy file (``berth-policy.toml``) sits next to the lock, which the
    binary enforces, or when a plugin was never scanned clean, which the binary scans."""
    lock = Path(lockfile).resolve()
    extension = native()
    if extension is not None:
        try:
            built = extension.plugin_set(str(lock), None if store is None else os.fspath(store))
        except RuntimeError as e:
            raise BerthError(1, f"error: {e}") from None
        if built is not None:
            return built
    out = run(
        [
            "plugins",
            "--lockfile",
            str(lock),
            "show",
            "--json",
            "--max-skills",
            str(_NO_LIMIT),
            # The set alone: what the review reads of each plugin is not part of it.
            "--no-review",
        ],
        cwd=lock.parent,
        store=store,
    )
    shown: PluginSet = json.loads(out.stdout)
    return shown


@dataclass(frozen=True)
class SdkPluginSet:
    """A berth plugin set as the SDK's own objects, in merge order."""

    skills: list[Skill] = field(default_factory=list)
    mcp_config: dict[str, MCPServer] = field(default_factory=dict)
    hook_config: HookConfig | None = None
    agents: list[AgentDefinition] = field(default_factory=list)
    #: The locked plugins (name, version, source, rev, hash, store path, root).
    plugins: list[SetPlugin] = field(default_factory=list)
    #: What berth noticed while building the set (overrides, skipped files, …).
    warnings: list[str] = field(default_factory=list)
    #: The names of the skills a marketplace's ``auto_load`` brings as standalone skills:
    #: the agent's own skills win over them, as the SDK merges them.
    standalone_skills: frozenset[str] = frozenset()


def to_sdk(doc: PluginSet) -> SdkPluginSet:
    """Turns a plugin-set document (``berth plugins show --json``, or a server's
    ``plugin_set``) into SDK objects. Paths point into the store that built the set."""
    from openhands.sdk.hooks import HookConfig

    roots = {p["name"]: Path(p.get("root") or p["path"]) for p in doc.get("plugins", [])}
    standalone = {p["name"] for p in doc.get("plugins", []) if p.get("standalone_skill")}
    hooks = _hook_config(doc.get("hooks") or {})
    return SdkPluginSet(
        skills=[_skill(s, roots[s["plugin"]]) for s in doc.get("skills", [])],
        mcp_config={
            name: _mcp_server(server) for name, server in (doc.get("mcp_servers") or {}).items()
        },
        hook_config=hooks if isinstance(hooks, HookConfig) else None,
        agents=[_agent(a, roots[a["plugin"]]) for a in doc.get("agents", [])],
        plugins=list(doc.get("plugins", [])),
        warnings=list(doc.get("warnings", [])),
        standalone_skills=frozenset(
            s["name"] for s in doc.get("skills", []) if s["plugin"] in standalone
        ),
    )


def load_plugins(
    lockfile: PathLike,
    agent: AgentBase,
    max_skills: int = 100,
    store: PathLike | None = None,
    get_secret: Callable[[str], str | None] | None = None,
) -> tuple[AgentBase, HookConfig | None]:
    """The SDK's ``load_plugins(plugin_specs, agent, max_skills)`` for a berth lock.

    Returns ``(updated_agent, hook_config)`` exactly as the SDK does: skills merged into
    ``agent.agent_context`` by name (later wins, first position kept), MCP servers into
    ``agent.mcp_config`` by name, hooks concatenated per event (``None`` when there are
    none). ``${VAR}`` in MCP servers is filled by the SDK's own step from ``get_secret``
    (the conversation's secrets). Raises ``ValueError`` over ``max_skills`` skills, and
    ``BerthError`` when a locked plugin is not in the store (``store``, else berth's
    default); nothing is ever fetched.

    The agent's ``registered_marketplaces`` are checked against the lock
    (:func:`check_registrations`); what they auto-load comes from the lock, and the agent
    returned keeps them registered with ``auto_load`` off, so the conversation does not
    fetch them again.
    """
    context = agent.agent_context
    if context is not None and context.registered_marketplaces:
        check_registrations(lockfile, context.registered_marketplaces, store)
    with _collector_paused():
        built = to_sdk(plugin_set(lockfile, store))
    if context is None or not context.registered_marketplaces:
        return merge_into(agent, built, max_skills, get_secret)
    merged, hooks = merge_into(agent, built, max_skills, get_secret)
    # Each registration now reads berth's folder of its locked plugins: the SDK's own
    # `load_plugin` then finds them there, with no fetch.
    local = [
        r.model_copy(
            update={
                "source": str(marketplace_folder(lockfile, r.name, store)),
                "ref": None,
                "repo_path": None,
                "auto_load": False,
            }
        )
        for r in context.registered_marketplaces
    ]
    merged_context = merged.agent_context
    assert merged_context is not None
    merged = merged.model_copy(
        update={
            "agent_context": merged_context.model_copy(update={"registered_marketplaces": local})
        }
    )
    return merged, hooks


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector held off while a set is built: the tens of
    thousands of objects a set makes are none of them garbage, but each 700 of them
    would start a collection, some of them of the whole heap (the SDK's modules and
    everything the program holds). It runs again, as it was, when the set is built."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_plugin(
    conversation: LocalConversation,
    plugin_ref: str,
    lockfile: PathLike,
    store: PathLike | None = None,
) -> None:
    """The SDK's ``conversation.load_plugin(plugin_ref)`` (``NAME@MARKETPLACE``) for a
    conversation whose agent came from :func:`load_plugins`: a plugin the lock holds is
    loaded from the store with no fetch; one it does not hold is locked first with
    ``berth plugins add`` (its manifest and lock next to ``lockfile``, the project's
    policy enforced) and synced, so the lock records it and a resume restores it. The
    SDK's own ``load_plugin`` then reads it from berth's marketplace folder
    (:func:`marketplace_folder`) and merges it as it merges any plugin."""
    name, _, market = plugin_ref.partition("@")
    lock = Path(lockfile).resolve()
    if not name or not market:
        raise ValueError(f"`{plugin_ref}` is not a `NAME@MARKETPLACE` reference")
    locked = {p.get("requested") for p in locked_plugins(lock, store)}
    if plugin_ref not in locked:
        project = ["plugins", "--lockfile", str(lock), "--manifest", str(lock.with_suffix(".toml"))]
        run([*project, "add", plugin_ref], cwd=lock.parent, store=store)
        run([*project, "sync"], cwd=lock.parent, store=store)
    marketplace_folder(lock, market, store)
    conversation.load_plugin(plugin_ref)


def merge_into(
    agent: AgentBase,
    plugins: SdkPluginSet,
    max_skills: int = 100,
    get_secret: Callable[[str], str | None] | None = None,
) -> tuple[AgentBase, HookConfig | None]:
    """Merges an :class:`SdkPluginSet` into ``agent`` with the SDK's ``load_plugins`` rules."""
    from openhands.sdk.context import AgentContext
    from openhands.sdk.skills.utils import expand_mcp_servers

    context = agent.agent_context
    if context is not None and any(r.auto_load for r in context.registered_marketplaces):
        # What they auto-load is in the set: the conversation must not load it again.
        context = context.model_copy(
            update={
                "registered_marketplaces": [
                    r.model_copy(update={"auto_load": False})
                    for r in context.registered_marketplaces
                ]
            }
        )
        agent = agent.model_copy(update={"agent_context": context})
    if not plugins.plugins:
        return agent, None
    by_name = {s.name: s for s in (context.skills if context else [])}
    for skill in plugins.skills:
        if skill.name in plugins.standalone_skills:
            # A marketplace's standalone skill: the agent's own of the same name wins.
            by_name.setdefault(skill.name, skill)
        else:
            by_name[skill.name] = skill
    if len(by_name) > max_skills:
        raise ValueError(f"Total skills ({len(by_name)}) exceeds maximum ({max_skills})")
    skills = list(by_name.values())
    merged_context = (
        context.model_copy(update={"skills": skills}) if context else AgentContext(skills=skills)
    )
    mcp_config = {**(agent.mcp_config or {}), **plugins.mcp_config}
    if mcp_config and get_secret:
        mcp_config = expand_mcp_servers(mcp_config, get_secret)
    updated = agent.model_copy(update={"agent_context": merged_context, "mcp_config": mcp_config})
    return updated, plugins.hook_config


def start_request(
    lockfile: PathLike,
    agent: AgentBase,
    workspace: PathLike,
    max_skills: int = 100,
    store: PathLike | None = None,
) -> dict[str, Any]:
    """The body of the OpenHands agent server's ``POST /api/conversations`` that starts a
    conversation with the lock's plugin set: ``agent`` with the set merged in
    (:func:`load_plugins`: skills, MCP servers, its registrations' ``auto_load`` off), the
    set's ``hook_config`` and sub-agents (``agent_definitions``), and no ``plugins``. The
    server persists all of it with the conversation (``base_state.json``, ``meta.json``)
    and restores it from there after a restart, so nothing is fetched, ever: the set
    comes from berth's store, whose paths the server must see. Secrets the agent carries
    (its LLM's key) are in the body, as the server needs them."""
    expose = {"expose_secrets": True}
    merged, hooks = load_plugins(lockfile, agent, max_skills=max_skills, store=store)
    body: dict[str, Any] = {
        "agent": merged.model_dump(mode="json", context=expose),
        "workspace": {"working_dir": os.fspath(workspace)},
        "agent_definitions": [
            a.model_dump(mode="json", context=expose) for a in agent_definitions(lockfile, store)
        ],
    }
    if hooks is not None:
        body["hook_config"] = hooks.model_dump(mode="json", context=expose)
    return body


def agent_definitions(lockfile: PathLike, store: PathLike | None = None) -> list[AgentDefinition]:
    """The locked plugins' sub-agents as the SDK's ``AgentDefinition``s, for
    ``openhands.sdk.subagent.registry.register_plugin_agents``."""
    return to_sdk(plugin_set(lockfile, store)).agents


def plugin_sources(lockfile: PathLike, store: PathLike | None = None) -> list[PluginSource]:
    """The lock's plugins as the SDK's ``PluginSource`` objects, in lock order.

    A git plugin's ``ref`` is its locked commit, so the SDK fetches exactly what the lock
    pins; a local folder is given as an absolute path. The SDK cannot fetch archives: a
    lock holding one raises ``ValueError`` naming the plugin (use ``load_plugins``).
    """
    from openhands.sdk.plugin import PluginSource

    lock = Path(lockfile).resolve()
    sources: list[PluginSource] = []
    for plugin in locked_plugins(lock, store):
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


def _posix(root: Path, rel: str) -> str:
    """``rel`` (plugin-relative, `/`-separated) under ``root``, as the SDK writes paths."""
    if rel in ("", "."):
        return root.as_posix()
    base = root.as_posix()
    if base != "/" and rel[0] != "/" and all(part not in ("", ".") for part in rel.split("/")):
        # Nothing for a path to normalise: joined as `root / PurePath(rel)` would join it.
        return f"{base}/{rel}"
    return (root / PurePath(rel)).as_posix()


def _skill(raw: SetSkill, root: Path) -> Skill:
    from openhands.sdk.mcp.config import coerce_mcp_config
    from openhands.sdk.skills import (
        InputMetadata,
        KeywordTrigger,
        PathTrigger,
        Skill,
        SkillResources,
        TaskTrigger,
    )

    kind = raw["trigger"]
    trigger: KeywordTrigger | TaskTrigger | PathTrigger | None = None
    if kind == "keyword":
        trigger = KeywordTrigger(keywords=list(raw["triggers"]))
    elif kind == "task":
        trigger = TaskTrigger(triggers=list(raw["triggers"]))
    elif kind == "path":
        trigger = PathTrigger(paths=list(raw["paths"] or []))
    resources = raw.get("resources")
    mcp_tools = raw.get("mcp_tools")
    fields: dict[str, Any] = {
        "name": raw["name"],
        "content": raw["content"],
        "trigger": trigger,
        "source": _posix(root, raw["source"]),
        "mcp_tools": coerce_mcp_config(mcp_tools) if mcp_tools is not None else None,
        "inputs": [InputMetadata(**i) for i in raw.get("inputs") or []],
        "is_agentskills_format": raw.get("type") == "agentskills",
        "disable_model_invocation": bool(raw.get("disable_model_invocation")),
        "resources": (
            SkillResources(
                skill_root=_posix(root, resources["skill_root"]),
                scripts=resources["scripts"],
                references=resources["references"],
                assets=resources["assets"],
            )
            if resources
            else None
        ),
    }
    passed: Mapping[str, Any] = raw
    for key in ("description", "license", "compatibility", "metadata", "allowed_tools"):
        if passed.get(key) is not None:
            fields[key] = passed[key]
    return Skill(**fields)


def _mcp_server(raw: AgentMcpServer) -> MCPServer:
    from openhands.sdk.mcp.config import MCPServer

    passed: Mapping[str, Any] = raw
    fields: dict[str, Any] = {"transport": raw["type"]}
    for key in (
        "url",
        "command",
        "args",
        "env",
        "cwd",
        "headers",
        "description",
        "icon",
        "timeout",
        "sse_read_timeout",
        "keep_alive",
        "auth",
        "enabled",
    ):
        value = passed.get(key)
        if value is not None and value != [] and value != {}:
            fields[key] = value
    server = MCPServer.model_validate(fields)
    # An Agent Plugins server is never `${VAR}`-expanded (the SDK marks it the same way).
    return server.as_literal() if raw.get("literal") else server


def _hook_config(raw: Mapping[str, Sequence[AgentHookMatcher]]) -> HookConfig | None:
    from openhands.sdk.hooks import HookConfig

    if not any(raw.values()):
        return None
    models = _hook_models()
    if models is None:
        events = {
            event: [
                {"matcher": m["matcher"], "hooks": [dict(h) for h in m["hooks"]]} for m in matchers
            ]
            for event, matchers in raw.items()
        }
        return HookConfig.model_validate(events)
    # Every definition of every matcher validated in one call (the SDK's checks run on
    # each), then the matchers made around them as validation makes them.
    definitions, matcher = models
    hooks = iter(
        definitions.validate_python([h for ms in raw.values() for m in ms for h in m["hooks"]])
    )
    built = {
        event: [matcher(m["matcher"], [next(hooks) for _ in m["hooks"]]) for m in matchers]
        for event, matchers in raw.items()
    }
    return HookConfig.model_validate(built)


@functools.cache
def _hook_models() -> tuple[Any, Callable[[str, list[Any]], Any]] | None:
    """What builds the SDK's hook objects quickly: a validator of ``list[HookDefinition]``
    and a maker of a ``HookMatcher`` from a matcher string and its validated definitions.

    ``HookMatcher`` keeps a private set (``_REGEX_METACHARACTERS``) that pydantic
    deep-copies into every instance it validates, which is most of the cost of a hook set
    (about 20 us a matcher). The maker sets the same fields, fields-set and private
    values (a fresh copy of each default set of strings, which is what the deep copy
    makes) itself. Checked once per process against a matcher validated by the SDK's own
    model: when they differ in anything (another SDK), this is ``None`` and every matcher
    is validated as before."""
    from openhands.sdk.hooks.config import HookDefinition, HookMatcher
    from pydantic import TypeAdapter
    from pydantic._internal._model_construction import init_private_attributes

    checks = HookMatcher.__pydantic_decorators__
    if (
        HookMatcher.model_post_init is not init_private_attributes
        or checks.model_validators
        or checks.field_validators
        or checks.validators
        or checks.root_validators
    ):
        # The SDK's matcher does more than validation and the private defaults.
        return None
    defaults: dict[str, Any] = {}
    for name, private in HookMatcher.__private_attributes__.items():
        default = private.default
        if private.default_factory is not None or not (
            isinstance(default, (set, frozenset)) and all(isinstance(v, str) for v in default)
        ):
            return None
        defaults[name] = default
    fields = frozenset({"matcher", "hooks"})
    if set(HookMatcher.model_fields) != fields:
        return None
    setattr_ = object.__setattr__
    new = HookMatcher.__new__

    def matcher(pattern: str, hooks: list[Any]) -> Any:
        made = new(HookMatcher)
        setattr_(made, "__dict__", {"matcher": pattern, "hooks": hooks})
        setattr_(made, "__pydantic_fields_set__", set(fields))
        setattr_(made, "__pydantic_extra__", None)
        setattr_(made, "__pydantic_private__", {k: type(v)(v) for k, v in defaults.items()})
        return made

    definitions = TypeAdapter(list[HookDefinition])
    pattern, hooks = "/b.*/", [{"command": "x", "async": True, "timeout": 5}]
    validated = HookMatcher.model_validate({"matcher": pattern, "hooks": hooks})
    made = matcher(pattern, definitions.validate_python(hooks))
    same = (
        type(made) is type(validated)
        and made.__dict__ == validated.__dict__
        and list(made.__dict__) == list(validated.__dict__)
        and made.model_fields_set == validated.model_fields_set
        and made.__pydantic_extra__ == validated.__pydantic_extra__
        and made.__pydantic_private__ == validated.__pydantic_private__
        and made.model_dump() == validated.model_dump()
    )
    return (definitions, matcher) if same else None


# The fields of a plugin set's sub-agent that this module maps itself (the rest are the
# SDK's ``AgentDefinition`` fields, named as the runtime writes them, which is the one
# place that list lives), and ``plugin``, which is berth's own.
_AGENT_MAPPED = frozenset({"content", "source", "hooks", "mcp_servers", "plugin"})


def _agent(raw: SetAgent, root: Path) -> AgentDefinition:
    from openhands.sdk.subagent.schema import AgentDefinition

    passed: Mapping[str, Any] = raw
    fields: dict[str, Any] = {
        key: value
        for key, value in passed.items()
        if key not in _AGENT_MAPPED and value is not None
    }
    fields["system_prompt"] = raw.get("content", "")
    fields["source"] = _posix(root, raw["source"])
    hooks = raw.get("hooks")
    if hooks:
        fields["hooks"] = _hook_config(hooks)
    servers = raw.get("mcp_servers")
    if servers is not None:
        fields["mcp_config"] = {name: _mcp_server(server) for name, server in servers.items()}
    return AgentDefinition(**fields)
