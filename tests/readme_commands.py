"""The README's two set-up commands, as its text has them: the one that runs the main job (`pulumi up`
of the default stack) and the one that runs the tests. Read by the tests that keep them true."""

from __future__ import annotations

import re

from tests.harness import ROOT

README = (ROOT / "README.md").read_text()


def setup_commands() -> list[str]:
    section = README.split("## Set up", 1)[1].split("### Prerequisites", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", section, flags=re.DOTALL)
