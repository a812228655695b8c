"""A test kubelet: a MiniCluster's pods on this machine with real Flux (pods.py), each in its own
network namespace (network.py), with its volumes and environment from the rendered objects
(volumes.py) set up by a container runtime in bash (container.sh). Needs root and flux-core at
/opt/flux (../shared/flux/install.sh)."""
