"""Every parser kind in the registry: any text, and any cut or mutated sample, gives a record or a ParseError.

One parametrized test over `linkcheck.parsers.PARSERS` replaces the per-module copies; examples are bounded
so the whole module stays a few seconds long.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from linkcheck.errors import ParseError
from linkcheck.parsers import PARSERS, get_parser
from linkcheck.records import is_record
from tests.parsers.test_parser_cases import is_case_file

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
CASES = Path(__file__).resolve().parent / "cases"
FAMILY = {  # the sample folder whose files feed the mutations of each kind
    "ip_link": "iproute", "ip_addr": "iproute", "ip_route": "iproute", "ip_neigh": "iproute",
    "sysfs": "rdma", "gid_sysfs": "rdma", "show_gids": "rdma", "rdma_link": "rdma", "ibdev2netdev": "rdma",
    "ibv_devinfo": "rdma", "ibstat": "rdma", "ethtool": "ethtool", "ethtool_i": "ethtool",
    "ethtool_s": "ethtool", "ethtool_m": "ethtool", "ethtool_fec": "ethtool", "lspci": "system",
    "netplan": "system",
    "nccl_env": "system", "nccl_conf": "system", "dmesg": "system", "uptime": "system", "os_release": "system",
    "sysctl": "system",
    "meminfo": "system", "ib_write_bw": "perftest", "ib_write_lat": "perftest", "perftest_version": "perftest",
    "dmi_serial": "system",
    "nm_connections": "system", "nccl_install": "nccl",
    "all_gather_perf": "nccl", "all_reduce_perf": "nccl", "nccl_log": "nccl", "lldp": "lldp",
    "nccl_probe": "containers", "ldconfig": "containers", "gpu_state": "containers",
}
MAX_SAMPLE_CHARS = 4000  # a few large dumps would otherwise dominate the run time


def family_samples(family: str) -> list[str]:
    """The family's samples, and the inputs of the parser cases of its kinds (tests/parsers/cases/<kind>/)."""
    files = sorted(p for p in (SAMPLES / family).rglob("*")
                   if p.is_file() and p.suffix != ".md" and not is_case_file(p))
    files += sorted(p for kind, fam in FAMILY.items() if fam == family for p in (CASES / kind).glob("*.txt"))
    return [p.read_text()[:MAX_SAMPLE_CHARS] for p in files]


def record_or_parse_error(kind: str, text: str) -> None:
    """The parser of `kind` returns a record (or a tuple of records) or raises ParseError; nothing else."""
    try:
        result = get_parser(kind)(text)
    except ParseError:
        return
    records = (result,) if is_record(result) else result if isinstance(result, tuple) else (result,)
    assert all(is_record(r) for r in records), f"{kind} returned {type(result).__name__}"


@st.composite
def inputs(draw: st.DrawFn, samples: list[str]) -> str:
    """Arbitrary text, or a sample that was cut, had a span deleted or replaced, or had its digits swapped."""
    if not samples or draw(st.booleans()):
        return draw(st.text(max_size=200))
    text = draw(st.sampled_from(samples))
    start = draw(st.integers(0, len(text)))
    end = draw(st.integers(start, min(len(text), start + 60)))
    how = draw(st.sampled_from(["cut", "delete", "replace", "digits"]))
    if how == "cut":
        return text[:start]
    if how == "delete":
        return text[:start] + text[end:]
    if how == "replace":
        filler = st.one_of(st.text(max_size=20), st.sampled_from(['"', ",", "{}", "[]", ":", "\t", "x", "\n"]))
        return text[:start] + draw(filler) + text[end:]
    return text.replace("0", draw(st.sampled_from(["", "x", "9" * 40, "-", ".", " ", "\t", "nan", "N/A"])))


def test_every_kind_has_samples_to_mutate() -> None:
    assert set(FAMILY) == set(PARSERS)
    assert all(family_samples(family) for family in set(FAMILY.values()))


@pytest.mark.parametrize("kind", sorted(PARSERS))
def test_any_input_gives_a_record_or_a_parse_error(kind: str) -> None:
    samples = family_samples(FAMILY[kind])

    @settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(inputs(samples))
    def check(text: str) -> None:
        record_or_parse_error(kind, text)

    check()
