"""Regenerate fixtures/containers-lab: `linkcheck check --container vllm` run against the two-node lab whose nodes run
real podman containers (tests/lab/containers.py, `serving_containers`).

    containers-lab  lab scenario `healthy`, each node running "vllm" (and b a stopped "old"): exit 1 (warn)

The findings below are stated here, not read from the run: a run that disagrees writes nothing and says what
differed. Building a lab needs root, podman, crun and cc, and labs share this machine's lab lock:

    flock /tmp/linkcheck-lab.lock .venv/bin/python scripts/make_container_fixtures.py

The bundle holds what `check` saves and nothing of the lab's own files (no key, ssh_config or known_hosts).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.lab import Lab  # noqa: E402
from tests.lab.containers import gpu_standin, serving_containers, skip_reason  # noqa: E402
from tests.lab.scenario import specs_for_scenario  # noqa: E402
from tests.lab.sshd import ssh_config  # noqa: E402

NAME = "containers-lab"
FINDINGS = {"NCCL_BUILD_DIFFERS": "warn", "CONTAINER_NCCL_SETTINGS_CONTRADICT_HOST": "warn",
            "NCCL_KNOWN_BAD": "warn", "GPU_WAITING_IN_COLLECTIVE": "warn"}
SUBJECTS = {"NCCL_BUILD_DIFFERS": ["NCCL in container vllm"],
            "CONTAINER_NCCL_SETTINGS_CONTRADICT_HOST": ["container vllm on b"],
            "NCCL_KNOWN_BAD": ["nccl 2.30.4 in container vllm on a", "nccl 2.30.4 in container vllm on b"],
            "GPU_WAITING_IN_COLLECTIVE": ["node a GPU"]}
# An inspection without traffic tests: the traffic rules skip (not asked for, so the verdict is not inconclusive).
SKIPS = ["LINK_BELOW_NOMINAL", "LINK_HOTPLUG_DEGRADED", "NCCL_BUSBW_LOW", "NCCL_SOCKET_FALLBACK"]
SECRETS = ("PRIVATE KEY", "ssh-ed25519 ", "client_ed25519", "ssh_host_", "known_hosts", "ssh_config")
DESCRIPTION = (
    "`linkcheck check --container vllm` against the two-node lab (scenario healthy), each node running real podman "
    "containers: a's \"vllm\" loads a system libnccl.so.2.30.4 stub (build 5e1f2d3c...), b's a pip wheel's "
    "libnccl.so.2 of the same version and another build (a7f420a1...) with a stale /etc/nccl.conf "
    "(NCCL_IB_HCA=mlx5_0); b's \"old\" is stopped (a note). a's nvidia-smi is a stand-in reporting 96 % at 22.05 W.")


def main() -> int:
    reason = skip_reason()
    if reason:
        print(f"make_container_fixtures: {reason}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="lc-ctr-fixture-") as tmp:
        work = Path(tmp)
        gpus = {"a": gpu_standin(96, 22.05), "b": gpu_standin(0, 4.87)}
        specs = [dataclasses.replace(s, containers=serving_containers(s.name),
                                     extra_tools={**s.extra_tools, "nvidia-smi": gpus[s.name]})
                 for s in specs_for_scenario("healthy", work / "models")]
        with Lab(specs, work / "lab") as lab:
            # Each node named by its hostname, as a site names its pair (the lab's own ssh_config calls them `a` and
            # `b`, which no anonymisation can tell from the text around them).
            hosts = {node.spec.host_name: (node.mgmt_ip, 22) for node in lab.nodes.values()}
            client = work / "ssh_config"
            client.write_text(ssh_config(hosts, identity=lab.client_key, known_hosts=lab.known_hosts),
                              encoding="utf-8")
            a, b = lab.nodes["a"].spec.host_name, lab.nodes["b"].spec.host_name
            config = work / "linkcheck.yaml"
            config.write_text(f"nodes:\n  a: {a}\n  b: {{target: {b}, containers: [old]}}\n"
                              f"ssh: {{config: {client}, known_hosts: {lab.known_hosts}}}\n", encoding="utf-8")
            bundle = work / "bundle"
            run = subprocess.run([sys.executable, "-m", "linkcheck.cli", "check", "-c", str(config), "--container",
                                  "vllm", "--save", str(bundle), "-q"], capture_output=True, text=True, timeout=180,
                                 cwd=ROOT)
        if run.returncode != 1:
            print(f"make_container_fixtures: check exited {run.returncode}: {run.stderr.strip()}", file=sys.stderr)
            return 1
        from linkcheck.app.offline import diagnose_bundle
        from linkcheck.model import Status

        outcome = diagnose_bundle(bundle)
        got: dict[str, list[str]] = {}
        for f in outcome.diagnosis.findings:
            if f.status in (Status.WARN, Status.FAIL):
                got.setdefault(f.rule_id, []).append(f.subject)
        skips = sorted({f.rule_id for f in outcome.diagnosis.findings if f.status is Status.SKIP})
        if {k: sorted(v) for k, v in got.items()} != {k: sorted(v) for k, v in SUBJECTS.items()} or skips != SKIPS:
            print(f"make_container_fixtures: the run found {got} (skips {skips}), not {SUBJECTS} ({SKIPS})",
                  file=sys.stderr)
            return 1
        leaked = [p for p in bundle.rglob("*") if p.is_file() and any(x in p.read_text(errors="replace")
                                                                       for x in SECRETS)]
        if leaked:
            print(f"make_container_fixtures: the lab's SSH files reached the bundle: {leaked}", file=sys.stderr)
            return 1
        target = ROOT / "fixtures" / NAME
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(bundle, target)
    expected = {"scenario": NAME, "origin": "synthetic", "description": DESCRIPTION, "verdict": "warn",
                "findings": FINDINGS, "subjects": SUBJECTS, "skips": SKIPS}
    (target / "expected.yaml").write_text(yaml.safe_dump(expected, sort_keys=False, width=116), encoding="utf-8")
    (target / "PROVENANCE.md").write_text(
        f"# {NAME}\n\nMade {dt.date.today().isoformat()} by scripts/make_container_fixtures.py: the two-node lab "
        "(tests/lab) with real containers in each node (Debian's podman 4.3 and crun, images staged from this "
        "machine's binaries, libnccl stubs linked by cc with the build IDs the script names), inspected by "
        "`linkcheck check --container vllm` over the nodes' real sshd. The GPU readings come from a stand-in "
        "nvidia-smi (the lab has no GPU). Addresses are the lab's (198.18.0.0/15).\n", encoding="utf-8")
    print(f"wrote fixtures/{NAME}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
