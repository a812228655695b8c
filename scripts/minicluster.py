#!/usr/bin/env python3
"""The ops tool, for a checkout without `pip install .` (which installs it as `minicluster`):
see components/ops/cli.py, or run it with --help."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from components.ops.cli import main

if __name__ == "__main__":
    sys.exit(main())
