"""Each config field's meaning: the docstring right under it in its model's class body. The README's
configuration reference (scripts/config_reference.py) and the component package's schema are made
from them. They are read from the source when asked, not by pydantic's use_attribute_docstrings, which
reads every model class's source as its module loads: 0.04 s of every `pulumi up` (docs/benchmarks/pulumi-up.md).
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys

from pydantic import BaseModel


def field_doc(model: type[BaseModel], name: str) -> str:
    """The docstring of the field `name` (its Python name) of `model` or of the model it inherits it
    from, on one line; empty if it has none."""
    return " ".join(_docs(model).get(name, "").split())


@functools.cache
def _docs(model: type[BaseModel]) -> dict[str, str]:
    found: dict[str, str] = {}
    for cls in reversed(model.__mro__):  # a subclass's own docstring wins
        if cls.__module__.startswith("flux_minicluster."):
            found.update(_class_docs(cls))
    return found


def _class_docs(cls: type) -> dict[str, str]:
    tree = _module_tree(cls.__module__)
    node = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == cls.__name__)
    return {
        field.target.id: doc.value.value
        for field, doc in zip(node.body, node.body[1:], strict=False)
        if isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
        and isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str)
    }  # fmt: skip


@functools.cache
def _module_tree(module: str) -> ast.Module:
    return ast.parse(inspect.getsource(sys.modules[module]))
