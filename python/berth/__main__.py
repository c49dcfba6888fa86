"""``python -m berth ...`` runs the berth binary, as ``berth ...`` does."""

from __future__ import annotations

import os
import sys

from berth import find_berth_bin


def _main() -> None:
    berth = os.fsdecode(find_berth_bin())
    if sys.platform == "win32":
        import subprocess

        sys.exit(subprocess.call([berth, *sys.argv[1:]]))
    os.execvp(berth, [berth, *sys.argv[1:]])


if __name__ == "__main__":
    _main()
