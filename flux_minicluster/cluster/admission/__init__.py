"""The admission check: would the API server take the MiniCluster, and does it fit the cluster as it
is, before anything is created (docs/admission.md)?

check.py runs it: every object and pod as a dry run (dry_run.py), then the room, judged by fit.py
(namespace_limits.py and placement.py over quantities.py) from what shape.py describes.
"""

from flux_minicluster.cluster.admission.check import PAGE, Verdict, broker_pod, check, read, shape

__all__ = ["PAGE", "Verdict", "broker_pod", "check", "read", "shape"]
