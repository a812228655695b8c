"""Faults in real Flux for the tests of what the scripts do when a flux call fails: the MiniCluster's
fluxPath is faulty_flux.sh, in a claim the test writes fault files into (faulty_flux.sh says how).
Nothing is modelled: every call a fault file does not name is real flux."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

MOUNT = "/mnt/faults"
CLAIM = "faults"
SHIM = Path(__file__).with_name("faulty_flux.sh")


def config() -> dict[str, Any]:
    """The config overrides that put faulty_flux.sh in front of real Flux in every pod."""
    return {"fluxPath": f"{MOUNT}/flux", "volumes": {CLAIM: {"path": MOUNT, "claimName": CLAIM}}}


def install(claim: Path) -> None:
    """faulty_flux.sh into the claim (`Kubelet.claim(CLAIM)`), before the pods start."""
    claim.mkdir(parents=True, exist_ok=True)
    shutil.copy(SHIM, claim / "flux")
    (claim / "flux").chmod(0o755)


def inject(claim: Path, call: str, *outcomes: str) -> None:
    """The next calls of `call` ("jobs", "resource drain") end as `outcomes` say, in order."""
    (claim / call.replace(" ", "-")).write_text(" ".join(outcomes) + "\n")
