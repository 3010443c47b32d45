"""NCCL's settings in NCCL's order (src/misc/param.cc initEnvFunc, setEnvFile with setenv(..., 0)): the environment,
then the file NCCL_CONF_FILE names (NCCL 2.23 and later) or else ~/.nccl.conf, then /etc/nccl.conf."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from linkcheck.bundle.format import load_bundle
from linkcheck.collect.specs import SPECS_BY_ID
from linkcheck.facts.pair import build_link_facts
from linkcheck.model import Capture

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _captures(env: str, user: str, named: str | None, version: str = "2.28.9") -> list[Capture]:
    out = []
    for cap in load_bundle(FIXTURES / "healthy").captures:
        if cap.spec == "nccl_env":
            cap = msgspec.structs.replace(cap, stdout=env)
        elif cap.spec == "nccl_conf_user":
            cap = msgspec.structs.replace(cap, stdout=user, stderr="", exit_status=0)
        elif cap.spec == "nccl_install":
            cap = msgspec.structs.replace(cap, stdout=f"lib /usr/lib/aarch64-linux-gnu/libnccl.so.{version}\n")
        out.append(cap)
        if cap.spec == "nccl_conf_user" and named is not None:
            out.append(msgspec.structs.replace(cap, spec="nccl_conf_file", stdout=named,
                                               command=SPECS_BY_ID["nccl_conf_file"].command))
    return out


def test_nccl_conf_file_replaces_the_users_nccl_conf() -> None:
    link = build_link_facts(_captures("NCCL_CONF_FILE=/opt/job/nccl.conf\n", "NCCL_IB_GID_INDEX=3\n",
                                      "NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1\n"))
    assert "NCCL_IB_GID_INDEX" not in link.a.nccl  # ~/.nccl.conf is not read while NCCL_CONF_FILE is set
    assert link.a.nccl_sources["NCCL_IB_HCA"] == "/opt/job/nccl.conf"


@pytest.mark.parametrize(("env", "version"), [("", "2.28.9"), ("NCCL_CONF_FILE=/opt/job/nccl.conf\n", "2.21.5"),
                                              ("NCCL_CONF_FILE=\n", "2.28.9")])
def test_without_nccl_conf_file_or_before_2_23_the_users_nccl_conf_is_read(env: str, version: str) -> None:
    link = build_link_facts(_captures(env, "NCCL_IB_GID_INDEX=3\n", "NCCL_IB_HCA=x\n", version))
    assert link.a.nccl["NCCL_IB_GID_INDEX"] == "3" and link.a.nccl_sources["NCCL_IB_GID_INDEX"] == "~/.nccl.conf"
    assert "NCCL_IB_HCA" not in link.a.nccl or link.a.nccl_sources["NCCL_IB_HCA"] != "/opt/job/nccl.conf"


def test_the_environment_wins_even_when_empty() -> None:
    link = build_link_facts(_captures("NCCL_IB_GID_INDEX=\n", "NCCL_IB_GID_INDEX=3\n", None))
    assert link.a.nccl["NCCL_IB_GID_INDEX"] == "" and link.a.nccl_sources["NCCL_IB_GID_INDEX"] == "environment"
