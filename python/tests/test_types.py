"""``berth.types`` holds to what the binary and the server really write: the plugin set of
the shipped example and of the conformance samples, ``plugins list --json``, and every
answer of a ``berth serve`` on 127.0.0.1."""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

import pytest

from berth.client import Client, ServerError
from berth.types import (
    ConversationCreated,
    ConversationDetail,
    ConversationList,
    ErrorBody,
    Health,
    PluginList,
    PluginSet,
    ShownPluginSet,
)
from conftest import PLUGINS, REPO, SAMPLES, Project, Served
from typed_json import mismatches

if TYPE_CHECKING:
    from pathlib import Path


def show(project: Project) -> Any:
    return json.loads(project.berth("plugins", "show", "--json"))


def test_the_checker_names_what_does_not_fit() -> None:
    assert mismatches({"status": "ok", "conversations": 1}, Health) == []
    assert mismatches({"status": "ok", "conversations": True, "extra": 1}, Health) == [
        "$: Health has no key `extra`",
        "$.conversations: True is not int",
    ]
    assert mismatches({"status": "ok"}, Health) == ["$: Health requires `conversations`"]
    assert mismatches({"error": {"code": "x", "message": "m", "request_id": 7}}, ErrorBody) == [
        "$.error.request_id: 7 is not str"
    ]


def test_the_shipped_examples_plugin_set(project: Project) -> None:
    # examples/team names its plugins as ../../fixtures/plugins/<name>: the same layout,
    # copied, so the checkout is never written.
    team = project.folder / "examples" / "team"
    shutil.copytree(REPO / "examples" / "team", team)
    shutil.copytree(PLUGINS, project.folder / "fixtures" / "plugins")
    manifest = str(team / "plugins.toml")
    project.berth("plugins", "sync", "--manifest", manifest)
    doc = json.loads(project.berth("plugins", "show", "--json", "--manifest", manifest))
    assert mismatches(doc, ShownPluginSet) == []
    assert [s["name"] for s in doc["skills"]] == [
        "code-review",
        "review:check",
        "lint-rules",
        "house-style",
    ]
    listed = json.loads(project.berth("plugins", "list", "--json", "--manifest", manifest))
    assert mismatches(listed, PluginList) == []
    assert [p["kind"] for p in listed["plugins"]] == ["local", "local", "local"]


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


#: A plugin with what the samples lack: skill resources and MCP servers, task inputs,
#: metadata, a path skill, an LSP server and an entry command.
KIT = {
    ".claude-plugin/plugin.json": json.dumps(
        {"name": "kit", "version": "2.0.0", "entry_command": "start"}
    ),
    "skills/pdf/SKILL.md": "---\nname: pdf\ndescription: Reads PDFs.\nlicense: MIT\n"
    "metadata:\n  tier: 1\n---\nUse the script.\n",
    "skills/pdf/.mcp.json": json.dumps(
        {"mcpServers": {"pdf-tools": {"command": "node", "args": ["${SKILL_ROOT}/server.js"]}}}
    ),
    "skills/pdf/scripts/extract.py": "print()\n",
    "skills/pdf/references/a.md": "a\n",
    "skills/pdf/assets/logo.svg": "<svg/>\n",
    "skills/ask.md": "---\ninputs:\n  - name: REPO\n    description: which repository\n---\n"
    "Clone ${REPO}.\n",
    "skills/docs.md": "---\npaths: ['docs/**']\n---\nWrite plainly.\n",
    ".lsp.json": json.dumps({"rust": {"command": "rust-analyzer", "extensionToLanguage": {}}}),
}


def test_the_samples_plugin_sets(project: Project) -> None:
    names = ["alpha", "beta", "gamma", "delta", "epsilon"]
    for name in names:
        project.add(SAMPLES / name)
    write(project.folder / "kit", KIT)
    project.sync(*names, "kit")
    doc = show(project)
    assert mismatches(doc, ShownPluginSet) == []
    assert doc["review"]["kit"]["capabilities"] == ["mcp_stdio"]
    # What the types describe was there to check.
    assert {p["format"] for p in doc["plugins"]} == {"claude-code", "agent-plugins"}
    assert any(s["resources"] and s["mcp_tools"] for s in doc["skills"])
    assert any(s["inputs"] for s in doc["skills"])
    assert any(s["paths"] for s in doc["skills"])
    assert any(s["metadata"] for s in doc["skills"])
    assert any(a["mcp_servers"] and a["hooks"] for a in doc["agents"])
    assert any(matchers for matchers in doc["hooks"].values())
    assert doc["mcp_servers"]
    assert doc["lsp_servers"]
    assert any(p["entry_command"] for p in doc["plugins"])
    listed = json.loads(project.berth("plugins", "list", "--json"))
    assert mismatches(listed, PluginList) == []


def error_body(served: Served, path: str, key: str | None) -> tuple[int, Any]:
    request = urllib.request.Request(served.base + path)
    if key:
        request.add_header("X-Session-API-Key", key)
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=60)
    return raised.value.code, json.loads(raised.value.read())


def test_the_servers_answers(project: Project, serve: Served) -> None:
    project.add(SAMPLES / "delta")
    project.add(PLUGINS / "review")
    project.sync("delta", "review")
    client = Client(serve.base, serve.api_key)

    health: Any = json.loads(urllib.request.urlopen(serve.base + "/health", timeout=60).read())
    assert mismatches(health, Health) == []

    created = client.start(
        [{"source": str(project.folder / "review")}], metadata={"user": "ada", "n": [1, 2.5]}
    )
    from_lock = client.start(lockfile=project.lockfile)
    for conversation in (created, from_lock):
        answer = {
            "id": conversation.id,
            "lockfile": conversation.lockfile,
            "plugins": conversation.plugins,
            "plugin_set": conversation.plugin_set,
        }
        assert mismatches(answer, ConversationCreated) == []
        assert mismatches(client.plugin_set(conversation.id), PluginSet) == []
        assert mismatches(client.get(conversation.id), ConversationDetail) == []
    assert [p["name"] for p in from_lock.plugins] == ["delta", "review"]
    assert client.get(created.id)["metadata"] == {"user": "ada", "n": [1, 2.5]}

    page: Any = client._request("GET", "/api/conversations?limit=1")
    assert mismatches(page, ConversationList) == []
    assert page["next_cursor"] is not None
    listed = client.list(page_size=1)
    assert mismatches({"conversations": listed, "next_cursor": None}, ConversationList) == []
    assert sorted(c["id"] for c in listed) == sorted([created.id, from_lock.id])

    for path, key, status in [
        ("/api/conversations/nope", serve.api_key, 404),
        ("/api/conversations", "wrong", 401),
        ("/api/conversations?limit=0", serve.api_key, 400),
    ]:
        got_status, body = error_body(serve, path, key)
        assert got_status == status
        assert mismatches(body, ErrorBody) == []
    with pytest.raises(ServerError) as refused:
        client.start([{"source": "https://127.0.0.9:9/acme/tools.git"}])
    assert refused.value.status == 403
