"""scripts/render.py prints what `pulumi up` creates, built by the same code (issue 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from flux_minicluster.builders.names import OWNER, REVISION
from flux_minicluster.builders.rendering import HIDDEN
from flux_minicluster.config import certificate
from flux_minicluster.config import stack_file as stack_file_module
from flux_minicluster.config.stack_file import read_config
from tests.harness import ROOT, Deployment, Registered, deploy, deploy_rejected
from tests.plain import plain

RENDER = [sys.executable, str(ROOT / "scripts" / "render.py")]


def rendered(*args: str) -> list[dict[str, Any]]:
    result = subprocess.run([*RENDER, *args], capture_output=True, text=True, check=True)
    return list(yaml.safe_load_all(result.stdout))


def dev_stack_config() -> dict[str, Any]:
    config = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    return {key: value for key, value in config.items()}


def without_autonames(deployment: Deployment, resource: Registered) -> dict[str, Any]:
    """What the program declared, with the names render uses: the resource name where Pulumi auto-names.
    Less the two things the program adds to a builder's object: the Job's revision, a digest over the
    names Pulumi gives, which its scheduling guard knows it by (resources/scheduling.py), and on each
    object that keeps its name, the stack that declares it (resources/kube_object.py: owned)."""
    obj = plain(resource.inputs)
    obj["metadata"] = {"name": resource.name, **obj["metadata"]}
    added = {REVISION, OWNER}
    annotations = {k: v for k, v in obj["metadata"].pop("annotations", {}).items() if k not in added}
    obj["metadata"].update({"annotations": annotations} if annotations else {})
    text = json.dumps(obj)
    for resource_name, live_name in deployment.auto_names.items():
        text = text.replace(live_name, resource_name)
    return json.loads(text)  # type: ignore[no-any-return]


def test_render_of_the_dev_stack_is_the_objects_the_program_declares() -> None:
    objects = rendered("--stack", "dev", "--show-secrets")
    deployment = deploy(dev_stack_config(), stack="dev")
    declared = [without_autonames(deployment, r) for r in deployment.resources if r.typ.startswith("kubernetes:")]
    by_kind_and_name = {(o["kind"], o["metadata"]["name"]): o for o in declared}
    assert sorted(by_kind_and_name) == sorted((o["kind"], o["metadata"]["name"]) for o in objects)
    for obj in objects:
        expected = by_kind_and_name[(obj["kind"], obj["metadata"]["name"])]
        if obj["kind"] == "Secret":  # render makes its own keypair: compare everything but the key
            assert certificate.parse(obj["stringData"]["curve.cert"]).name == "dev-0"
            obj, expected = {**obj, "stringData": None}, {**expected, "stringData": None}
        assert obj == expected


def test_render_reads_any_stack_file_and_names_the_cluster_after_it(tmp_path: Path) -> None:
    stack_file = tmp_path / "Pulumi.lammps.yaml"
    stack_file.write_text(
        yaml.safe_dump({"config": {"minicluster:image": "ghcr.io/x/lammps:1", "minicluster:size": 2}})
    )
    job = next(o for o in rendered("--config", str(stack_file)) if o["kind"] == "Job")
    assert job["metadata"]["name"] == "lammps"
    assert job["spec"]["completions"] == 2


def test_render_refuses_a_certificate_the_stack_keeps_in_plain_text_and_prints_nothing(tmp_path: Path) -> None:
    provided = certificate.generate("mine-0")
    stack_file = tmp_path / "Pulumi.mine.yaml"
    stack_file.write_text(
        yaml.safe_dump({"config": {"minicluster:image": "flux:1", "minicluster:curveCertificate": provided.text()}})
    )
    result = subprocess.run([*RENDER, "--config", str(stack_file), "--show-secrets"], capture_output=True, text=True)
    assert (result.returncode, result.stdout) == (2, "")
    assert "minicluster:curveCertificate holds the cluster's secret key, and the stack keeps it in plain text" in (
        result.stderr
    )
    assert provided.secret_key not in result.stderr


def test_render_reports_a_bad_config_by_key_and_prints_nothing(tmp_path: Path) -> None:
    stack_file = tmp_path / "Pulumi.bad.yaml"
    stack_file.write_text(yaml.safe_dump({"config": {"minicluster:image": "flux:1", "minicluster:size": 0}}))
    result = subprocess.run([*RENDER, "--config", str(stack_file)], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "minicluster:size: Input should be greater than or equal to 1" in result.stderr


# -- a stack file, read as the Pulumi CLI reads it ------------------------------------------------

CLI_LIKE = """config:
  minicluster:image: ghcr.io/flux-framework/flux-restful-api:latest
  minicluster:size: 4
  minicluster:command: "echo 'hi there'"
  minicluster:logging: {quiet: true}
  minicluster:submitFlags: [--exclusive]
  kubernetes:context: kind-flux
"""


def test_scalars_arrive_as_their_yaml_text_and_structures_as_json(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(CLI_LIKE)
    config, encrypted = read_config(path)
    assert config == {
        "minicluster:image": "ghcr.io/flux-framework/flux-restful-api:latest",
        "minicluster:size": "4",
        "minicluster:command": "echo 'hi there'",
        "minicluster:logging": '{"quiet": true}',
        "minicluster:submitFlags": '["--exclusive"]',
        "kubernetes:context": "kind-flux",
    }
    assert encrypted == []


def test_render_refuses_what_pulumi_up_refuses(tmp_path: Path) -> None:
    """`size: true` is the string "true" to the program: render must not read it as YAML's 1."""
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(CLI_LIKE.replace("minicluster:size: 4", "minicluster:size: true"))
    result = subprocess.run([*RENDER, "--config", str(path)], capture_output=True, text=True, check=False)
    assert (result.returncode, result.stdout) == (2, "")
    said_by_render = "minicluster:size: must be a whole number (got true)"
    assert said_by_render in result.stderr
    said_by_pulumi_up, _ = deploy_rejected(read_config(path)[0], stack="x")
    assert said_by_render in said_by_pulumi_up


def test_render_hides_every_secrets_values_unless_asked_and_says_so() -> None:
    result = subprocess.run([*RENDER, "--stack", "dev"], capture_output=True, text=True, check=True)
    (secret,) = [o for o in yaml.safe_load_all(result.stdout) if o["kind"] == "Secret"]
    assert secret["stringData"] == {"curve.cert": HIDDEN}
    assert "the Secrets' values are shown as placeholders; --show-secrets prints them" in result.stderr


def test_an_encrypted_environment_value_renders_as_a_placeholder_and_goes_through_a_secret(tmp_path: Path) -> None:
    stack_file = tmp_path / "Pulumi.dev.yaml"
    encrypted = {"secure": "v1:c2VjcmV0:ZW5jcnlwdGVk"}  # as `pulumi config set --secret --path` writes it
    config = {"minicluster:image": "flux:1", "minicluster:environment": {"API_TOKEN": encrypted, "LOG": "debug"}}
    stack_file.write_text(yaml.safe_dump({"config": config}))
    result = subprocess.run([*RENDER, "--config", str(stack_file), "--show-secrets"], capture_output=True, text=True)
    objects = list(yaml.safe_load_all(result.stdout))
    (config_secret,) = [o for o in objects if o["metadata"]["name"] == "dev-config-secret"]
    assert config_secret["stringData"] == {"env.API_TOKEN": stack_file_module.ENCRYPTED, "env.LOG": "debug"}
    job = next(o for o in objects if o["kind"] == "Job")
    env = {e["name"]: e for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["API_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "dev-config-secret", "key": "env.API_TOKEN"}
    assert "minicluster:environment encrypted: shown as placeholders" in result.stderr
    assert "v1:c2VjcmV0" not in result.stdout


def entrypoint_files(objects: list[dict[str, Any]]) -> dict[str, str]:
    (config_map,) = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("-entrypoint")]
    return config_map["data"]  # type: ignore[no-any-return]


def test_a_command_written_as_a_yaml_list_is_its_words(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.x.yaml"
    as_list = 'minicluster:command: [lmp, -in, in.reaxc.hns, "-var", "x y"]'
    path.write_text(CLI_LIKE.replace("minicluster:command: \"echo 'hi there'\"", as_list))
    assert entrypoint_files(rendered("--config", str(path)))["command.args"] == "lmp\n-in\nin.reaxc.hns\n-var\nx y\n"


def test_option_flags_written_as_a_yaml_list_are_its_words(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(CLI_LIKE + '  minicluster:optionFlags: ["-o", "cpu-affinity=per-task"]\n')
    flags = entrypoint_files(rendered("--config", str(path)))["submit.flags"]
    assert flags == "--exclusive\n-o\ncpu-affinity=per-task\n"


def test_a_list_where_other_text_is_expected_is_refused_by_key(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(CLI_LIKE.replace("minicluster:image: ghcr.io/flux-framework/flux-restful-api:latest",
                                     "minicluster:image: [fluxrm/flux-sched]"))  # fmt: skip
    result = subprocess.run([*RENDER, "--config", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 2
    assert "minicluster:image: must be text, not a list or an object\n" in result.stderr
