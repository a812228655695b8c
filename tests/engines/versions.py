"""The real engines' versions and where they are built: the one place install.sh, pulumi.sh, the
control plane and the tests take them from. Standard library only: it runs before the venv exists.

`python3 tests/engines/versions.py` prints them as shell assignments, for the install scripts to eval.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINES = Path(os.environ.get("MC_ENGINES", "/opt/minicluster-engines"))
"""Where the engines are built (install.sh's PREFIX)."""

KUBERNETES = "1.37.2"
"""kube-apiserver, kube-controller-manager and kube-scheduler (etcd: the release Kubernetes requires)."""

PULUMI = "3.274.1"
"""The Pulumi CLI (github.com/pulumi/pulumi/pkg/v3): at least the SDK's version in constraints.txt."""

PULUMI_PYTHON_HOST = "3.79.0"
"""The Python language host, pulumi-language-python. Its own module (sdk/python/cmd/...) is not served
by the Go module proxy at any version; until 3.79.0 it was a package of github.com/pulumi/pulumi/sdk/v3,
which is. It only starts pulumi-language-python-exec, which comes from the SDK of PULUMI."""

PULUMI_NODEJS_HOST = "3.68.0"
"""The Node.js language host, pulumi-language-nodejs, for examples/typescript: like the Python host, its
own module is not served; its last release as a package of github.com/pulumi/pulumi/sdk/v3 is. It has
no GeneratePackage, so `pulumi package add` cannot make the SDK with it (tests/engines/sdkgen does)."""

PULUMI_NODE_SDK = "3.248.0"
"""@pulumi/pulumi for examples/typescript: the last release that declares Node.js 20, this machine's."""

PULUMI_GO_HOST = "3.66.0"
"""The Go language host, pulumi-language-go, for examples/go: its last release inside sdk/v3."""

PULUMI_YAML = "1.25.0"
"""The Pulumi YAML language host, pulumi-language-yaml (github.com/pulumi/pulumi-yaml): it runs the
component package's YAML example (examples/yaml)."""

RUNC = "1.5.2"
"""The real node (tests/engines/node.sh): runc, built with cgo and seccomp (libseccomp from Debian)."""

CONTAINERD = "2.4.2"
"""containerd with its CRI plugin, ctr and containerd-shim-runc-v2."""

CNI_PLUGINS = "1.10.0"
"""The CNI plugins the node's pod network uses: bridge, host-local, loopback, portmap."""

COREDNS = "1.15.0"
"""The cluster's DNS (Services and pods), linked with only the plugins it uses (tests/engines/coredns)."""


def _pinned(package: str) -> str:
    pin = re.search(rf"^{package}==(\S+)$", (ROOT / "constraints.txt").read_text(), re.MULTILINE)
    if pin is None:
        raise SystemExit(f"constraints.txt pins no {package}")
    return pin.group(1)


PULUMI_KUBERNETES = _pinned("pulumi_kubernetes")
"""The Kubernetes resource plugin: the release of the Python SDK the project pins, as Pulumi requires."""

PROVIDER_MODULES = {"4.25.0": "v4.0.0-20260115033456-f47bc2d6f199"}
"""github.com/pulumi/pulumi-kubernetes/provider/v4 has no versions of its own, only the commits of the
releases (their tags name the repository, not the provider's folder); the proxy serves this one, the
commit of v4.25.0."""

KUBERNETES_BIN = ENGINES / f"kubernetes-{KUBERNETES}" / "bin"
PULUMI_BIN = ENGINES / f"pulumi-{PULUMI}" / "bin"
PROVIDER_BIN = ENGINES / f"pulumi-kubernetes-{PULUMI_KUBERNETES}" / "bin"
SDKGEN_BIN = ENGINES / "sdkgen" / "bin"
"""Pulumi's TypeScript SDK generator on the component package's schema (tests/engines/sdkgen)."""
STREAMING_BIN = ENGINES / "kubelet-streaming" / "bin"
"""The test kubelet's logs and exec server (tests/kubelet/streaming, built by install.sh on every run)."""
NODE_BIN = ENGINES / f"node-{KUBERNETES}-{CONTAINERD}-{RUNC}-{CNI_PLUGINS}-{COREDNS}" / "bin"
"""The real node's programs: kubelet, containerd (+ ctr, shim), runc, CoreDNS; its CNI plugins in cni/."""
INSTALL = "tests/engines/install.sh"

GOFLAGS = "-mod=mod -trimpath -gcflags=all=-dwarf=false"
"""Every Go build of the engines. Without DWARF (here and LDFLAGS): nobody runs a debugger on them, a
panic's stack trace needs none, and it is a sixth of a cold build's CPU time (compiles and links)."""
LDFLAGS = "-s -w"
"""Every engine's link flags, before its own -X stamps: no symbol table, no DWARF (a link of
kube-apiserver: 3.8 s instead of 11)."""

KUBERNETES_STAMP = " ".join(
    f"-X {package}.gitVersion=v{KUBERNETES} -X {package}.gitMajor={KUBERNETES.split('.')[0]} "
    f"-X {package}.gitMinor={KUBERNETES.split('.')[1]} -X {package}.gitTreeState=clean"
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
)
"""The link flags that stamp Kubernetes' version as its own release build does (hack/lib/version.sh),
in both packages that report it, for the control plane's commands and the kubelet: unstamped, the API
server says v0.0.0-master+$Format:%H$, which kubectl cannot parse and which no cluster has, so that
clients that read it (the Kubernetes provider) see a false one."""


GO_TEST_BUILD = {"GOFLAGS": GOFLAGS, "CGO_ENABLED": "0"}
"""The environment of the tests' own Go builds (examples/go, by `go build` and by the Go language host):
the engines' flags and no cgo, so that they reuse what the engines' build compiled (the standard
library at least). Nothing the tests check depends on DWARF or cgo. On the caches of a cold engines'
build, the example's first build took 39 CPU seconds this way; on empty ones with Go's defaults, 136."""


def not_built(engine: str, wanted: list[Path]) -> str | None:
    """Why `engine` cannot run here, if any of its `wanted` files is missing: the command that builds it."""
    absent = [str(path) for path in wanted if not path.exists()]
    return f"{engine} is not built ({', '.join(absent)}): run {INSTALL}" if absent else None


def shell() -> str:
    values = {
        "KUBERNETES": KUBERNETES, "PULUMI": PULUMI, "PULUMI_PYTHON_HOST": PULUMI_PYTHON_HOST,
        "PULUMI_YAML": PULUMI_YAML, "PULUMI_NODEJS_HOST": PULUMI_NODEJS_HOST, "PULUMI_GO_HOST": PULUMI_GO_HOST,
        "RUNC": RUNC, "CONTAINERD": CONTAINERD, "CNI_PLUGINS": CNI_PLUGINS, "COREDNS": COREDNS,
        "NODE_BIN": str(NODE_BIN), "ENGINES_GOFLAGS": GOFLAGS, "ENGINES_LDFLAGS": LDFLAGS,
        "KUBERNETES_STAMP": KUBERNETES_STAMP,
        "PULUMI_KUBERNETES": PULUMI_KUBERNETES, "PROVIDER_MODULE": PROVIDER_MODULES.get(PULUMI_KUBERNETES, ""),
    }  # fmt: skip
    return "".join(f"{key}={shlex.quote(value)}\n" for key, value in values.items())


if __name__ == "__main__":
    print(shell(), end="")
