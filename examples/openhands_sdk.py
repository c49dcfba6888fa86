#!/usr/bin/env python3
"""Run an OpenHands SDK conversation with exactly the plugins a berth lock pins.

    pip install .                      # berth (binary + module), in a clone of berth
    pip install openhands-sdk==1.58.2  # the SDK (Python 3.12)
    python examples/openhands_sdk.py   # [--send "a message"] with LLM_API_KEY set

The lock (`examples/team/plugins.lock`) is synced into the store, then the conversation's
agent gets its skills and MCP servers, and the conversation its hooks, from the lock and
the store alone: nothing is fetched when the conversation starts or resumes.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from pydantic import SecretStr

import berth
from berth.openhands import agent_definitions, load_plugins

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", type=Path, default=HERE / "team" / "plugins.toml")
    parser.add_argument("--send", help="a message to send (needs LLM_API_KEY)")
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

    from openhands.sdk import LLM, Agent, Conversation
    from openhands.sdk.subagent.registry import register_plugin_agents

    # 1. Lock (a no-op when plugins.lock is current) and fill the store, verified.
    berth.run(["plugins", "--manifest", str(args.manifest), "sync"])
    lockfile = args.manifest.with_suffix(".lock")

    # 2. The SDK's load_plugins, from the lock and the store only.
    llm = LLM(
        model=os.environ.get("LLM_MODEL", "anthropic/claude-sonnet-4-5"),
        api_key=SecretStr(os.environ.get("LLM_API_KEY", "unset")),
        usage_id="agent",
    )
    agent, hook_config = load_plugins(lockfile, Agent(llm=llm, tools=[]))
    workspace = tempfile.mkdtemp(prefix="berth-example-")
    register_plugin_agents(agent_definitions(lockfile), work_dir=workspace)

    # 3. A conversation with those skills, MCP servers and hooks.
    conversation = Conversation(agent=agent, workspace=workspace, hook_config=hook_config)
    skills = [s.name for s in agent.agent_context.skills] if agent.agent_context else []
    print(f"skills: {', '.join(skills)}")
    print(f"MCP servers: {', '.join(agent.mcp_config) or 'none'}")
    if hook_config:
        events = [e for e, m in hook_config.model_dump().items() if m]
        print(f"hooks on: {', '.join(events)}")
    if args.send:
        conversation.send_message(args.send)
        conversation.run()
    conversation.close()


if __name__ == "__main__":
    main()
