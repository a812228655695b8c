"""A Kubernetes affinity (pod.affinity), checked as the API server checks it (ValidateAffinity in
kubernetes' pkg/apis/core/validation): every level it requires, its operators and their values, label
keys, topology keys and weights. The stack gives it as Kubernetes spells it; it is passed on as given.
Pure pydantic; `check` says what is wrong in the user's words, with the path inside the affinity."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from flux_minicluster.config import rules

NodeOperator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
LabelOperator = Literal["In", "NotIn", "Exists", "DoesNotExist"]


class _Kubernetes(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=False, strict=True)


def _values_fit(operator: str, values: list[str] | None) -> None:
    if operator in ("In", "NotIn") and not values:
        raise ValueError(f"operator {operator} needs values")
    if operator in ("Exists", "DoesNotExist") and values:
        raise ValueError(f"operator {operator} takes no values")
    if operator in ("Gt", "Lt") and (len(values or []) != 1 or not (values or [""])[0].lstrip("-").isdigit()):
        raise ValueError(f"operator {operator} needs one value, a whole number")


def _label_key(value: str) -> str:
    if not rules.QUALIFIED_NAME.match(value):
        raise ValueError(f"{value!r} is not a label key (like kubernetes.io/hostname)")
    return value


LabelKey = Annotated[str, AfterValidator(_label_key)]


class _Requirement(_Kubernetes):
    key: LabelKey
    operator: str
    values: list[str] | None = None

    @model_validator(mode="after")
    def _fits(self) -> _Requirement:
        _values_fit(self.operator, self.values)
        return self


class NodeSelectorRequirement(_Requirement):
    operator: NodeOperator


class NodeFieldRequirement(_Kubernetes):
    key: Literal["metadata.name"]
    operator: Literal["In", "NotIn"]
    values: list[str] = Field(min_length=1, max_length=1)


class NodeSelectorTerm(_Kubernetes):
    match_expressions: list[NodeSelectorRequirement] = Field(default_factory=list)
    match_fields: list[NodeFieldRequirement] = Field(default_factory=list)


class NodeSelector(_Kubernetes):
    node_selector_terms: list[NodeSelectorTerm] = Field(min_length=1)


class PreferredSchedulingTerm(_Kubernetes):
    weight: int = Field(ge=1, le=100)
    preference: NodeSelectorTerm


class NodeAffinity(_Kubernetes):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = Field(default_factory=list)


class LabelSelectorRequirement(_Requirement):
    operator: LabelOperator


class LabelSelector(_Kubernetes):
    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: list[LabelSelectorRequirement] = Field(default_factory=list)

    @field_validator("match_labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        return rules.labels(value)


class PodAffinityTerm(_Kubernetes):
    topology_key: LabelKey
    label_selector: LabelSelector | None = None
    namespace_selector: LabelSelector | None = None
    namespaces: list[str] = Field(default_factory=list)
    match_label_keys: list[str] = Field(default_factory=list)
    mismatch_label_keys: list[str] = Field(default_factory=list)


class WeightedPodAffinityTerm(_Kubernetes):
    weight: int = Field(ge=1, le=100)
    pod_affinity_term: PodAffinityTerm


class PodAffinity(_Kubernetes):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = Field(default_factory=list)
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = Field(default_factory=list)


class Affinity(_Kubernetes):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


def check(value: dict[str, Any]) -> dict[str, Any]:
    """The affinity as given, or a ValueError naming the first place the API server would refuse."""
    try:
        Affinity.model_validate(value)
    except ValidationError as error:
        first = error.errors()[0]
        where = rules.key_path(first["loc"])
        said = {"missing": "required, and not set", "extra_forbidden": "not a field Kubernetes has here"}.get(
            first["type"], first["msg"].removeprefix("Value error, ")
        )
        raise ValueError(f"{where}: {said}") from None
    return value
