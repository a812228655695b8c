"""Objects that live as long as their process: the program's imports and declarations, a provider
process's cluster client. The cyclic garbage collector only walks them, at each full collection and once
more at the interpreter's exit, which the Pulumi CLI waits for at the end of every `pulumi up` (0.4 s of
each on the project's machine: docs/benchmarks/pulumi-up.md). Standard library only, so that an entry point can
use it before it imports anything else."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def lifelong() -> Iterator[None]:
    """The collector off while the block makes what the process keeps to its end; then all it tracks is
    frozen out of its passes (gc.freeze), and it is left on or off as it was. What comes later is
    collected as usual."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
