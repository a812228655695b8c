#!/usr/bin/env python3
"""Print every object `pulumi up` would create for a stack, as multi-document YAML.

    venv/bin/python scripts/render.py --stack dev            # reads Pulumi.dev.yaml
    venv/bin/python scripts/render.py --config PATH          # any stack file
    venv/bin/python scripts/render.py --stack dev --show-secrets | kubectl apply -f -

Uses the same builders as the Pulumi program. No keygen pod can run here, so the certificate is made
locally with pyzmq (a stack's own, an encrypted `secure:` value, cannot be read without Pulumi: a note
on stderr says so; one in plain text is refused, as `pulumi up` refuses it). Every Secret's values (the
certificate, the config values the stack encrypts) are printed as placeholders unless --show-secrets;
encrypted values stay placeholders even then.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from flux_minicluster.builders import object_limits  # noqa: E402
from flux_minicluster.builders.rendering import render  # noqa: E402
from flux_minicluster.config import stack_file  # noqa: E402
from flux_minicluster.config.loader import ConfigError  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help="stack name: reads Pulumi.<stack>.yaml in the project")
    source.add_argument("--config", type=Path, help="path to a stack config file")
    parser.add_argument(
        "--show-secrets", action="store_true", help="print the Secrets' values (kubectl apply needs them)"
    )
    args = parser.parse_args(argv)
    path = args.config or stack_file.stack_path(args.stack)
    try:
        spec, encrypted = stack_file.load(path)
        object_limits.check(spec)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if stack_file.LEFT_OUT in encrypted:
        print("note: minicluster:curveCertificate is encrypted; rendering with a local keypair", file=sys.stderr)
    if not args.show_secrets:
        print("note: the Secrets' values are shown as placeholders; --show-secrets prints them", file=sys.stderr)
    elif unreadable := [key for key in encrypted if key != stack_file.LEFT_OUT]:
        print(
            f"note: {', '.join(unreadable)} encrypted: shown as placeholders (only pulumi can read them)",
            file=sys.stderr,
        )
    sys.stdout.write(render(spec, show_secrets=args.show_secrets))
    return 0


if __name__ == "__main__":
    sys.exit(main())
