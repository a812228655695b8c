"""The benchmarks' one way to print several runs of a measure: min | median | max, as table cells."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def spread(times: Sequence[float], digits: int) -> str:
    """`min | median | max` of `times`, each with `digits` decimals."""
    return " | ".join(f"{value:.{digits}f}" for value in (min(times), statistics.median(times), max(times)))
