"""The real node's configuration files: containerd's, the pod network's (CNI), the kubelet's and the
cluster DNS's (CoreDNS). Pure: each is a function of the node's folder and the control plane's
addresses. Standard library only (tests/engines/node.py runs before the venv exists).

Every path a program would otherwise take as fixed is moved under the node's folder where the program
lets it; the few it does not (node_host.FIXED_PATHS) are removed when the node stops.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.engines.images import SANDBOX
from tests.engines.versions import NODE_BIN

NODE_NAME = "minicluster-node"
NODE_ADDRESS = "10.87.0.1"
"""The node's InternalIP, an address of the machine's loopback (the kubelet refuses 127/8, and this
kernel has no dummy links): where the API server reaches the kubelet and pods reach the DNS."""
POD_SUBNET = "10.88.0.0/16"
"""The pods' addresses, on the node's bridge (the test kubelet's pods use 10.244/16 in namespaces of
their own, never the machine's)."""
BRIDGE = "mcnode0"
REGISTRY_PORT = 5000
"""The node's registry (registry.py), at the node's address."""
CLUSTER_DOMAIN = "cluster.local"


def containerd_config(folder: Path) -> str:
    state = folder / "containerd"
    return f"""version = 3
root = '{state / "root"}'
state = '{state / "state"}'

[grpc]
  address = '{state / "containerd.sock"}'
[ttrpc]
  address = '{state / "containerd.sock.ttrpc"}'

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = '{SANDBOX}'
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = '{folder / "registries"}'
  [plugins.'io.containerd.cri.v1.runtime']
    # This machine's processes lack CAP_SYS_RESOURCE: runc could not lower the sandbox's oom_score_adj.
    restrict_oom_score_adj = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = '{NODE_BIN / "runc"}'
        SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['{NODE_BIN / "cni"}']
      conf_dir = '{folder / "cni"}'
  [plugins.'io.containerd.internal.v1.opt']
    path = '{state / "opt"}'
  [plugins.'io.containerd.nri.v1.nri']
    disable = true
"""


def registry_hosts(registry: str) -> str:
    """containerd's hosts.toml for `registry` (a folder of that name under config_path): the node's own
    registry first, for pulls and for resolving a tag to its digest."""
    server = "https://registry-1.docker.io" if registry == "docker.io" else f"https://{registry}"
    return f"""server = '{server}'

[host.'http://{NODE_ADDRESS}:{REGISTRY_PORT}']
  capabilities = ['pull', 'resolve']
"""


def cni_config(folder: Path) -> str:
    """One bridge with the node's pods on it, the machine its gateway: pods reach each other, the node's
    address (DNS, the kubelet) and the `kubernetes` Service's (node_host's relay). Nothing is masqueraded
    or routed further: this machine has neither iptables nor nftables, and nothing beyond it is reached."""
    bridge = {
        "type": "bridge", "bridge": BRIDGE, "isGateway": True, "ipMasq": False, "hairpinMode": True,
        "ipam": {"type": "host-local", "ranges": [[{"subnet": POD_SUBNET}]], "routes": [{"dst": "0.0.0.0/0"}],
                 "dataDir": str(folder / "cni-ipam")},
    }  # fmt: skip
    return json.dumps({"cniVersion": "1.0.0", "name": "minicluster-node", "plugins": [bridge]}, indent=1)


def kubelet_config(folder: Path, ca: Path, port: int) -> str:
    """The kubelet's KubeletConfiguration (JSON is YAML too)."""
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "address": NODE_ADDRESS, "port": port, "readOnlyPort": 0, "healthzPort": 0,
        # cgroup v1 here (kubelet 1.37 refuses it unless told), its cgroups made by the kubelet itself.
        "failCgroupV1": False, "cgroupDriver": "cgroupfs", "failSwapOn": False,
        "containerRuntimeEndpoint": f"unix://{folder / 'containerd' / 'containerd.sock'}",
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                           "x509": {"clientCAFile": str(ca)}},
        "authorization": {"mode": "Webhook"},
        "clusterDNS": [NODE_ADDRESS], "clusterDomain": CLUSTER_DOMAIN, "resolvConf": str(folder / "resolv.conf"),
        # The machine's disk is shared with everything else on it: evict only when it is really full.
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%",
                         "nodefs.inodesFree": "1%"},
        "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False, "podPidsLimit": -1, "staticPodPath": "",
        "shutdownGracePeriod": "0s", "logging": {"verbosity": 1},
    }  # fmt: skip
    return json.dumps(config, indent=1)


def corefile(kubeconfig: Path) -> str:
    """CoreDNS on the node's address: Services' and pods' names from the API server, nothing else
    (nothing beyond this machine answers). No cache: a name must resolve once its pod has an address, as
    the brokers look up each other's the moment they start."""
    return f""".:53 {{
    bind {NODE_ADDRESS}
    errors
    health {NODE_ADDRESS}:8080
    ready {NODE_ADDRESS}:8181
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig} test
        pods insecure
    }}
}}
"""
