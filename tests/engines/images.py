"""The real node's images, built on this machine without a registry: a Debian root filesystem
(mmdebstrap, from the machine's own Debian sources) with Flux at /opt/flux/bin, saved as an OCI image
layout under every name the project's stacks and examples give, for containerd to import. So the
stack files run unchanged: the kubelet finds each image already there, and where it pulls anyway (a
`:latest` tag's pull policy is Always) the node's registry (registry.py) answers for the image's own
registry with the same image.

The Flux in it is flux-core where this machine has it installed (MC_FLUX_PREFIX, else /opt/flux: copied
to the same prefix, with the Debian packages its libraries and Python modules need), else the project's
stand-in (tests/standins, in instance mode, as tests/kubelet/image.py puts it in the test kubelet's
image). The sandbox image holds only the node's pause program (tests/engines/pause).

Standard library only: tests/engines/node.py runs it before the venv exists.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

from flux_minicluster.config import paths
from tests.engines.versions import ENGINES, NODE_BIN, ROOT
from tests.kubelet.image import FLUX_PREFIX, IMAGE_FLUX_BIN, IMAGE_PATH, STANDINS, SYSTEM_PATH, real, standin_flux

SUITE = "bookworm"
BASE_PACKAGES = ("python3",)
"""The pods' scripts need bash, coreutils, util-linux (every Debian root has them) and Python 3."""
FLUX_PYTHON_PACKAGES = ("python3-cffi-backend", "python3-yaml", "python3-ply")
"""What flux-core's Python modules import beside the standard library."""
APP_WITHOUT_FLUX = "minicluster.test/app-without-flux:1"
"""An application image with no Flux of its own (bash and Python only), for a MiniCluster that takes
its Flux from a flux view."""
VIEW = "/opt/views/._view/minicluster0"
VIEW_FLUX_BIN = f"{paths.VIEW_SOFTWARE}/flux-standin/bin"
SANDBOX = "minicluster.test/pause:1"
"""The sandbox image's name, as the node's containerd configuration pins it (tests/engines/node.py)."""
CACHE = ENGINES / "images"
LAYER = "application/vnd.oci.image.layer.v1.tar"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
NAME_ANNOTATION = "io.containerd.image.name"
IMAGE_LINE = re.compile(r"^\s*(?:-\s*)?(?:minicluster:)?image:\s*['\"]?([^'\"\s#]+)", re.MULTILINE)


def image_names() -> list[str]:
    """Every image the project's stacks and examples name (read from their files, never listed again),
    and the flux view's default image."""
    files = [*ROOT.glob("Pulumi.*.yaml"), *ROOT.glob("examples/*/Pulumi*.yaml")]
    names = {name for path in files for name in IMAGE_LINE.findall(path.read_text())}
    extras = (ROOT / "flux_minicluster" / "config" / "flux_extras.py").read_text()
    names.update(re.findall(r'^DEFAULT_FLUX_VIEW_IMAGE = "([^"]+)"', extras, re.MULTILINE))
    return sorted(map(normalized, names))


def normalized(name: str) -> str:
    """A reference as containerd's CRI stores it (busybox:1.36 is docker.io/library/busybox:1.36): under
    another spelling the kubelet finds the image but cannot create its containers."""
    first, _, rest = name.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return name
    return f"docker.io/{name}" if rest else f"docker.io/library/{name}"


def flux_packages() -> list[str]:
    """The Debian packages that hold what flux-core's programs and modules link (ldd, then dpkg -S)."""
    elves = [str(path) for path in FLUX_PREFIX.rglob("*") if _elf(path)]
    linked = subprocess.run(["ldd", *elves], capture_output=True, text=True).stdout
    libraries = {line.split("=>")[1].split()[0] for line in linked.splitlines() if "=> /" in line}
    packages = set(FLUX_PYTHON_PACKAGES)
    for library in sorted(libraries - {lib for lib in libraries if lib.startswith(str(FLUX_PREFIX))}):
        for candidate in (library, "/usr" + library, library.removeprefix("/usr")):  # merged /usr
            owner = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
            if owner.returncode == 0:
                packages.add(owner.stdout.split(":", 1)[0])
                break
    return sorted(packages)


def _elf(path: Path) -> bool:
    if path.is_symlink() or not path.is_file():
        return False
    with path.open("rb") as opened:
        return opened.read(4) == b"\x7fELF"


def debian_root(packages: list[str]) -> Path:
    """A Debian root filesystem with `packages`, as a tar; cached by its package list."""
    key = hashlib.sha256(" ".join([SUITE, *packages]).encode()).hexdigest()[:16]
    path = CACHE / f"debian-{SUITE}-{key}.tar"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    sources = next(
        p for p in (Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list")) if p.exists()
    )
    print(f"building the image's Debian root ({SUITE}, {', '.join(packages)}): minutes, once", flush=True)
    staged = path.with_name(f"{path.stem}.partial.tar")  # mmdebstrap picks its output format by the suffix
    subprocess.run(
        [
            "mmdebstrap",
            "--quiet",
            "--variant=minbase",
            f"--include={','.join(packages)}",
            SUITE,
            str(staged),
            str(sources),
        ],
        check=True,
    )
    staged.replace(path)
    return path


def flux_layer() -> bytes:
    """A layer with Flux at /opt/flux/bin: flux-core at its own prefix (its paths are compiled in), or
    the stand-in in instance mode."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        if real():
            tar.add(FLUX_PREFIX, arcname=str(FLUX_PREFIX).lstrip("/"))
            if Path(IMAGE_FLUX_BIN).parent != FLUX_PREFIX:
                _symlink(tar, IMAGE_FLUX_BIN, str(FLUX_PREFIX / "bin"))
        else:
            _standin(tar, IMAGE_FLUX_BIN)
    return layer.getvalue()


def _standin(tar: tarfile.TarFile, bin_dir: str) -> None:
    """The stand-in `flux` in `bin_dir`, in instance mode, with its broker beside it."""
    _directory(tar, bin_dir)
    tar.add(STANDINS / "flux_broker.py", arcname=f"{bin_dir.lstrip('/')}/flux_broker.py")
    tar.add(STANDINS / "flux", arcname=f"{bin_dir.lstrip('/')}/standin-flux")
    _file(tar, f"{bin_dir}/flux", standin_flux(bin_dir).encode(), 0o755)


def view_layer() -> bytes:
    """A flux view, laid out as the flux-operator's flux-view images hold one: Flux installed under
    /opt/software, and a view under /opt/views/._view/<hash> whose files link there (flux_view.py's
    init container copies both). Its Flux is the stand-in, in instance mode, even where flux-core is
    installed: flux-core's paths are compiled in at its own prefix, so a build of it cannot move into
    a view, where a view image's own build was made for one."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        _standin(tar, VIEW_FLUX_BIN)
        _symlink(tar, f"{VIEW}/bin/flux", f"{VIEW_FLUX_BIN}/flux")
    return layer.getvalue()


def sandbox_layer() -> bytes:
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        tar.add(NODE_BIN / "pause", arcname="pause")
    return layer.getvalue()


def _directory(tar: tarfile.TarFile, path: str) -> None:
    parts = path.strip("/").split("/")
    for depth in range(1, len(parts) + 1):
        info = tarfile.TarInfo("/".join(parts[:depth]))
        info.type, info.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(info)


def _symlink(tar: tarfile.TarFile, path: str, target: str) -> None:
    _directory(tar, str(Path(path).parent))
    info = tarfile.TarInfo(path.lstrip("/"))
    info.type, info.linkname = tarfile.SYMTYPE, target
    tar.addfile(info)


def _file(tar: tarfile.TarFile, path: str, content: bytes, mode: int) -> None:
    info = tarfile.TarInfo(path.lstrip("/"))
    info.size, info.mode = len(content), mode
    tar.addfile(info, io.BytesIO(content))


def tar_stream(folder: Path, into: int) -> None:
    """`folder` as a tar stream into the file descriptor `into`, which it closes at the end. A reader
    that stops early ends the stream (BrokenPipeError), and says itself why it stopped."""
    with contextlib.suppress(BrokenPipeError), open(into, "wb") as out, tarfile.open(fileobj=out, mode="w|") as tar:
        tar.add(folder, arcname=".")


class OciLayout:
    """An OCI image layout in a folder: images of uncompressed layers, each under one or more names (the
    index's io.containerd.image.name annotations, which `ctr images import` names them by). The node's
    registry (registry.py) serves it as well."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.manifests: list[dict[str, object]] = []
        (folder / "blobs" / "sha256").mkdir(parents=True)

    def blob(self, content: bytes, media_type: str) -> dict[str, object]:
        digest = hashlib.sha256(content).hexdigest()
        (self.folder / "blobs" / "sha256" / digest).write_bytes(content)
        return {"mediaType": media_type, "digest": f"sha256:{digest}", "size": len(content)}

    def file_blob(self, path: Path, media_type: str) -> dict[str, object]:
        """A blob of a file's content, linked rather than copied (the Debian root is hundreds of MiB)."""
        digest = hashlib.sha256()
        with path.open("rb") as opened:
            for chunk in iter(lambda: opened.read(1 << 20), b""):
                digest.update(chunk)
        target = self.folder / "blobs" / "sha256" / digest.hexdigest()
        try:
            os.link(path, target)
        except OSError:  # another file system
            shutil.copyfile(path, target)
        return {"mediaType": media_type, "digest": f"sha256:{digest.hexdigest()}", "size": path.stat().st_size}

    def image(self, names: list[str], layers: list[dict[str, object]], config: dict[str, object]) -> None:
        whole = {
            "architecture": "amd64", "os": "linux", "config": config,
            "rootfs": {"type": "layers", "diff_ids": [layer["digest"] for layer in layers]},
        }  # fmt: skip
        for name in names:
            # An image of its own for each name (its config names it), sharing the layers: containerd
            # keeps one image per config digest and reports a container's image by that image's first
            # name, so names that shared one would show another stack's image in the pods' status.
            labelled = {**whole, "config": {**config, "Labels": {"org.opencontainers.image.ref.name": name}}}
            config_blob = self.blob(json.dumps(labelled).encode(), "application/vnd.oci.image.config.v1+json")
            manifest = {"schemaVersion": 2, "mediaType": MANIFEST, "config": config_blob, "layers": layers}
            described = self.blob(json.dumps(manifest).encode(), MANIFEST)
            self.manifests.append({**described, "annotations": {NAME_ANNOTATION: name}})

    def index(self) -> None:
        """The layout's index of every image and name, written last."""
        (self.folder / "oci-layout").write_text(json.dumps({"imageLayoutVersion": "1.0.0"}))
        index = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": self.manifests,
        }
        (self.folder / "index.json").write_text(json.dumps(index))


def build(folder: Path) -> list[str]:
    """The node's images as an OCI layout in `folder` (made anew); returns the names it holds."""
    packages = sorted({*BASE_PACKAGES, *(flux_packages() if real() else [])})
    root = debian_root(packages)
    names = image_names()
    shutil.rmtree(folder, ignore_errors=True)
    layout = OciLayout(folder)
    base = layout.file_blob(root, LAYER)
    flux, view = layout.blob(flux_layer(), LAYER), layout.blob(view_layer(), LAYER)
    environment: dict[str, object] = {"Env": [f"PATH={IMAGE_PATH}"], "Cmd": ["/bin/bash"], "WorkingDir": "/"}
    layout.image(names, [base, flux, view], environment)  # any of them may serve as a flux view's image
    layout.image([APP_WITHOUT_FLUX], [base], {**environment, "Env": [f"PATH={SYSTEM_PATH}"]})
    layout.image([SANDBOX], [layout.blob(sandbox_layer(), LAYER)], {"Entrypoint": ["/pause"]})
    layout.index()
    return [*names, APP_WITHOUT_FLUX, SANDBOX]
