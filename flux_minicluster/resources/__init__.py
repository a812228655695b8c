"""Layer 3, the thin Pulumi layer: the builders' objects wired into resources and Outputs."""
