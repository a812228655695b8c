"""The package's name before it was installable (flux_minicluster), for state written under it.

Pulumi keeps a dynamic resource's provider in the stack's state, pickled by reference to its module
(`components.resources.keygen.KeygenPodProvider`), and unpickles that copy to read, diff or delete the
resource. So every `components.<module>` must go on resolving to the very module of flux_minicluster
that holds the provider now, or `pulumi destroy` of an older stack fails. This folder is not part of
the installed package: it serves only the Pulumi program run from this project, as the state needs.

Remove when: every stack deployed before the rename has been destroyed or has run `pulumi up` once
since (that writes the providers' new modules into its state). Check with
`pulumi stack export | grep -c '"components\\.'` (0: nothing needs this folder).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType

NEW_NAME = "flux_minicluster"
MOVED = {"components.keygen": f"{NEW_NAME}.resources.keygen"}
"""Modules that moved before the rename (state from before the layered layout, 2026-11-22)."""


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`components.X` is the module flux_minicluster.X itself (the same classes, not a copy)."""

    def __init__(self) -> None:
        self.own_specs: dict[str, ModuleSpec | None] = {}

    def find_spec(self, name: str, path: object = None, target: ModuleType | None = None) -> ModuleSpec | None:
        if not name.startswith(f"{__name__}."):
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        module = importlib.import_module(MOVED.get(spec.name) or NEW_NAME + spec.name.removeprefix(__name__))
        self.own_specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Already executed under its own name; the import system gave it the alias's spec, which is not
        its own (importlib.resources reads a package's spec): it gets its own back."""
        for alias, own in list(self.own_specs.items()):
            if module.__spec__ is not None and module.__spec__.name == alias:
                module.__spec__ = own
                del self.own_specs[alias]


sys.meta_path.insert(0, _Alias())
