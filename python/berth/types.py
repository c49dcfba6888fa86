"""The JSON documents berth hands to Python, as ``TypedDict``s.

- :class:`PluginSet`: the merged plugin set (docs/spec.md section 5), as
  ``berth._native.plugin_set`` returns it and ``berth serve`` answers
  ``GET /api/conversations/{id}/plugin_set``; ``berth plugins show --json`` prints it with
  ``review``, what the review reads of each plugin (:class:`ShownPluginSet`);
- :class:`PluginList`: the lock's plugins, as ``berth plugins list --json`` prints them;
- the bodies of ``berth serve`` (docs/spec.md section 7): :class:`CreateConversation` (a
  request), :class:`ConversationCreated`, :class:`ConversationList`,
  :class:`ConversationDetail`, :class:`Health` and :class:`ErrorBody` (answers), named as
  the server's own types are (``server/src/api.rs``).

Keys that are always present are required, ``None`` where berth writes ``null``; keys
that only some documents carry are optional (``total=False``). ``python/tests/test_types.py`` checks
these against what the binary and the server really write.
"""

from typing import Literal, TypeAlias, TypedDict

__all__ = [
    "AgentHookMatcher",
    "AgentMcpServer",
    "AgentSourceBody",
    "ConversationCreated",
    "ConversationDetail",
    "ConversationList",
    "ConversationSummary",
    "CreateConversation",
    "ErrorBody",
    "ErrorDetail",
    "Health",
    "Hook",
    "JsonValue",
    "ListedAgent",
    "ListedPayload",
    "ListedPlugin",
    "ListedWheel",
    "LockedAgentBody",
    "LockedMarketplace",
    "LockedPluginBody",
    "PluginList",
    "PluginSet",
    "PluginSourceBody",
    "Reviewed",
    "ReviewedHook",
    "SetAgent",
    "SetHookMatcher",
    "SetMcpServer",
    "SetPlugin",
    "SetSkill",
    "ShownPluginSet",
    "SkillInput",
    "SkillResources",
    "Unmodeled",
]

#: Any JSON value, as ``json.loads`` makes it: for fields berth passes through as written
#: (front matter, an agent's ``condenser``, an LSP server).
JsonValue: TypeAlias = dict[str, "JsonValue"] | list["JsonValue"] | str | int | float | bool | None

# The plugin set (docs/spec.md section 5)


class _SetPluginKeys(TypedDict):
    name: str
    #: The plugin manifest's ``version`` (``1.0.0`` when it gives none).
    version: str
    description: str
    #: The source as locked, credentials removed.
    source: str
    #: The locked commit (git sources), else ``None``.
    rev: str | None
    #: NAR sha256, SRI form (``sha256-...``).
    hash: str
    #: Its store entry.
    path: str
    #: Where hooks, MCP servers and commands see it: a link named after the plugin, in the
    #: set's view, that leads to ``path`` (``path`` itself when no view could be made).
    root: str
    #: Its layout.
    format: Literal["claude-code", "agent-plugins"]
    #: ``/plugin:command``, the command the plugin is entered with, if it names one.
    entry_command: str | None


class SetPlugin(_SetPluginKeys, total=False):
    """A plugin of the set, in lock order."""

    #: The marketplace whose ``auto_load`` brings it (absent when the manifest asks for it).
    auto_load: str
    #: ``True`` on a marketplace's standalone skill: the entry's folder is one skill.
    standalone_skill: bool


class SkillInput(TypedDict):
    """An input of a task skill."""

    name: str
    description: str


class SkillResources(TypedDict):
    """The files a ``SKILL.md`` skill's folder carries, relative to ``skill_root``."""

    #: The skill's folder, relative to the plugin (``.`` for the plugin's root).
    skill_root: str
    scripts: list[str]
    references: list[str]
    assets: list[str]


class SetSkill(TypedDict):
    """A skill of the set (a plugin's command is one too, named ``plugin:command``)."""

    name: str
    description: str | None
    content: str
    #: Keywords of keyword and task skills (the SDK's ``trigger_keywords``).
    triggers: list[str]
    #: The plugin it came from.
    plugin: str
    #: The SDK's trigger type.
    trigger: Literal["always", "keyword", "task", "path"]
    #: The SDK's ``skill_type``, or ``command``.
    type: Literal["agentskills", "repo", "knowledge", "command"]
    #: Path globs of a path-triggered skill.
    paths: list[str] | None
    #: A task skill's inputs; empty for the others.
    inputs: list[SkillInput]
    allowed_tools: list[str] | None
    license: str | None
    compatibility: str | None
    #: Front matter ``metadata``, each value as Python's ``str()`` writes it.
    metadata: dict[str, str] | None
    disable_model_invocation: bool
    #: The file it came from, relative to the plugin.
    source: str
    #: The skill's own MCP servers, as written (a ``.mcp.json`` beside a ``SKILL.md``, or
    #: a legacy skill's ``mcp_tools`` front matter).
    mcp_tools: dict[str, JsonValue] | None
    resources: SkillResources | None


class _McpServerFields(TypedDict):
    #: The SDK's ``transport``.
    type: Literal["stdio", "http", "streamable-http", "sse"]
    command: str | None
    args: list[str]
    env: dict[str, str]
    url: str | None
    cwd: str | None
    headers: dict[str, str]
    description: str | None
    icon: str | None
    #: Seconds.
    timeout: float | None
    #: Seconds.
    sse_read_timeout: float | None
    keep_alive: bool | None
    #: The SDK's credential object (``{"strategy": ...}``), from agent definitions.
    auth: dict[str, JsonValue] | None
    #: ``False``: the server is listed but must not be started.
    enabled: bool
    #: An Agent Plugins server: its ``${VAR}``s must not be expanded.
    literal: bool


class AgentMcpServer(_McpServerFields):
    """An MCP server of a sub-agent (``SetAgent["mcp_servers"]``)."""


class SetMcpServer(_McpServerFields):
    """An MCP server of the set: an :class:`AgentMcpServer` with the plugin it came from."""

    plugin: str


# `async` is a keyword, so the functional form.
Hook = TypedDict(
    "Hook",
    {
        "type": Literal["command", "prompt", "agent"],
        #: The shell command (``command`` hooks), plugin-root variables expanded.
        "command": str,
        #: Seconds before it is killed.
        "timeout": int,
        "async": bool,
        "name": str | None,
        "prompt": str | None,
        "system_prompt": str | None,
        "tools": list[str],
        "max_iterations": int,
    },
)
Hook.__doc__ = """One hook of a matcher."""


class _HookMatcherFields(TypedDict):
    #: ``*``, an exact tool name, a regex, or ``/regex/``.
    matcher: str
    hooks: list[Hook]


class AgentHookMatcher(_HookMatcherFields):
    """A hook matcher of a sub-agent (``SetAgent["hooks"]``)."""


class SetHookMatcher(_HookMatcherFields):
    """A hook matcher of the set, with the plugin it came from."""

    plugin: str


class SetAgent(TypedDict):
    """A sub-agent of the set, with every field of the SDK's ``AgentDefinition``."""

    name: str
    description: str
    #: The system prompt.
    content: str
    model: str
    color: str | None
    tools: list[str]
    skills: list[str]
    permission_mode: str | None
    max_iteration_per_run: int | None
    #: USD.
    max_budget_per_run: float | None
    mcp_servers: dict[str, AgentMcpServer] | None
    #: Matchers per snake_case event, for the events the agent's file gives.
    hooks: dict[str, list[AgentHookMatcher]] | None
    profile_store_dir: str | None
    condenser: dict[str, JsonValue] | None
    when_to_use_examples: list[str]
    #: Every other front-matter key, as written.
    metadata: dict[str, JsonValue]
    #: The file, relative to the plugin.
    source: str
    plugin: str


class PluginSet(TypedDict):
    """The merged plugin set of a lock (docs/spec.md section 5)."""

    plugins: list[SetPlugin]
    #: By name: the last definition, at the first one's position.
    skills: list[SetSkill]
    #: By name, merged the same way.
    mcp_servers: dict[str, SetMcpServer]
    #: Every snake_case event (``pre_tool_use``, ``post_tool_use``, ``user_prompt_submit``,
    #: ``session_start``, ``session_end``, ``stop``), its matchers in plugin order.
    hooks: dict[str, list[SetHookMatcher]]
    #: The first definition of a name wins.
    agents: list[SetAgent]
    #: LSP servers by name, as the plugins write them, each with its ``plugin``.
    lsp_servers: dict[str, dict[str, JsonValue]]
    #: What was dropped or overridden, naming plugin, file and entry.
    warnings: list[str]


# What `berth plugins show --json` adds to the set: the review's reading of each plugin.


class _ReviewedHookKeys(TypedDict):
    #: snake_case (``pre_tool_use``; ``monitor``, ``headers_helper``, ...).
    event: str
    matcher: str
    #: ``command``, ``prompt``, ``agent``, ``mcp_tool``, or what the file says.
    kind: str
    #: As written, ``${CLAUDE_PLUGIN_ROOT}`` and all.
    command: str
    timeout: int
    #: The file defining it.
    source: str


# `async` is a keyword, so the functional form, with the keys only some hooks carry.
_ReviewedHookOptional = TypedDict(
    "_ReviewedHookOptional",
    {
        #: The arguments of an exec-form command hook (only when it has any).
        "args": list[str],
        #: Only when it runs in the background (``async``, ``asyncRewake``).
        "async": bool,
    },
    total=False,
)


class ReviewedHook(_ReviewedHookKeys, _ReviewedHookOptional):
    """A hook any harness would run, as the review reads it."""


class Unmodeled(TypedDict):
    """What a harness may run that berth cannot model, counted as ``capability``."""

    capability: Literal["hooks", "mcp_stdio", "mcp_remote", "executables"]
    #: The file (or ``FILE#field``).
    source: str
    what: str


class Reviewed(TypedDict):
    """What the review reads of one plugin of the set (docs/spec.md section 5)."""

    #: The capabilities it has, in ``[capabilities]`` order.
    capabilities: list[Literal["hooks", "mcp_stdio", "mcp_remote", "executables"]]
    #: Whether it runs code (so its prose is in its approval).
    runs_code: bool
    hooks: list[ReviewedHook]
    unmodeled: list[Unmodeled]


class ShownPluginSet(PluginSet):
    """The set as ``berth plugins show --json`` prints it: with ``review``, by plugin."""

    review: dict[str, Reviewed]


# `berth plugins list --json`
#
# A key only some documents carry is in a `total=False` class over the keys every one
# carries (`NotRequired` would need Python 3.11, or typing_extensions, at run time).


class _ListedPluginKeys(TypedDict):
    name: str
    source: str
    #: NAR sha256 of the plugin's folder, SRI form.
    hash: str
    kind: Literal["git", "archive", "local", "marketplace"]
    #: Its store entry, when it is there unchanged.
    store_path: str | None


class ListedPlugin(_ListedPluginKeys, total=False):
    """A lock entry (``[[plugin]]`` of plugins.lock), with its kind and store path."""

    #: ``PLUGIN@MARKETPLACE``, for a plugin asked for from a marketplace.
    requested: str
    ref: str
    #: The manifest's semver range.
    version: str
    #: The tag ``version`` resolved to.
    resolved_ref: str
    repo_path: str
    #: What was fetched (git and archive sources).
    url: str
    #: The locked commit (git sources).
    rev: str
    #: sha256 of the downloaded file (archive sources), SRI form.
    archive_hash: str
    #: The folder as the manifest wrote it (local sources).
    path: str
    #: The plugin's own version (marketplace plugins).
    plugin_version: str
    dependencies: list[str]
    needed_by: list[str]
    #: What the plugin's marketplace entry defines of it, as canonical JSON.
    definition: str


class ListedWheel(TypedDict):
    """A wheel of the locked agent package's closure."""

    name: str
    version: str
    file: str
    url: str
    sha256: str
    #: Whether the store has it.
    synced: bool


class ListedAgent(TypedDict):
    """The lock's custom agent package (docs/spec.md section 8)."""

    package: str
    version: str
    source: str
    #: ``name = module:attr``.
    entry_point: str
    python_version: str
    wheels: list[ListedWheel]


class ListedPayload(TypedDict):
    """A package a plugin's MCP server or hook runs (``npx``, ``uvx``), as locked."""

    plugin: str
    server: str
    use: str
    runner: str
    spec: str
    package: str
    version: str
    hash: str
    store_path: str | None


class _PluginListKeys(TypedDict):
    plugins: list[ListedPlugin]


class _LockedMarketplaceKeys(TypedDict):
    name: str
    #: As the manifest declares it, credentials removed.
    source: str
    #: The catalog read, relative to the marketplace's folder.
    catalog: str
    #: sha256 of the catalog's bytes, SRI form.
    catalog_hash: str


class LockedMarketplace(_LockedMarketplaceKeys, total=False):
    """A ``[[marketplace]]`` of plugins.lock."""

    ref: str
    repo_path: str
    #: The git URL fetched (git marketplaces).
    url: str
    #: The commit the catalog was read at (git marketplaces).
    rev: str
    #: ``True``, or the names of the plugins and standalone skills it loads into every
    #: conversation; absent when it loads none.
    auto_load: bool | list[str]


class PluginList(_PluginListKeys, total=False):
    """``berth plugins list --json``."""

    #: Only when the lock declares marketplaces.
    marketplaces: list[LockedMarketplace]
    #: Only when the lock has an ``[agent]``.
    #: Only when the lock pins packages.
    payloads: list[ListedPayload]


# berth serve (docs/spec.md section 7)


class _PluginSourceKeys(TypedDict):
    source: str


class PluginSourceBody(_PluginSourceKeys, total=False):
    """One plugin of a new conversation, with the OpenHands ``PluginSource`` fields."""

    ref: str | None
    repo_path: str | None


class _AgentSourceKeys(TypedDict):
    source: str


class AgentSourceBody(_AgentSourceKeys, total=False):
    """A new conversation's custom agent package, as the manifest's ``[agent]``."""

    ref: str | None
    entry_point: str | None
    python: str | None


class CreateConversation(TypedDict, total=False):
    """The body of ``POST /api/conversations``: ``plugins`` or ``lockfile``."""

    plugins: list[PluginSourceBody]
    #: The text of a plugins.lock.
    lockfile: str
    agent: AgentSourceBody
    #: Anything, kept with the conversation.
    metadata: JsonValue


class _LockedPluginKeys(TypedDict):
    name: str
    source: str
    hash: str


class LockedPluginBody(_LockedPluginKeys, total=False):
    """A locked plugin, in the server's answers."""

    ref: str
    repo_path: str
    url: str
    rev: str
    archive_hash: str


class LockedAgentBody(TypedDict):
    """A conversation's locked agent package."""

    package: str
    version: str
    source: str
    #: ``name = module:attr``.
    entry_point: str
    python_version: str
    #: How many wheels its closure has.
    wheels: int


class _ConversationCreatedKeys(TypedDict):
    id: str
    #: Its plugins.lock.
    lockfile: str
    plugins: list[LockedPluginBody]
    plugin_set: PluginSet


class ConversationCreated(_ConversationCreatedKeys, total=False):
    """The 201 answer to ``POST /api/conversations``."""

    #: Only when the conversation has a custom agent package.
    agent: LockedAgentBody


class ConversationSummary(TypedDict):
    """A conversation in ``GET /api/conversations``."""

    id: str
    #: Seconds since the Unix epoch.
    created_at: int
    #: The plugins' names, in lock order.
    plugins: list[str]


class ConversationList(TypedDict):
    """``GET /api/conversations``: one page."""

    conversations: list[ConversationSummary]
    #: Pass as ``cursor`` for the next page; ``None`` on the last.
    next_cursor: str | None


class _ConversationDetailKeys(TypedDict):
    id: str
    created_at: int
    metadata: JsonValue
    plugins: list[LockedPluginBody]


class ConversationDetail(_ConversationDetailKeys, total=False):
    """``GET /api/conversations/{id}``."""

    #: Only when the conversation has a custom agent package.
    agent: LockedAgentBody


class Health(TypedDict):
    """``GET /health``."""

    status: str
    conversations: int


class _ErrorDetailKeys(TypedDict):
    #: Stable and machine-readable: ``not_found``, ``forbidden``, ``invalid_plugin``, ...
    code: str
    #: A sentence for people.
    message: str


class ErrorDetail(_ErrorDetailKeys, total=False):
    """What went wrong."""

    #: The request's ``X-Request-Id``.
    request_id: str


class ErrorBody(TypedDict):
    """Every error answer of ``berth serve``."""

    error: ErrorDetail
