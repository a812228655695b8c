"""The ops tool (`minicluster list|status|logs|wait|exec`): a command line over flux_minicluster/cluster."""
