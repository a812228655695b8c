"""The Python the pods run (pod_scripts/*.py, and config/sizing.py, which rank 0 imports as is)
runs on the image's Python, which may be older than the project's: its syntax must be Python 3.6's,
and no annotation that Python evaluates may use what 3.6 lacks (`dict[...]`, `X | None`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from flux_minicluster.builders import files
from flux_minicluster.config import sizing

POD_PYTHON = [*sorted(files.POD_SCRIPTS.glob("*.py")),
              Path(sizing.__file__)]  # fmt: skip


def evaluated_annotations(tree: ast.Module) -> list[ast.expr]:
    """Annotations Python evaluates when the module runs: a function's, and those of module and class
    bodies (a variable annotated inside a function is never evaluated)."""
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            arguments += [arg for arg in (node.args.vararg, node.args.kwarg) if arg is not None]
            found += [arg.annotation for arg in arguments if arg.annotation is not None]
            found += [node.returns] if node.returns is not None else []
        elif isinstance(node, ast.Module | ast.ClassDef):
            found += [item.annotation for item in node.body if isinstance(item, ast.AnnAssign)]
    return found


@pytest.mark.parametrize("path", POD_PYTHON, ids=[path.name for path in POD_PYTHON])
def test_the_pods_python_is_python_3_6s(path: Path) -> None:
    tree = ast.parse(path.read_text(), feature_version=(3, 6))
    too_new = [ast.unparse(annotation) for annotation in evaluated_annotations(tree)
               if isinstance(annotation, ast.Subscript | ast.BinOp)]  # fmt: skip
    assert too_new == [], f"{path.name}: quote these annotations: {too_new}"


def test_every_pod_module_is_checked() -> None:
    assert {path.name for path in POD_PYTHON} >= {"readings.py", "metrics.py", "autoscaler.py", "autoscaling.py",
                                                  "cluster_api.py", "keeper.py", "restart_rc1.py",
                                                  "sizing.py"}  # fmt: skip
