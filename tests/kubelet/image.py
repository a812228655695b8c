"""The image the test kubelet's containers run: this machine's own root filesystem, with Flux at
/opt/flux/bin as an image with Flux installed has it. That Flux is flux-core where this machine has it
installed (at MC_FLUX_PREFIX, else /opt/flux: the tests marked realflux run), else the project's
stand-in `flux` (tests/standins: its broker joins the pods into one instance over the pod network, and
its keygen writes a real key pair; nothing of Flux's jobs is modelled, and the realflux tests skip).

No registry serves flux-core and this project ships no build of it: a user's HPC system or image has it.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
from pathlib import Path

FLUX_PREFIX = Path(os.environ.get("MC_FLUX_PREFIX", "/opt/flux"))
"""Where flux-core 0.88 is installed on this machine, if it is (MC_FLUX_PREFIX points elsewhere)."""
FLUX = FLUX_PREFIX / "bin" / "flux"
"""Real flux-core's command, for the tests that run Flux's own instances on this machine."""
IMAGE_FLUX_BIN = "/opt/flux/bin"
"""Where the image has Flux's commands (on its PATH, and tests/kubelet/faulty_flux.sh's real flux)."""
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
IMAGE_PATH = f"{IMAGE_FLUX_BIN}:{SYSTEM_PATH}"
"""The containers' PATH."""
HOST_PATH = f"{FLUX.parent}:{SYSTEM_PATH}"
"""PATH for real Flux run on this machine outside the pods (Flux's own `flux start -s N`)."""
STANDINS = Path(__file__).resolve().parent.parent / "standins"
STANDIN_PYTHON = "/usr/bin/python3"
"""The stand-in's interpreter: the machine's own, which every pod user may run (a venv may live in a
home only root may enter)."""


def real() -> bool:
    """The image carries real flux-core (else the stand-in)."""
    return FLUX.exists()


def real_flux_missing() -> str | None:
    """Why the tests that need real Flux brokers cannot run here, if they cannot."""
    if not real():
        return (
            f"needs real Flux brokers: no flux-core at {FLUX_PREFIX} (MC_FLUX_PREFIX names another prefix); "
            "no registry serves it and this project ships no build of it"
        )
    if os.geteuid() != 0:
        return "the test kubelet needs root (network, mount and PID namespaces)"
    return None


def flux_mounts() -> list[str]:
    """container.sh's options that put the image's Flux at /opt/flux/bin."""
    source = FLUX.parent if real() else _standin_bin()
    return [] if source == Path(IMAGE_FLUX_BIN) else ["--mount", str(source), IMAGE_FLUX_BIN, "ro"]


def standin_flux(bin_dir: str = IMAGE_FLUX_BIN) -> str:
    """The image's `flux` (in `bin_dir`) where flux-core is not installed: the stand-in beside it
    (`standin-flux`, with flux_broker.py), in instance mode."""
    return f'#!/bin/sh\nexec env STANDIN_INSTANCE=1 {STANDIN_PYTHON} {bin_dir}/standin-flux "$@"\n'


@functools.cache
def _standin_bin() -> Path:
    """The stand-in `flux` as the image's, in instance mode (its broker and keygen: flux_broker.py), in a
    folder of this process's own that any pod user may read; removed when the process ends."""
    folder = Path(tempfile.mkdtemp(prefix="minicluster-image-flux-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    shutil.copy(STANDINS / "flux_broker.py", folder / "flux_broker.py")
    shutil.copy(STANDINS / "flux", folder / "standin-flux")
    (folder / "flux").write_text(standin_flux())
    for path in (folder, *folder.iterdir()):
        path.chmod(0o755)
    return folder
