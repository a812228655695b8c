"""Work counted in steps, not seconds: the lines the project's own code runs (CPython's trace 'line'
events in frames of `flux_minicluster/`, loop iterations included, in every thread). The same count
for the same input, however loaded the machine is: what a test asserts about how the work grows,
while the benchmarks keep the seconds.

What it does not see: work inside one line in C (a `str.join` of a long list, pydantic's Rust core).
A test that uses it pairs it with the output's size, which such work would make grow.
"""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import flux_minicluster

PACKAGE = str(Path(flux_minicluster.__file__).resolve().parent)


def count(work: Callable[[], object]) -> int:
    """The lines of the package's code that `work` runs, in this thread and in any it starts."""
    lines = itertools.count()  # next() on it is one step under the GIL, whichever thread calls it
    ours: dict[str, bool] = {}  # a code object's file -> whether it is the package's

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            next(lines)
        return local

    def global_(frame: FrameType, event: str, arg: Any) -> Any:
        filename = frame.f_code.co_filename
        mine = ours.get(filename)
        if mine is None:
            mine = ours[filename] = str(Path(filename).resolve()).startswith(PACKAGE)
        return local if mine else None  # another module's frame: not traced line by line

    previous, previous_threads = sys.gettrace(), threading.gettrace()
    threading.settrace(global_)
    sys.settrace(global_)
    try:
        work()
    finally:
        sys.settrace(previous)
        threading.settrace(previous_threads)
    return next(lines)  # the count so far
