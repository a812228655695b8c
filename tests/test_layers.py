"""The package's shape (docs/architecture.md): layers import in one direction only, and no module of a
layer imports another that imports it back, even lazily inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "flux_minicluster"
LAYERS = ("config", "builders", "cluster", "resources", "provider")
"""Each may import those before it, never those after."""


def imports() -> dict[str, set[str]]:
    """Each module of the package (`config.spec`), and the package's modules it imports, anywhere."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(PACKAGE).with_suffix("").parts).removesuffix(".__init__")
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("flux_minicluster."):
                base = node.module.removeprefix("flux_minicluster.")
                names.add(base)
                names.update(f"{base}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                names.update(a.name.removeprefix("flux_minicluster.") for a in node.names if a.name.startswith("flux_"))
        found[module] = names
    return {module: {name for name in names if name in found and name != module} for module, names in found.items()}


def test_no_layer_imports_a_layer_above_it() -> None:
    upward = [
        f"{module} imports {name}"
        for module, names in imports().items()
        for name in names
        if module.split(".")[0] in LAYERS
        and name.split(".")[0] in LAYERS
        and LAYERS.index(name.split(".")[0]) > LAYERS.index(module.split(".")[0])
    ]
    assert upward == []


def test_no_two_modules_import_each_other() -> None:
    graph = {module: {name for name in names if not PACKAGE.joinpath(*name.split(".")).is_dir()}
             for module, names in imports().items()}  # fmt: skip
    circles = sorted(f"{a} <-> {b}" for a, names in graph.items() for b in names if a < b and a in graph.get(b, set()))
    assert circles == []
