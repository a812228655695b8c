"""Where stacks deployed before components/ had its layers find their certificate providers.

Pulumi keeps a dynamic resource's provider in state, pickled by reference to its module, and
unpickles that copy to read or delete the resource: `components.keygen.<Provider>` must go on
resolving, or `pulumi destroy` of such a stack fails. New state refers to components.resources.keygen.

Remove when: every stack deployed before commit c72a9e2 (2026-11-22, "components/ shows its layers")
has been destroyed or has run `pulumi up` once since, which writes the provider's new module into its
state. Check with `pulumi stack export | grep components.keygen` (no match: nothing needs this file).
"""

from components.resources.keygen import KeygenPodProvider, LocalKeygenProvider

__all__ = ["KeygenPodProvider", "LocalKeygenProvider"]
