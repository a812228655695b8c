"""The MiniCluster component package's plugin, as the engine starts it (`python package/ <engine>`)."""

from flux_minicluster.lifelong import lifelong

with lifelong():  # the plugin's imports live until its process ends
    from flux_minicluster.provider.server import main

main()
