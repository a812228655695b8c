#!/usr/bin/env python3
"""Print every object `pulumi up` would create for a stack, as multi-document YAML.

    python scripts/render.py --stack dev            # reads Pulumi.dev.yaml
    python scripts/render.py --config PATH          # any stack file
    python scripts/render.py --stack dev | kubectl apply -f -

Uses the same builders as the Pulumi program. No keygen pod can run here, so the certificate is made
locally with pyzmq unless the stack provides one in plain text (an encrypted `secure:` value cannot be
read without Pulumi: a local one is made instead, with a note on stderr).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from components.builders.rendering import render  # noqa: E402
from components.config import stack_file  # noqa: E402
from components.config.spec import ConfigError  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help="stack name: reads Pulumi.<stack>.yaml in the project")
    source.add_argument("--config", type=Path, help="path to a stack config file")
    args = parser.parse_args(argv)
    path = args.config or stack_file.stack_path(args.stack)
    try:
        spec, encrypted = stack_file.load(path)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if encrypted:
        print("note: minicluster:curveCertificate is encrypted; rendering with a local keypair", file=sys.stderr)
    sys.stdout.write(render(spec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
