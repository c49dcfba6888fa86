"""Drives `berth.Client` against a running `berth serve`, one step per run, so the test
can restart the server between steps.

Usage:
  client_steps.py start URL KEY SOURCE LOCKFILE   start from a PluginSource and from a lock
  client_steps.py restore URL KEY ID...           what the server gives back for each id
  client_steps.py errors URL KEY LOCKFILE_TEXT_FILE REFUSED_SOURCE
Each prints one JSON object.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pydantic import SecretStr

from openhands.sdk import LLM, Agent
from openhands.sdk.plugin import PluginSource

from berth import Client, ServerError


def agent() -> Agent:
    return Agent(llm=LLM(model="gpt-4o", api_key=SecretStr("x"), usage_id="probe"), tools=[])


def sdk_view(client: Client, conversation_id: str) -> dict[str, Any]:
    updated, hooks = client.load_plugins(conversation_id, agent())
    return {
        "skills": [s.model_dump(mode="json") for s in updated.agent_context.skills],
        "hooks": hooks.model_dump(mode="json") if hooks else None,
    }


def main() -> None:
    step, url, key = sys.argv[1], sys.argv[2], sys.argv[3]
    client = Client(url, key)
    if step == "start":
        source, lockfile = sys.argv[4], sys.argv[5]
        one = client.start([PluginSource(source=source, ref="v1")], metadata={"user": "ada"})
        two = client.start(lockfile=lockfile)
        print(
            json.dumps(
                {
                    "ids": [one.id, two.id],
                    "sets": [one.plugin_set, two.plugin_set],
                    "locks": [one.lockfile, two.lockfile],
                    "sdk": [sdk_view(client, one.id), sdk_view(client, two.id)],
                }
            )
        )
    elif step == "restore":
        ids = sys.argv[4:]
        print(
            json.dumps(
                {
                    "listed": [c["id"] for c in client.list()],
                    "metadata": client.get(ids[0])["metadata"],
                    "sets": [client.plugin_set(i) for i in ids],
                    "locks": [client.lockfile(i) for i in ids],
                    "sdk": [sdk_view(client, i) for i in ids],
                }
            )
        )
    elif step == "errors":
        with open(sys.argv[4]) as f:
            bad_lock = f.read()
        refused = sys.argv[5]
        caught: dict[str, Any] = {}
        for name, call in (
            ("refused", lambda: client.start([{"source": refused}])),
            ("mismatch", lambda: client.start(lock_text=bad_lock)),
            ("missing", lambda: client.plugin_set("no-such-conversation")),
            ("wrong_key", lambda: Client(url, "wrong").list()),
        ):
            try:
                call()
                caught[name] = None
            except ServerError as e:
                caught[name] = {"status": e.status, "code": e.code, "message": e.message}
        # One per page: the client follows `next_cursor` to the end.
        ids = [c["id"] for c in client.list(page_size=1)]
        for conversation_id in ids:
            client.delete(conversation_id)
        caught["deleted"] = ids
        caught["left"] = client.list()
        print(json.dumps(caught))


if __name__ == "__main__":
    main()
