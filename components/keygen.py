"""Where stacks deployed before components/ had its layers find their certificate providers.

Pulumi keeps a dynamic resource's provider in state, pickled by reference to its module, and
unpickles that copy to read or delete the resource: `components.keygen.<Provider>` must go on
resolving, or `pulumi destroy` of such a stack fails. New state refers to components.resources.keygen.
"""

from components.resources.keygen import KeygenPodProvider, LocalKeygenProvider

__all__ = ["KeygenPodProvider", "LocalKeygenProvider"]
