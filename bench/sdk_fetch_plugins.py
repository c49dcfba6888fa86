#!/usr/bin/env python3
"""The reference side of the cold-fetch benchmark: the OpenHands SDK's `Plugin.fetch` over
git sources into an empty cache folder, one after the other, as the SDK fetches a
conversation's plugins. Usage: sdk_fetch_plugins.py CACHE_DIR SOURCE... Prints the seconds
the fetches took inside the process (the caller times the whole process)."""

import json
import os
import sys
import tempfile
import time

os.environ.setdefault("OH_PERSISTENCE_DIR", tempfile.mkdtemp(prefix="oh-bench-"))
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LOG_LEVEL", "ERROR")

from pathlib import Path  # noqa: E402

from openhands.sdk.plugin import Plugin  # noqa: E402

cache = Path(sys.argv[1])
start = time.perf_counter()
for source in sys.argv[2:]:
    Plugin.fetch(source, cache_dir=cache)
print(json.dumps({"fetch_seconds": time.perf_counter() - start}))
