"""``berth.openhands``: a lock's plugin set, built by the binary, turned into the OpenHands
SDK's own objects and merged into an agent with the SDK's rules; the lock as the SDK's
``PluginSource``s; the extension's switch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from berth import BerthError
from berth.openhands import (
    load_plugins,
    locked_plugins,
    merge_into,
    native,
    plugin_set,
    plugin_sources,
    to_sdk,
)
from conftest import PLUGINS, SAMPLES, FakeBerth, Project

if TYPE_CHECKING:
    from openhands.sdk import Agent

    from berth.types import PluginSet


def test_native_is_off_with_berth_native_0(env: Path) -> None:
    assert native() is None


def test_berth_native_must_name_an_extension(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, env: Path
) -> None:
    not_one = tmp_path / "native.txt"
    not_one.write_text("")
    monkeypatch.setenv("BERTH_NATIVE", str(not_one))
    native.cache_clear()
    with pytest.raises(ImportError, match=f"^BERTH_NATIVE={not_one} is not a loadable extension$"):
        native()
    native.cache_clear()


def test_plugin_set_is_what_the_binary_shows(project: Project) -> None:
    project.add(SAMPLES / "alpha")
    project.add(SAMPLES / "beta")
    project.sync("alpha", "beta")
    shown = json.loads(project.berth("plugins", "show", "--json"))
    # `show --json` adds what the review reads of each plugin; the set is the rest.
    assert shown.pop("review")["alpha"]["runs_code"] is True
    assert plugin_set(project.lockfile, project.store) == shown
    with pytest.raises(BerthError) as raised:
        plugin_set(project.lockfile, project.folder / "empty-store")
    assert str(raised.value).startswith("error: plugin `alpha` is not in the store")
    assert "berth plugins sync" in str(raised.value)


LISTED = {
    "plugins": [
        {
            "name": "tools",
            "source": "https://git.example/acme/tools.git",
            "ref": "main",
            "repo_path": "plugins/alpha",
            "url": "https://git.example/acme/tools.git",
            "rev": "0123456789abcdef0123456789abcdef01234567",
            "hash": "sha256-AAAA",
            "kind": "git",
            "store_path": None,
        },
        {
            "name": "house",
            "source": "./house",
            "path": "./house",
            "hash": "sha256-BBBB",
            "kind": "local",
            "store_path": "/store/house",
        },
    ]
}


def test_locked_plugins_reads_plugins_list(fake_berth: FakeBerth, tmp_path: Path) -> None:
    fake_berth.answer(stdout=json.dumps(LISTED))
    lock = tmp_path / "team" / "plugins.lock"
    lock.parent.mkdir()
    assert locked_plugins(lock, tmp_path / "store") == LISTED["plugins"]
    assert fake_berth.calls == [
        [
            str(lock.parent),
            "--store",
            str(tmp_path / "store"),
            "plugins",
            "--lockfile",
            str(lock),
            "list",
            "--json",
        ]
    ]


def test_plugin_sources_pin_the_sdk_to_the_lock(
    fake_berth: FakeBerth, tmp_path: Path, sdk: None
) -> None:
    from openhands.sdk.plugin import PluginSource

    fake_berth.answer(stdout=json.dumps(LISTED))
    lock = tmp_path / "team" / "plugins.lock"
    lock.parent.mkdir()
    assert plugin_sources(lock) == [
        PluginSource(
            source="https://git.example/acme/tools.git",
            ref="0123456789abcdef0123456789abcdef01234567",
            repo_path="plugins/alpha",
        ),
        PluginSource(source=str(tmp_path / "team" / "house")),
    ]
    archive = {"name": "lint", "source": "https://example.org/lint-1.0.tar.gz", "kind": "archive"}
    fake_berth.answer(stdout=json.dumps({"plugins": [archive]}))
    with pytest.raises(
        ValueError,
        match=r"^plugin `lint` comes from the archive `https://example\.org/lint-1\.0\.tar\.gz`",
    ):
        plugin_sources(lock)


@pytest.fixture
def samples(project: Project) -> PluginSet:
    """The plugin set of the five conformance samples, as the binary builds it."""
    names = ["alpha", "beta", "gamma", "delta", "epsilon"]
    for name in names:
        project.add(SAMPLES / name)
    project.sync(*names)
    return plugin_set(project.lockfile, project.store)


def test_to_sdk_carries_every_part_of_the_set(samples: PluginSet, sdk: None) -> None:
    from openhands.sdk.skills import KeywordTrigger, PathTrigger, TaskTrigger

    sdk_set = to_sdk(samples)
    roots = {p["name"]: Path(p["root"]) for p in samples["plugins"]}
    triggers = {"keyword": KeywordTrigger, "task": TaskTrigger, "path": PathTrigger}
    assert [s.name for s in sdk_set.skills] == [s["name"] for s in samples["skills"]]
    for skill, raw in zip(sdk_set.skills, samples["skills"], strict=True):
        assert skill.content == raw["content"]
        assert skill.description == raw["description"]
        assert skill.source == (roots[raw["plugin"]] / raw["source"]).as_posix()
        expected = triggers.get(raw["trigger"])
        assert type(skill.trigger) is expected if expected else skill.trigger is None
        assert skill.is_agentskills_format == (raw["type"] == "agentskills")

    assert list(sdk_set.mcp_config) == list(samples["mcp_servers"])
    for name, server in sdk_set.mcp_config.items():
        raw_server = samples["mcp_servers"][name]
        assert server.transport == raw_server["type"]
        assert server.command == raw_server["command"]

    assert sdk_set.hook_config is not None
    hooks = sdk_set.hook_config.model_dump()
    for event, matchers in samples["hooks"].items():
        assert [m["matcher"] for m in hooks[event]] == [m["matcher"] for m in matchers]

    assert [a.name for a in sdk_set.agents] == [a["name"] for a in samples["agents"]]
    for agent, raw_agent in zip(sdk_set.agents, samples["agents"], strict=True):
        assert agent.system_prompt == raw_agent["content"]
        assert agent.source == (roots[raw_agent["plugin"]] / raw_agent["source"]).as_posix()
    assert sdk_set.plugins == samples["plugins"]
    assert sdk_set.warnings == samples["warnings"]


def agent_with(skills: list[tuple[str, str]], mcp: dict[str, Any] | None = None) -> Agent:
    from openhands.sdk import LLM, Agent
    from openhands.sdk.context import AgentContext
    from openhands.sdk.skills import Skill
    from pydantic import SecretStr

    llm = LLM(model="test/model", api_key=SecretStr("unset"), usage_id="agent")
    context = AgentContext(skills=[Skill(name=n, content=c) for n, c in skills])
    return Agent(llm=llm, tools=[], agent_context=context, mcp_config=mcp or {})


def test_merge_into_follows_the_sdks_rules(samples: PluginSet, sdk: None) -> None:
    sdk_set = to_sdk(samples)
    first, second = sdk_set.skills[0].name, sdk_set.skills[1].name
    agent = agent_with([("mine", "kept"), (second, "replaced")])
    merged, hooks = merge_into(
        agent, sdk_set, get_secret={"API_TOKEN": "s3cret"}.get, max_skills=1000
    )
    assert merged.agent_context is not None
    names = [s.name for s in merged.agent_context.skills]
    # The agent's skills keep their places; a plugin's skill of the same name replaces one.
    assert names[:3] == ["mine", second, first]
    assert len(names) == len(sdk_set.skills) + 1
    assert merged.agent_context.skills[1].content == sdk_set.skills[1].content
    assert hooks is sdk_set.hook_config
    # `${VAR}` is filled from the conversation's secrets, except in an Agent Plugins
    # server (gamma's), which is literal.
    assert (
        merged.mcp_config["full"].model_dump(context={"expose_secrets": True})["env"]["SECRET"]
        == "s3cret"
    )
    assert merged.mcp_config["shared-server"].model_dump()["args"][-1] == "${HOME}"
    unexpanded, _ = merge_into(agent, sdk_set, max_skills=1000)
    assert (
        unexpanded.mcp_config["full"].model_dump(context={"expose_secrets": True})["env"]["SECRET"]
        == "${API_TOKEN}"
    )

    too_many = len(sdk_set.skills)
    with pytest.raises(ValueError, match=rf"^Total skills \({too_many + 1}\) exceeds maximum "):
        merge_into(agent, sdk_set, max_skills=too_many)


def test_a_set_without_plugins_leaves_the_agent_alone(sdk: None) -> None:
    from berth.openhands import SdkPluginSet

    agent = agent_with([("mine", "kept")])
    assert merge_into(agent, SdkPluginSet()) == (agent, None)


def test_load_plugins_from_the_example(project: Project, sdk: None) -> None:
    team = project.folder / "examples" / "team"
    for name in ("review", "lint", "house-rules"):
        project.add(PLUGINS / name, f"fixtures/plugins/{name}")
    project.add(Path(__file__).resolve().parents[2] / "examples" / "team", "examples/team")
    project.berth("plugins", "sync", "--manifest", str(team / "plugins.toml"))
    agent, hooks = load_plugins(team / "plugins.lock", agent_with([]), store=project.store)
    assert agent.agent_context is not None
    assert [s.name for s in agent.agent_context.skills] == [
        "code-review",
        "review:check",
        "lint-rules",
        "house-style",
    ]
    assert hooks is not None
    assert [e for e, m in hooks.model_dump().items() if m] == ["pre_tool_use"]


def test_hooks_are_the_objects_the_sdks_validation_makes(samples: PluginSet, sdk: None) -> None:
    """The matchers made around validated definitions (``_hook_models``) equal, field by
    field, fields-set and private values included, what validating each one gives."""
    from openhands.sdk.hooks import HookConfig
    from pydantic import BaseModel

    import berth.openhands as openhands

    def same(a: Any, b: Any, where: str = "") -> None:
        assert type(a) is type(b), where
        if isinstance(a, BaseModel):
            assert a.model_fields_set == b.model_fields_set, where
            assert a.__pydantic_private__ == b.__pydantic_private__, where
            assert a.__pydantic_extra__ == b.__pydantic_extra__, where
            assert list(a.__dict__) == list(b.__dict__), where
            for key in a.__dict__:
                same(a.__dict__[key], b.__dict__[key], f"{where}.{key}")
        elif isinstance(a, list):
            assert len(a) == len(b), where
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                same(x, y, f"{where}[{i}]")
        else:
            assert a == b, where

    assert openhands._hook_models() is not None
    fast = openhands._hook_config(samples["hooks"])
    assert fast is not None
    assert sum(len(m.hooks) for m in fast.pre_tool_use + fast.stop) > 0
    validated = HookConfig.model_validate(
        {
            event: [{"matcher": m["matcher"], "hooks": [dict(h) for h in m["hooks"]]} for m in ms]
            for event, ms in samples["hooks"].items()
        }
    )
    same(fast, validated)
    assert fast == validated


@pytest.mark.parametrize(
    ("root", "rel", "joined"),
    [
        ("/s/p", "skills/a/SKILL.md", "/s/p/skills/a/SKILL.md"),
        ("/s/p", ".", "/s/p"),
        ("/s/p", "", "/s/p"),
        ("/s/p", "./skills//a/", "/s/p/skills/a"),
        ("/s/p", "a/../b", "/s/p/a/../b"),
        ("/", "a", "/a"),
        ("/s/p", "/abs", "/abs"),
    ],
)
def test_skill_paths_are_joined_as_pathlib_joins_them(root: str, rel: str, joined: str) -> None:
    from pathlib import PurePath

    from berth.openhands import _posix

    assert _posix(Path(root), rel) == joined == (Path(root) / PurePath(rel)).as_posix()
