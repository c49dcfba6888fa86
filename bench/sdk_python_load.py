#!/usr/bin/env python3
"""The Python rows, inside one already running Python with the OpenHands SDK:
`berth.openhands.load_plugins(lock, agent)` with the plugin set built in-process by the
extension `berth._native` (BERTH_NATIVE names the build), the same with the berth binary
run instead, and the SDK's own `load_plugins(specs, agent)` over the same folders,
interleaved. Prints the seconds of every call of each, the in-process `plugin_set` call
alone, and the counts of skills, MCP servers and hook matchers of each.

Usage: sdk_python_load.py RUNS LOCKFILE FOLDER...
"""

import os
import sys
import tempfile

os.environ.setdefault("OH_PERSISTENCE_DIR", tempfile.mkdtemp(prefix="oh-bench-"))
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LOG_LEVEL", "ERROR")

import json  # noqa: E402
import logging  # noqa: E402
import time  # noqa: E402

from openhands.sdk import LLM, Agent  # noqa: E402
from openhands.sdk.plugin import PluginSource  # noqa: E402
from openhands.sdk.plugin import load_plugins as sdk_load_plugins  # noqa: E402

import berth.openhands  # noqa: E402
from berth.openhands import load_plugins, plugin_set  # noqa: E402

logging.disable(logging.WARNING)
runs, lockfile, folders = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
agent = Agent(llm=LLM(model="bench/none", usage_id="bench"), tools=[])
specs = [PluginSource(source=d) for d in folders]
limit = 100_000


native = berth.openhands.native


def ours():
    return load_plugins(lockfile, agent, max_skills=limit)


def ours_binary():
    berth.openhands.native = lambda: None
    try:
        return load_plugins(lockfile, agent, max_skills=limit)
    finally:
        berth.openhands.native = native


def theirs():
    return sdk_load_plugins(specs, agent, max_skills=limit)


def set_only():
    return plugin_set(lockfile)


if native() is None:
    sys.exit("the extension berth._native does not load here: set BERTH_NATIVE to its build")
runners = {"berth": ours, "berth_binary": ours_binary, "sdk": theirs, "plugin_set": set_only}
loaded = [f() for f in (ours, ours_binary, theirs)]
counts = [len(agent.agent_context.skills) for agent, _ in loaded]
servers = [len(agent.mcp_config) for agent, _ in loaded]
hooks = [
    sum(len(getattr(h, event)) for event in type(h).model_fields) if h else 0 for _, h in loaded
]
times = {name: [] for name in runners}
for _ in range(runs):
    for name, f in runners.items():
        start = time.perf_counter()
        f()
        times[name].append(time.perf_counter() - start)
print(json.dumps({"skills": counts, "servers": servers, "hooks": hooks, **times}))
