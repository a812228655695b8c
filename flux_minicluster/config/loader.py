"""Reading stack config into a MiniClusterSpec: `load_spec` turns raw stack config (``minicluster:*``
keys, values as Pulumi hands them over: strings, JSON strings for structured values, or native YAML
values) into a spec, or raises `ConfigError` listing every problem at once, each naming the key as the
user writes it and never echoing a secret. Pure. Also the walk over nested models that the config
reference (scripts/config_reference.py) shares.
"""

from __future__ import annotations

import difflib
import json
import re
import shlex
import types
import typing
from collections.abc import Collection, Iterator, Mapping
from typing import Any

from pydantic import BaseModel, SecretStr, ValidationError

from flux_minicluster.config import consistency, rules
from flux_minicluster.config.project import NAMESPACE
from flux_minicluster.config.spec import MiniClusterSpec
from flux_minicluster.config.types import WEEK


class ConfigError(ValueError):
    """Invalid stack config. `problems` holds one line per problem, each naming its config key."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("invalid MiniCluster stack config:\n" + "\n".join(f"  - {p}" for p in problems))


class NoStackFile(ConfigError):
    """The stack file is not there: one line, saying which stacks are."""

    def __init__(self, message: str) -> None:
        super().__init__([message])
        self.args = (message,)

    def __str__(self) -> str:
        return str(self.args[0])


ALWAYS_SECRET = "curveCertificate"
"""Never echoed, whether or not the stack marks it secret."""
SECRETS_KEPT = (ALWAYS_SECRET, "environment", "command", "hooks")
"""The config keys whose values can stay secret: they reach the pods through Kubernetes Secrets only
(the certificate's, and the config Secret: environment by secretKeyRef, command and hooks as files)."""


def config_keys(model: type[BaseModel] = MiniClusterSpec) -> dict[str, str]:
    """Config key (camelCase, as users write it) -> field name."""
    return {(field.alias or name): name for name, field in model.model_fields.items() if not field.exclude}


def load_spec(raw: Mapping[str, Any], stack: str, secret_keys: Collection[str] = ()) -> MiniClusterSpec:
    """Validate raw stack config. Keys outside the `minicluster:` namespace (e.g. `kubernetes:*`) are
    the providers' business and ignored here. `secret_keys`: the full keys the stack marks secret."""
    prefix = f"{NAMESPACE}:"
    values = {key[len(prefix) :]: value for key, value in raw.items() if key.startswith(prefix)}
    secret = frozenset(key[len(prefix) :] for key in secret_keys if key.startswith(prefix)) & values.keys()
    known = config_keys()
    problems = [_unknown_key(key, list(known)) for key in values if key not in known]
    problems += [_secret_not_kept(key) for key in sorted(secret) if key in known and key not in SECRETS_KEPT]
    if ALWAYS_SECRET in values and ALWAYS_SECRET not in secret:
        problems.append(_kept_in_plain_text(ALWAYS_SECRET))
    decoded = {key: _decode(known[key], value) for key, value in values.items() if key in known}
    problems += list(_python_spellings(MiniClusterSpec, decoded, []))
    decoded.setdefault("name", stack)
    try:
        spec = MiniClusterSpec.model_validate({**decoded, "secret_keys": secret})
    except ValidationError as error:
        problems.extend(_describe(error, secret | {ALWAYS_SECRET}))
    else:  # the rules across keys, once every key is valid on its own
        problems.extend(problem.message for problem in consistency.problems(spec))
    if problems:
        raise ConfigError(problems)
    return spec


def _python_spellings(model: type[BaseModel], value: Any, path: list[Any]) -> Iterator[str]:
    """Keys spelt as the code's field names (node_selector), which the models would take too: the
    config, like the reference, spells them camelCase (nodeSelector)."""
    if not isinstance(value, dict):
        return
    keys = config_keys(model)
    for key, item in value.items():
        field = model.model_fields.get(key)
        if field is not None and field.alias and field.alias != key:
            yield _unknown(rules.key_path([*path, key]), rules.key_path([*path, field.alias]))
        name = keys.get(key) or (key if field is not None else None)
        nested, reached_by = nested_model(model.model_fields[name].annotation) if name else (None, "")
        if nested is None:
            continue
        if reached_by == "":
            yield from _python_spellings(nested, item, [*path, key])
        elif reached_by == "[]" and isinstance(item, list):
            for index, entry in enumerate(item):
                yield from _python_spellings(nested, entry, [*path, key, index])
        elif isinstance(item, dict):
            for entry_key, entry in item.items():
                yield from _python_spellings(nested, entry, [*path, key, entry_key])


def _kept_in_plain_text(key: str) -> str:
    """The certificate's secret key in plain text: in the stack file (often in git), every preview and
    the state's inputs. Refused before anything is made, without echoing it."""
    return (
        f"minicluster:{key} holds the cluster's secret key, and the stack keeps it in plain text: set it "
        f'encrypted, with `pulumi config set --secret minicluster:{key} "$(cat curve.cert)"` (a program that '
        "declares the MiniCluster passes it as a secret)"
    )


def _secret_not_kept(key: str) -> str:
    kept = ", ".join(f"minicluster:{name}" for name in SECRETS_KEPT)
    return (
        f"minicluster:{key} is set as a secret, but it cannot stay secret: it becomes part of the objects' "
        "names, specs or labels, which Kubernetes shows to whoever can read them and Pulumi shows in every "
        f"preview. Set it without --secret (only {kept} can be secret)"
    )


def _unknown_key(key: str, known: list[str]) -> str:
    near = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return _unknown(key, near[0] if near else None)


def _unknown(key: str, meant: str | None) -> str:
    """The one wording of a key the config does not have (`key` and `meant` as users write them)."""
    hint = f"; did you mean {NAMESPACE}:{meant}?" if meant else ""
    return f"{NAMESPACE}:{key}: unknown config key{hint}"


KUBERNETES_SPELLINGS = {"mountPath": "path", "persistentVolumeClaim": "claimName"}
"""Keys as a Kubernetes manifest spells them, and the config key that says the same here."""
WORDS_AS_LIST = ("command", "option_flags")
"""Text fields that may also be written as a YAML list of words (`command: [lmp, -in, in.reaxc.hns]`)."""


def _decode(field_name: str, value: Any) -> Any:
    """Pulumi hands structured values (objects, lists) to the program as JSON text. A text field gets
    its text, but for a list of words where WORDS_AS_LIST allows one (quoted as a shell would)."""
    if not isinstance(value, str) or not value.lstrip().startswith(("{", "[")):
        return value
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        return value
    if not _is_text_field(field_name):
        return parsed
    if (
        field_name in WORDS_AS_LIST
        and isinstance(parsed, list)
        and all(isinstance(w, str | int | float) for w in parsed)
    ):
        return shlex.join(str(word) for word in parsed)
    return parsed if isinstance(parsed, list | dict) else value  # refused by the field's type: text expected


def _is_text_field(field_name: str) -> bool:
    """Text, also when optional or a validated type (config/types.py)."""
    annotation = MiniClusterSpec.model_fields[field_name].annotation
    is_union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    kinds = {_unannotated(kind) for kind in (typing.get_args(annotation) if is_union else (annotation,))}
    return kinds - {type(None)} <= {str, SecretStr}


def _unannotated(annotation: Any) -> Any:
    return typing.get_args(annotation)[0] if typing.get_origin(annotation) is typing.Annotated else annotation


def _describe(error: ValidationError, hidden: Collection[str]) -> list[str]:
    """One line per problem; the value is echoed, except for the keys in `hidden` (secrets)."""
    problems = []
    for item in error.errors(include_url=False):
        loc = list(item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            problems.append(_nested_unknown_key(loc))
        elif item["type"] == "missing":  # nothing to echo: the input is the object it is missing from
            key = rules.key_path(loc)
            problems.append(f"{NAMESPACE}:{key}: required, and not set (`pulumi config set {NAMESPACE}:{key} ...`)")
        else:
            value = item.get("input")  # an object's problem names its own values: no JSON echo
            shown = "" if loc[0] in hidden or isinstance(value, dict | list) else f" (got {_as_written(value)})"
            problems.append(f"{NAMESPACE}:{rules.key_path(loc)}: {_in_users_words(item, loc, message)}{shown}")
    return problems


def _in_users_words(item: Any, loc: list[Any], message: str) -> str:
    """pydantic's words where they would name its classes or miss the unit."""
    if item["type"] in ("model_type", "model_attributes_type", "dict_type"):
        return f"must be an object of its own keys ({NAMESPACE}:{rules.key_path(loc)}.* in the configuration reference)"
    if item["type"] in ("int_parsing", "int_from_float", "int_type") and _in_seconds(loc):
        return "must be a whole number of seconds (600 for ten minutes)"
    if item["type"] in ("int_parsing", "int_from_float", "int_type"):
        return "must be a whole number"
    if item["type"] == "string_type":
        return "must be text, not a list or an object"
    return message


def _in_seconds(loc: list[Any]) -> bool:
    field = MiniClusterSpec.model_fields.get(config_keys().get(str(loc[0]), "")) if len(loc) == 1 else None
    return field is not None and any(getattr(rule, "le", None) == WEEK for rule in field.metadata)


def _as_written(value: Any) -> str:
    """A value as the user wrote it: a word or number bare, other text quoted."""
    return value if isinstance(value, str) and re.fullmatch(r"[\w.:/+-]+", value) else repr(value)


def _nested_unknown_key(loc: list[Any]) -> str:
    """Suggest the nearest key of the model the unknown one sits in (through lists and maps)."""
    model: type[BaseModel] = MiniClusterSpec
    skip_next = False
    for part in loc[:-1]:
        if skip_next:  # a list position or a map key
            skip_next = False
            continue
        field = model.model_fields.get(config_keys(model).get(str(part), str(part)))
        nested, reached_by = nested_model(field.annotation if field else None)
        if nested is None:
            break
        model, skip_next = nested, reached_by != ""
    keys, spelt = list(config_keys(model)), KUBERNETES_SPELLINGS.get(str(loc[-1]))
    near = [spelt] if spelt in keys else difflib.get_close_matches(str(loc[-1]), keys, n=1, cutoff=0.6)
    return _unknown(rules.key_path(loc), rules.key_path([*loc[:-1], near[0]]) if near else None)


def nested_model(annotation: Any) -> tuple[type[BaseModel] | None, str]:
    """The model a field holds (also when optional), and how its keys are reached: "" (an object),
    "[]" (a list of them) or ".<name>" (a map of them). None when it holds no model."""
    args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        annotation = args[0]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, ""
    origin, args = typing.get_origin(annotation), list(typing.get_args(annotation))
    inner = args[-1] if origin in (list, dict) and args else None
    if isinstance(inner, type) and issubclass(inner, BaseModel):
        return inner, "[]" if origin is list else ".<name>"
    return None, ""
