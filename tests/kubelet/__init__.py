"""A test kubelet: a MiniCluster's pods on this machine (pods.py), each in its own network namespace
(network.py), with its volumes and environment from the rendered objects (volumes.py) set up by a
container runtime in bash (container.sh), in an image with Flux (image.py: flux-core where it is
installed, else the project's stand-in). Needs root."""
