"""Builds an OpenHands `LocalConversation` from `berth.openhands.load_plugins` (no model
call) and lets the SDK's own hook executor run the locked plugins' `PreToolUse` hooks for
a `terminal` call.

Usage: conversation_hooks.py LOCKFILE WORKSPACE

Prints one JSON object: the conversation's type, the skills and MCP servers its agent
carries, the hook commands, and what the SDK's `HookManager` decided.
"""

from __future__ import annotations

import json
import sys

from pydantic import SecretStr

from openhands.sdk import LLM, Agent, Conversation
from openhands.sdk.hooks import HookManager

from berth.openhands import load_plugins


def main() -> None:
    lockfile, workspace = sys.argv[1], sys.argv[2]
    agent = Agent(llm=LLM(model="gpt-4o", api_key=SecretStr("x"), usage_id="probe"), tools=[])
    agent, hooks = load_plugins(lockfile, agent)
    conversation = Conversation(agent=agent, workspace=workspace, hook_config=hooks)
    state_agent = conversation.state.agent
    manager = HookManager(config=hooks, working_dir=workspace, session_id=str(conversation.id))
    should_continue, results = manager.run_pre_tool_use("terminal", {"command": "rm -rf /"})
    print(
        json.dumps(
            {
                "conversation": type(conversation).__name__,
                "skills": [s.name for s in state_agent.agent_context.skills],
                "mcp_servers": sorted(state_agent.mcp_config),
                "hook_commands": [h.command for m in hooks.pre_tool_use for h in m.hooks],
                "continue": should_continue,
                "blocked": [r.blocked for r in results],
                "exit_codes": [r.exit_code for r in results],
                "reason": manager.get_blocking_reason(results),
            }
        )
    )
    conversation.close()


if __name__ == "__main__":
    main()
