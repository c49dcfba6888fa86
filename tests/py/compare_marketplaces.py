"""A conversation's plugins from registered marketplaces, as the OpenHands SDK builds them
and as berth builds them from a lock.

Usage:
  compare_marketplaces.py sdk-load REGISTRATIONS PLUGINS PLUGIN_REF WORKSPACE OUT
      The SDK's own `LocalConversation` starts with the registrations and plugins, then
      `load_plugin(PLUGIN_REF)` (fetching it); what its agent ends up with goes to OUT.
  compare_marketplaces.py berth-load REGISTRATIONS PLUGIN_REF LOCKFILE WORKSPACE SDK_OUT
      The same with berth: `load_plugins` from the lock, then `berth.openhands.load_plugin`
      (which locks the plugin on demand); compared with the SDK's.
  compare_marketplaces.py sdk REGISTRATIONS PLUGINS WORKSPACE OUT
      The SDK's own `LocalConversation` loads the registrations (`auto_load`) and the
      explicit plugins (fetching them); what its agent ends up with goes to OUT.
  compare_marketplaces.py berth REGISTRATIONS LOCKFILE WORKSPACE SDK_OUT
      `berth.openhands.load_plugins` builds the same agent from the lock and the store, a
      `LocalConversation` is started with it (its upstreams gone), and both are compared
      with the SDK's; prints one JSON object.

REGISTRATIONS is a JSON list of `MarketplaceRegistration` fields, PLUGINS one of
`PluginSource` fields. The agent carries one skill of its own, `notes`. Absolute paths are
compared by their last two components, a skill's folder by its name (the SDK's clone cache
and berth's store differ).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from openhands.sdk import LLM, Agent, Conversation
from openhands.sdk.context import AgentContext
from openhands.sdk.marketplace import MarketplaceRegistration
from openhands.sdk.plugin import PluginSource
from openhands.sdk.skills import Skill

from berth.openhands import load_plugin, load_plugins

# Its sibling's comparison, where the explicit plugins are compared.
sys.path.insert(0, str(Path(__file__).parent))
from compare_sdk import first_difference  # noqa: E402

EXPOSE = {"expose_secrets": True}


def agent_with(registrations: list[MarketplaceRegistration]) -> Agent:
    own = Skill(name="notes", content="The agent's own notes.", trigger=None)
    context = AgentContext(skills=[own], registered_marketplaces=registrations)
    return Agent(
        llm=LLM(model="gpt-4o", api_key=SecretStr("x"), usage_id="probe"),
        tools=[],
        agent_context=context,
    )


def tails(value: Any) -> Any:
    """Every absolute path in `value` cut to its last two components."""
    if isinstance(value, str):
        return re.sub(r"/(?:[^/\s\"']+/)*([^/\s\"']+/[^/\s\"']+)", r"…/\1", value)
    if isinstance(value, list):
        return [tails(v) for v in value]
    if isinstance(value, dict):
        return {k: tails(v) for k, v in value.items()}
    return value


def dump(conversation: Any) -> dict[str, Any]:
    conversation._ensure_plugins_loaded()
    agent = conversation.agent
    hooks = conversation.state.hook_config
    skills = [s.model_dump(mode="json", context=EXPOSE) for s in agent.agent_context.skills]
    for skill in skills:
        # A skill's folder: the SDK's is in the marketplace's `skills/`, berth's is the
        # store entry of the skill alone; the folder's own name is the same.
        if skill.get("resources"):
            skill["resources"]["skill_root"] = Path(skill["resources"]["skill_root"]).name
    return tails(
        {
            "skills": skills,
            "mcp": {
                k: v.model_dump(mode="json", context=EXPOSE)
                for k, v in (agent.mcp_config or {}).items()
            },
            "hooks": hooks.model_dump(mode="json", context=EXPOSE) if hooks else None,
        }
    )


def main() -> None:
    mode, registrations_json = sys.argv[1], sys.argv[2]
    registrations = [MarketplaceRegistration(**r) for r in json.loads(registrations_json)]
    if mode == "sdk":
        plugins = [PluginSource(**p) for p in json.loads(sys.argv[3])]
        workspace, out = sys.argv[4], sys.argv[5]
        conversation = Conversation(
            agent=agent_with(registrations), workspace=workspace, plugins=plugins
        )
        found = dump(conversation)
        Path(out).write_text(json.dumps(found))
        conversation.close()
        print(json.dumps({"skills": [s["name"] for s in found["skills"]]}))
        return
    if mode == "sdk-load":
        plugins = [PluginSource(**p) for p in json.loads(sys.argv[3])]
        plugin_ref, workspace, out = sys.argv[4], sys.argv[5], sys.argv[6]
        conversation = Conversation(
            agent=agent_with(registrations), workspace=workspace, plugins=plugins
        )
        conversation._ensure_plugins_loaded()
        conversation.load_plugin(plugin_ref)
        found = dump(conversation)
        Path(out).write_text(json.dumps(found))
        conversation.close()
        print(json.dumps({"skills": [s["name"] for s in found["skills"]]}))
        return
    if mode == "berth-load":
        plugin_ref, lockfile, workspace, sdk_out = sys.argv[3:7]
        sdk = json.loads(Path(sdk_out).read_text())
        agent, hooks = load_plugins(lockfile, agent_with(registrations))
        conversation = Conversation(agent=agent, workspace=workspace, hook_config=hooks)
        conversation._ensure_plugins_loaded()
        load_plugin(conversation, plugin_ref, lockfile)
        ours = dump(conversation)
        conversation.close()
        print(
            json.dumps(
                {
                    "mismatch": first_difference(sdk, ours) or "",
                    "skills": [s["name"] for s in ours["skills"]],
                    "sdk_skills": [s["name"] for s in sdk["skills"]],
                }
            )
        )
        return
    lockfile, workspace, sdk_out = sys.argv[3], sys.argv[4], sys.argv[5]
    sdk = json.loads(Path(sdk_out).read_text())
    agent, hooks = load_plugins(lockfile, agent_with(registrations))
    conversation = Conversation(agent=agent, workspace=workspace, hook_config=hooks)
    ours = dump(conversation)
    conversation.close()
    print(
        json.dumps(
            {
                "mismatch": first_difference(sdk, ours) or "",
                "skills": [s["name"] for s in ours["skills"]],
                "sdk_skills": [s["name"] for s in sdk["skills"]],
                "mcp": sorted(ours["mcp"]),
                "hook_events": sorted(k for k, v in (ours["hooks"] or {}).items() if v),
                "auto_load_left": [r.auto_load for r in agent.agent_context.registered_marketplaces],
            }
        )
    )


if __name__ == "__main__":
    main()
