"""The Pulumi project's name, which is also its config namespace (`minicluster:size`): a module of its
own, so that the provider processes, which need only this, do not import the config models."""

NAMESPACE = "minicluster"
"""The Pulumi config namespace (the project name in Pulumi.yaml)."""
