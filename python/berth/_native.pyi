"""The extension ``berth._native`` (python-ext/src/lib.rs): berth's runtime inside Python."""

from berth.types import PluginSet

#: The policy file that, next to a lock, leaves the set to the binary (``berth-policy.toml``).
POLICY_FILE: str
__version__: str

def plugin_set(lockfile: str, store: str | None = None) -> PluginSet | None:
    """``berth plugins --lockfile LOCKFILE show --json`` with no skill limit, as Python
    objects; ``None`` when the binary must build it (a policy file next to the lock, or a
    plugin never scanned clean). Raises ``RuntimeError`` with the binary's message."""
