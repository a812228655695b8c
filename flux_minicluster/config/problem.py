"""One problem found in a config: the rules of consistency.py and production.py both yield it."""

from __future__ import annotations

from typing import NamedTuple


class Problem(NamedTuple):
    key: str
    """The config key at fault, as users write it (stateVolume.hostPath)."""
    message: str
    """The whole line, naming its keys (minicluster:...)."""
