"""The plugins the OpenHands SDK loads by itself (ambient: the user's, the enabled
installed ones, the project's), as the SDK loads them and as berth loads what
`berth plugins import --ambient` locked.

Usage:
  ambient.py sdk WORKSPACE OUT            the SDK's `LocalConversation` in WORKSPACE, with
                                          this HOME's plugins; what its agent has -> OUT
  ambient.py berth LOCKFILE EMPTY SDK_OUT `load_plugins` from the lock, run with HOME and
                                          the workspace EMPTY (no ambient plugin on disk);
                                          compared with SDK_OUT, prints one JSON object
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

if sys.argv[1] == "berth":
    # Before the SDK is imported: it finds the user's plugins under HOME.
    os.environ["HOME"] = sys.argv[3]

sys.path.insert(0, str(Path(__file__).parent))

from compare_marketplaces import dump, first_difference  # noqa: E402
from pydantic import SecretStr  # noqa: E402

from openhands.sdk import LLM, Agent, Conversation  # noqa: E402

from berth.openhands import load_plugins  # noqa: E402


def agent() -> Agent:
    return Agent(llm=LLM(model="gpt-4o", api_key=SecretStr("x"), usage_id="probe"), tools=[])


def main() -> None:
    if sys.argv[1] == "sdk":
        workspace, out = sys.argv[2], sys.argv[3]
        conversation = Conversation(agent=agent(), workspace=workspace)
        found = dump(conversation)
        conversation.close()
        Path(out).write_text(json.dumps(found))
        print(json.dumps({"skills": [s["name"] for s in found["skills"]]}))
        return
    lockfile, empty, sdk_out = sys.argv[2], sys.argv[3], sys.argv[4]
    sdk = json.loads(Path(sdk_out).read_text())
    updated, hooks = load_plugins(lockfile, agent())
    conversation = Conversation(agent=updated, workspace=empty, hook_config=hooks)
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


if __name__ == "__main__":
    main()
