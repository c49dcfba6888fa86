"""Loads the same plugins with the OpenHands SDK's own `load_plugins` (from their folders)
and with `berth.openhands.load_plugins` (from a berth lock and its store), and compares
skills, MCP config and hooks as `model_dump()`.

Usage: compare_sdk.py LOCKFILE FOLDER...   (the folders in lock order)

Prints one JSON object: `differences` (the README's deliberate differences that were seen
and normalised away, by name), `mismatch` (what still differs, empty when equal), the
skill names and the agent definitions' names on both sides.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from openhands.sdk import LLM, Agent
from openhands.sdk.plugin import Plugin, PluginSource
from openhands.sdk.plugin import load_plugins as sdk_load_plugins

from berth.openhands import agent_definitions, load_plugins, native, plugin_set

EXPOSE = {"expose_secrets": True}
ROOT_VARIABLES = ("${CLAUDE_PLUGIN_ROOT}", "${PLUGIN_ROOT}")
NOTICE = "<response clipped><NOTE>"


def dump(agent: Any, hooks: Any) -> dict[str, Any]:
    return {
        "skills": [s.model_dump(mode="json", context=EXPOSE) for s in agent.agent_context.skills],
        "mcp": {k: v.model_dump(mode="json", context=EXPOSE) for k, v in agent.mcp_config.items()},
        "hooks": hooks.model_dump(mode="json", context=EXPOSE) if hooks else None,
    }


def replace_strings(value: Any, fn: Any) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, list):
        return [replace_strings(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: replace_strings(v, fn) for k, v in value.items()}
    return value


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    if type(a) is not type(b):
        return f"{path}: SDK {json.dumps(a)[:300]} | berth {json.dumps(b)[:300]}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}/{key}: SDK {json.dumps(a.get(key))[:300]} | berth {json.dumps(b.get(key))[:300]}"
            found = first_difference(a[key], b[key], f"{path}/{key}")
            if found:
                return found
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: SDK has {len(a)} items, berth {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{path}: SDK {json.dumps(a)[:300]} | berth {json.dumps(b)[:300]}"


def inferred_transport(server: dict[str, Any]) -> str:
    if server.get("command"):
        return "stdio"
    path = re.split(r"[?#]", server.get("url") or "")[0].rstrip("/")
    return "sse" if path.endswith("/sse") else "http"


def main() -> None:
    lockfile, folders = sys.argv[1], [Path(f).resolve() for f in sys.argv[2:]]
    agent = Agent(llm=LLM(model="gpt-4o", api_key=SecretStr("x"), usage_id="probe"), tools=[])
    sdk = dump(*sdk_load_plugins([PluginSource(source=str(f)) for f in folders], agent))
    ours = dump(*load_plugins(lockfile, agent))
    doc = plugin_set(lockfile)
    folder_of = {p["name"]: folders[i].as_posix() for i, p in enumerate(doc["plugins"])}
    seen: set[str] = set()

    # Paths: berth's point into the store, the SDK's into the folders it loaded.
    text = json.dumps(ours)
    for plugin in doc["plugins"]:
        text = text.replace(plugin["root"], folder_of[plugin["name"]])
    ours = json.loads(text)

    # 1. plugin-root-variables: berth expands ${CLAUDE_PLUGIN_ROOT} and ${PLUGIN_ROOT} in
    #    Claude Code hooks and MCP servers to the plugin's store path; the SDK leaves them.
    def expand_for(plugin: str) -> Any:
        def fn(s: str) -> str:
            out = s
            for var in ROOT_VARIABLES:
                out = out.replace(var, folder_of[plugin])
            if out != s:
                seen.add("plugin-root-variables")
            return out

        return fn

    for name, server in sdk["mcp"].items():
        sdk["mcp"][name] = replace_strings(server, expand_for(doc["mcp_servers"][name]["plugin"]))
    for event, matchers in (sdk["hooks"] or {}).items():
        for i, matcher in enumerate(matchers):
            plugin = doc["hooks"][event][i]["plugin"]
            matchers[i] = replace_strings(matcher, expand_for(plugin))

    # 2. plugin-data: an Agent Plugins server's ${PLUGIN_DATA} is a folder per plugin (name
    #    and source) under berth's store, not ~/.openhands/plugin-data/<name>-<hash>.
    def data_dirs(s: str) -> str:
        out = re.sub(r"/[^\"]*/\.openhands/plugin-data/([^/\"]+)-[0-9a-f]{16}", r"<data:\1>", s)
        out = re.sub(r"/[^\"]*/plugin-data-v1/([^/\"]+)-[0-9a-f]{16}", r"<data:\1>", out)
        if out != s:
            seen.add("plugin-data")
        return out

    sdk["mcp"] = replace_strings(sdk["mcp"], data_dirs)
    ours["mcp"] = replace_strings(ours["mcp"], data_dirs)

    # 3. transport-inferred: where a file leaves `type` out, berth names the transport the
    #    SDK infers when it connects (stdio for a command, sse for a URL ending in /sse,
    #    else http); the SDK keeps None.
    for name, server in sdk["mcp"].items():
        if server.get("transport") is None and name in ours["mcp"]:
            server["transport"] = inferred_transport(server)
            seen.add("transport-inferred")

    # 4. description-notice: a description over 1024 characters is cut around a notice
    #    naming the plugin-relative file (the same in every store); the SDK names its
    #    absolute path, so the cut moves with the path's length.
    for a, b in zip(sdk["skills"], ours["skills"]):
        if a.get("description") and NOTICE in a["description"]:
            rel = Path(b["source"]).relative_to(folder_of[doc_plugin(doc, b["name"])]).as_posix()
            assert f"at {rel}.</NOTE>" in (b["description"] or ""), b["description"]
            assert len(a["description"]) == len(b["description"]) == 1024
            a["description"] = b["description"] = "<cut>"
            seen.add("description-notice")

    # Sub-agents: the SDK's `load_plugins` leaves them to the conversation, which registers
    # every plugin's `Plugin.agents`; berth gives the same definitions.
    sdk_agents = [
        a.model_dump(mode="json", context=EXPOSE)
        for f in folders
        for a in Plugin.load(str(f)).agents
    ]
    for definition in sdk_agents:
        for server in (definition.get("mcp_config") or {}).values():
            if server.get("transport") is None:
                server["transport"] = inferred_transport(server)
                seen.add("transport-inferred")
    our_agents = json.dumps(
        [a.model_dump(mode="json", context=EXPOSE) for a in agent_definitions(lockfile)]
    )
    for plugin in doc["plugins"]:
        our_agents = our_agents.replace(plugin["root"], folder_of[plugin["name"]])
    print(
        json.dumps(
            {
                "differences": sorted(seen),
                "mismatch": first_difference(sdk, ours) or "",
                "skills": [s["name"] for s in ours["skills"]],
                "sdk_skills": [s["name"] for s in sdk["skills"]],
                "agents_mismatch": first_difference(sdk_agents, json.loads(our_agents)) or "",
                "agents": [a["name"] for a in sdk_agents],
                "in_process": native() is not None,
            }
        )
    )


def doc_plugin(doc: dict[str, Any], skill: str) -> str:
    return next(s["plugin"] for s in doc["skills"] if s["name"] == skill)


if __name__ == "__main__":
    main()
