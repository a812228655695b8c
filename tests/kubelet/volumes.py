"""What the kubelet makes of a pod spec before a container starts: its volumes as directories, and its
environment, both from the objects the builders render (so a test cannot drift from what `pulumi up`
creates).

ConfigMap and Secret volumes are one directory per object, shared by every pod that mounts it, and
rewritten atomically when the object is updated (as the kubelet's atomic writer swaps them: a pod
never reads a file half-written). An emptyDir is new for each pod; a claim is one directory for the
cluster's life, which outlives the pods.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from tests.kubelet.image import IMAGE_PATH

Manifest = dict[str, Any]


def write_files(directory: Path, data: dict[str, str], mode: int, group: int | None) -> None:
    """An object's keys as files, each replaced in one rename; keys the object no longer has go."""
    directory.mkdir(parents=True, exist_ok=True)
    for stale in set(os.listdir(directory)) - set(data):
        (directory / stale).unlink()
    for key, text in data.items():
        staged = directory / f".{key}.new"
        staged.write_text(text)
        staged.chmod(mode)
        if group is not None:
            os.chown(staged, 0, group)
        staged.replace(directory / key)


class Volumes:
    """The cluster's ConfigMaps, Secrets and claims, as directories under `root`."""

    def __init__(self, root: Path, objects: list[Manifest], fs_group: int | None) -> None:
        self.root, self.fs_group = root, fs_group
        self.objects = {(obj["kind"], obj["metadata"]["name"]): obj for obj in objects}

    def data(self, kind: str, name: str) -> dict[str, str]:
        obj = self.objects.get((kind, name))
        if obj is None:
            raise LookupError(f'{kind.lower()} "{name}" not found: the pod cannot start')
        return dict(obj.get("stringData") or obj.get("data") or {})

    def update(self, kind: str, name: str, data: dict[str, str]) -> None:
        """The object changed (kubectl apply, a resize): every pod that mounts it sees the new files."""
        obj = self.objects[(kind, name)]
        obj["stringData" if "stringData" in obj else "data"] = dict(data)
        directory = self.root / "objects" / f"{kind}-{name}"
        if directory.exists():
            write_files(directory, data, 0o644, self.fs_group)

    def source(self, volume: Manifest, pod_dir: Path) -> Path:
        """Where volume `volume` of the pod whose own directory is `pod_dir` lives on this machine."""
        if "configMap" in volume:
            return self._object_dir("ConfigMap", volume["configMap"]["name"], volume["configMap"])
        if "secret" in volume:
            return self._object_dir("Secret", volume["secret"]["secretName"], volume["secret"])
        if "projected" in volume:
            return self._projected(volume["name"], volume["projected"], pod_dir)
        if "emptyDir" in volume:
            return self._private_dir(pod_dir / "volumes" / volume["name"], 0o777)
        if "hostPath" in volume:  # the node's own files: this Node's, under its root, never the machine's
            return self._private_dir(self.root / "host" / volume["hostPath"]["path"].lstrip("/"), 0o755)
        if "persistentVolumeClaim" in volume:
            claim = volume["persistentVolumeClaim"]["claimName"]
            return self._private_dir(self.root / "claims" / claim, 0o2775 if self.fs_group is not None else 0o755)
        raise NotImplementedError(f"volume {volume['name']}: the test kubelet does not make {sorted(volume)}")

    def _object_dir(self, kind: str, name: str, source: Manifest) -> Path:
        directory = self.root / "objects" / f"{kind}-{name}"
        if not directory.exists():
            write_files(directory, self._items(kind, name, source), source.get("defaultMode", 0o644), self.fs_group)
        return directory

    def _items(self, kind: str, name: str, source: Manifest) -> dict[str, str]:
        data = self.data(kind, name)
        if "items" not in source:
            return data
        return {item["path"]: data[item["key"]] for item in source["items"]}

    def _projected(self, name: str, projected: Manifest, pod_dir: Path) -> Path:
        files: dict[str, str] = {}
        for part in projected["sources"]:
            kind, source = ("ConfigMap", part["configMap"]) if "configMap" in part else ("Secret", part["secret"])
            files.update(self._items(kind, source["name"], source))
        directory = pod_dir / "volumes" / name
        write_files(directory, files, projected.get("defaultMode", 0o644), self.fs_group)
        return directory

    def _private_dir(self, directory: Path, mode: int) -> Path:
        if not directory.exists():
            directory.mkdir(parents=True)
            if self.fs_group is not None:
                os.chown(directory, 0, self.fs_group)
            directory.chmod(mode)
        return directory


_REFERENCE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)|\$\$")


def expand(value: str, defined: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion of an env value: earlier variables only, `$$` for a `$`, unknown
    references left as written."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return defined.get(match.group(1), match.group(0))

    return _REFERENCE.sub(replace, value)


def container_env(container: Manifest, volumes: Volumes, fields: dict[str, str], home: str) -> dict[str, str]:
    """The environment a container's processes start with: the image's, then what the kubelet and the
    Job controller add (`fields`: HOSTNAME, JOB_COMPLETION_INDEX, and the values fieldRefs read), then
    the container's own env in order."""
    env = {"PATH": IMAGE_PATH, "HOME": home, "HOSTNAME": fields["HOSTNAME"]}
    env["JOB_COMPLETION_INDEX"] = fields["JOB_COMPLETION_INDEX"]
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = expand(item["value"], env)
        elif "valueFrom" in item:
            env[item["name"]] = _value_from(item["valueFrom"], volumes, fields)
        else:
            env[item["name"]] = ""
    return env


def _value_from(source: Manifest, volumes: Volumes, fields: dict[str, str]) -> str:
    if "secretKeyRef" in source:
        ref = source["secretKeyRef"]
        return volumes.data("Secret", ref["name"])[ref["key"]]
    if "configMapKeyRef" in source:
        ref = source["configMapKeyRef"]
        return volumes.data("ConfigMap", ref["name"])[ref["key"]]
    if "fieldRef" in source:
        return fields[source["fieldRef"]["fieldPath"]]
    raise NotImplementedError(f"env valueFrom {sorted(source)}")
