#!/usr/bin/env python3
"""The reference side of the plugin-set benchmark: the OpenHands SDK's own
`load_plugins` over local plugin folders, as a fresh process, the way a CLI
would. Prints the number of merged skills and the seconds `load_plugins` itself took (the
caller times the whole process, start-up included)."""

import os
import sys
import tempfile

os.environ.setdefault("OH_PERSISTENCE_DIR", tempfile.mkdtemp(prefix="oh-bench-"))
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LOG_LEVEL", "ERROR")

from openhands.sdk import LLM, Agent  # noqa: E402
from openhands.sdk.plugin import PluginSource, load_plugins  # noqa: E402

import json  # noqa: E402
import time  # noqa: E402

start = time.perf_counter()
agent = Agent(llm=LLM(model="bench/none", usage_id="bench"), tools=[])
specs = [PluginSource(source=d) for d in sys.argv[1:]]
new_agent, hooks = load_plugins(specs, agent, max_skills=100_000, get_secret=lambda k: None)
elapsed = time.perf_counter() - start
skills = len(new_agent.agent_context.skills if new_agent.agent_context else [])
print(json.dumps({"skills": skills, "load_seconds": elapsed}))
