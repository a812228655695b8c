"""Any Kubernetes object as a resource of the Kubernetes provider, declared from its builder's manifest.

The provider's SDK has a typed class for each kind (pulumi_kubernetes.core.v1.Secret, ...). The
builders already make every object as the plain manifest the API takes, and the provider takes the
same fields as they are (camelCase), so one class declares them all, under the type the provider
knows each kind by. Importing pulumi_kubernetes.core.v1 alone builds several hundred classes: 0.11 s
of every `pulumi up`, before the program could declare its first resource.
"""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi_kubernetes import _utilities

from flux_minicluster.builders.names import OWNER, with_annotation

SECRET_FIELDS = {"Secret": ["data", "stringData"]}
"""The fields that Pulumi keeps encrypted in its state and hides in its output, as inputs and as
outputs, by kind (as the SDK's typed class of that kind does): a Secret's content, whatever the values
it was made of."""


def this_stack() -> str:
    """The stack that declares the objects, as names.OWNER records it: `<organization>/<project>/<stack>`
    (a stack's name is unique only within its project, and a project's within its organization)."""
    return f"{pulumi.get_organization()}/{pulumi.get_project()}/{pulumi.get_stack()}"


def owned(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest of an object that keeps its name, marked as this stack's (names.OWNER). An
    auto-named object is the stack's by its name."""
    return with_annotation(manifest, OWNER, this_stack()) if "name" in manifest["metadata"] else manifest


def resource_type(api_version: str, kind: str) -> str:
    """The provider's type for objects of a kind: kubernetes:core/v1:Secret for the core group's,
    kubernetes:GROUP/VERSION:KIND for the others' and custom resources'."""
    return f"kubernetes:{api_version if '/' in api_version else f'core/{api_version}'}:{kind}"


class KubernetesObject(pulumi.CustomResource):
    """One Kubernetes object, its inputs the manifest as a builder made it. Its `metadata` is the
    object's as the provider last read it (a plain dict, camelCase)."""

    metadata: pulumi.Output[Any]

    def __init__(
        self, resource_name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions | None = None
    ) -> None:
        kind = manifest["kind"]
        # As the SDK's typed classes do: the provider of the release this project pins (requirements),
        # and a Secret's content secret.
        secret_fields = SECRET_FIELDS.get(kind, [])
        inputs = {
            key: pulumi.Output.secret(value) if key in secret_fields else value
            for key, value in owned(manifest).items()
        }
        defaults = _utilities.get_resource_opts_defaults()
        defaults.additional_secret_outputs = secret_fields
        opts = pulumi.ResourceOptions.merge(defaults, opts)
        self._given_name: str | None = manifest["metadata"].get("name")
        super().__init__(resource_type(manifest["apiVersion"], kind), resource_name, inputs, opts)

    @property
    def name(self) -> pulumi.Output[str]:
        """The object's name, once the provider has made it: the manifest's (the Job's, a Service's), else
        the one the provider gave it (auto-named). A manifest's name is not read back: pulumi-kubernetes
        previews the replacement of an object that keeps its name with a dry run under a made-up name
        ("retrying with name"), which the update never uses, and a preview showed the Job renamed, in
        the outputs and in what takes its name (the Scale, shown replaced where the update updates it)."""
        given = self._given_name
        return self.metadata.apply(lambda metadata: given or metadata["name"])

    @property
    def namespace(self) -> pulumi.Output[str]:
        return self.metadata.apply(lambda metadata: metadata["namespace"])

    @property
    def uid(self) -> pulumi.Output[str]:
        return self.metadata.apply(lambda metadata: metadata["uid"])
