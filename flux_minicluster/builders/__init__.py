"""Layer 2, pure builders: a MiniClusterSpec in, plain Kubernetes objects and the pods' files out. No Pulumi."""
