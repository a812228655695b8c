"""Layer 1, the validated config: stack config in, a MiniClusterSpec out, every problem named by key. Pure."""
