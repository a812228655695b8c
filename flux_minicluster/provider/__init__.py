"""The component package: the MiniCluster for programs in every Pulumi language (schema.py, made from
the config model; component.py, its Construct; server.py, the plugin the engine starts)."""
