"""The NCCL probe's parsers on real public outputs (tests/samples/containers/real) and on the probe run here against
libnccl stubs this test links with its own build IDs."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from linkcheck.collect.specs import NCCL_PROBE
from linkcheck.errors import ParseError
from linkcheck.facts.nccl_views import view_of
from linkcheck.parsers.nccl_probe import (
    build_id_from_elf,
    build_id_from_file,
    build_id_from_readelf,
    od_bytes,
    origin_of,
    parse_env,
    parse_gpu_query,
    parse_ldconfig_p,
    parse_nccl_probe,
)

REAL = Path(__file__).resolve().parents[1] / "samples" / "containers" / "real"


def test_ldconfig_p_real_lines_with_a_tab_or_spaces() -> None:
    x86 = parse_ldconfig_p((REAL / "ldconfig_p_nccl_x86_nccl1991.txt").read_text())
    assert [(e.name, e.flags, e.path) for e in x86] == [
        ("libnccl.so.2", "libc6,x86-64", "/lib/x86_64-linux-gnu/libnccl.so.2")]
    two = parse_ldconfig_p((REAL / "ldconfig_p_nccl_x86_two_lines_notes.txt").read_text())
    assert [e.name for e in two] == ["libnccl.so.2", "libnccl.so"]
    arm = parse_ldconfig_p((REAL / "ldconfig_p_nccl_aarch64_notes.txt").read_text())
    assert arm[0].flags == "libc6,AArch64" and arm[0].path == "/lib/aarch64-linux-gnu/libnccl.so.2"
    assert parse_ldconfig_p("3 libs found in cache `/etc/ld.so.cache'\n" + (REAL / "ldconfig_p_nccl_x86_nccl1991.txt")
                            .read_text())[0].name == "libnccl.so.2"
    with pytest.raises(ParseError):
        parse_ldconfig_p("libnccl.so.2 => nowhere\n")


def test_build_ids_from_readelf_and_file() -> None:
    assert build_id_from_readelf((REAL / "readelf_n_bash_wildebeest.txt").read_text()) == (
        "54967822da027467f21e65a1eac7576dec7dd821")
    # binutils 2.17 names the note only by its number: no Build ID to read (the od path then decides)
    assert build_id_from_readelf((REAL / "readelf_n_openbsd_unknown_note_patchelf279.txt").read_text()) is None
    assert build_id_from_file((REAL / "file_buildid_til.txt").read_text()) == (
        "847c736367efd9cd353e8a0790a24ad58ce86d70")


def test_env_of_a_container() -> None:
    env = dict(parse_env((REAL / "env_container_nccl331.txt").read_text()))
    assert env == {"NCCL_IB_DISABLE": "1", "NCCL_VERSION": "2.4.8", "NCCL_COMM_ID": "192.168.0.91:27030",
                   "NCCL_DEBUG_SUBSYS": "ALL", "NCCL_DEBUG": "INFO"}


def test_gpu_query_with_units_and_leading_blanks() -> None:
    busy = parse_gpu_query((REAL / "nvidia_smi_util_power_busy_low_power.txt").read_text())
    assert (busy[3].utilization_pct, busy[3].power_w) == (100.0, 16.67) and len(busy) == 7
    steady = parse_gpu_query((REAL / "nvidia_smi_util_power_steady.txt").read_text())
    assert (steady[0].utilization_pct, steady[0].power_w) == (94.0, 70.58)
    na = parse_gpu_query("utilization.gpu [%], power.draw [W]\n96 %, [N/A]\n")
    assert (na[0].utilization_pct, na[0].power_w) == (96.0, None)
    with pytest.raises(ParseError):
        parse_gpu_query("utilization.gpu [%], power.draw [W]\nninety, 3 W\n")


def test_origin_by_place() -> None:
    assert origin_of("/usr/local/lib/python3.12/dist-packages/nvidia/nccl/lib/libnccl.so.2") == "pip wheel"
    assert origin_of("/usr/lib/aarch64-linux-gnu/libnccl.so.2") == "system"
    assert origin_of("/lib/x86_64-linux-gnu/libnccl.so.2") == "system"
    assert origin_of("/root/nccl/build/lib/libnccl.so.2") == "source build"
    assert origin_of("/opt/app/lib/libnccl.so.2") == "vendored"


def _stub(path: Path, build_id: str, version: str) -> None:
    """A small ELF shared object with its own SONAME, version string and build ID, linked here."""
    path.parent.mkdir(parents=True, exist_ok=True)
    src = path.parent / "nccl_stub.c"
    src.write_text(f'const char lc_version[] = "NCCL version {version}+cuda13.0";\n'
                   "int ncclGetVersion(int *v) { *v = 1; return 0; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libnccl.so.2", f"-Wl,--build-id=0x{build_id}", "-o",
                    str(path), str(src)], check=True)
    src.unlink()


@pytest.fixture
def stubs(tmp_path: Path) -> Path:
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc) to link the libnccl stubs with")
    wheel = tmp_path / "site" / "nvidia" / "nccl" / "lib" / "libnccl.so.2"
    _stub(wheel, "a7f420a1" + "0" * 32, "2.30.4")
    (tmp_path / "site" / "nvidia_nccl_cu13-2.30.4.dist-info").mkdir()
    vendored = tmp_path / "opt" / "libnccl.so.2"
    _stub(vendored, "c0db9360" + "1" * 32, "2.28.9")
    return tmp_path


@pytest.mark.parametrize("with_readelf", [True, False])
def test_the_probe_reads_versions_build_ids_and_settings(stubs: Path, with_readelf: bool) -> None:
    home = stubs / "home"
    home.mkdir()
    (home / ".nccl.conf").write_text("NCCL_IB_HCA=mlx5_9\nNCCL_SOCKET_IFNAME=eth9\n")
    path = os.environ["PATH"]
    if not with_readelf:  # the od path: a folder of links to every tool but readelf
        bare = stubs / "bin"
        bare.mkdir()
        for tool in ("env", "grep", "sed", "sort", "readlink", "stat", "wc", "od", "tr", "head", "cat", "ldconfig"):
            found = shutil.which(tool) or shutil.which(tool, path="/sbin:/usr/sbin")
            if found:
                (bare / tool).symlink_to(found)
        path = str(bare)
    env = {"PATH": path, "HOME": str(home), "NCCL_IB_HCA": "rocep1s0f1",
           "LD_LIBRARY_PATH": f"{stubs / 'opt'}:{stubs / 'site' / 'nvidia' / 'nccl' / 'lib'}"}
    out = subprocess.run(["/bin/sh", "-c", NCCL_PROBE, "sh", "host"], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    probe = parse_nccl_probe(out.stdout)
    libs = {lib.path: lib for lib in probe.libraries}
    wheel = libs[str(stubs / "site" / "nvidia" / "nccl" / "lib" / "libnccl.so.2")]
    vendored = libs[str(stubs / "opt" / "libnccl.so.2")]
    assert (wheel.version, wheel.origin, wheel.build_id) == ("2.30.4", "pip wheel", "a7f420a1" + "0" * 32)
    assert wheel.version_from == "pip wheel nvidia_nccl_cu13-2.30.4.dist-info"
    assert (vendored.version, vendored.version_from, vendored.build_id) == (
        "2.28.9", "version string", "c0db9360" + "1" * 32)
    assert vendored.size_bytes == (stubs / "opt" / "libnccl.so.2").stat().st_size
    view = view_of(probe, None)
    # LD_LIBRARY_PATH's first folder holds a libnccl.so.2: the loader takes it before the wheel's RUNPATH
    assert view.library is not None and view.library.path == vendored.path
    assert view.chosen_by == f"LD_LIBRARY_PATH ({stubs / 'opt'})"
    # the environment wins over ~/.nccl.conf, which still sets what the environment does not
    assert view.settings["NCCL_IB_HCA"] == "rocep1s0f1" and view.setting_sources["NCCL_IB_HCA"] == "environment"
    assert view.settings["NCCL_SOCKET_IFNAME"] == "eth9"
    assert view.setting_sources["NCCL_SOCKET_IFNAME"] == str(home / ".nccl.conf")
    assert view.net_plugin == "libnccl-net.so not found: internal IB and socket"


def test_od_dump_gives_the_build_id_of_an_elf_head(tmp_path: Path) -> None:
    data = Path("/bin/sh").resolve().read_bytes()[:4096]
    dump = subprocess.run(["od", "-An", "-tx1", "-v", "-N", "4096", str(Path("/bin/sh").resolve())],
                          capture_output=True, text=True, check=True).stdout
    assert od_bytes(dump.splitlines()) == data
    readelf = shutil.which("readelf")
    if readelf:
        expected = build_id_from_readelf(subprocess.run([readelf, "-n", str(Path("/bin/sh").resolve())],
                                                        capture_output=True, text=True).stdout)
        assert build_id_from_elf(data) == expected
    assert build_id_from_elf(b"not an elf" * 10) is None
    with pytest.raises(ParseError):
        od_bytes(["zz 01"])


def test_a_container_probe_with_its_state_and_the_workloads_environment() -> None:
    text = ("engine\tpodman\nstate\trunning\nenv\tNCCL_IB_HCA=mlx5_0\npid1\tNCCL_IB_HCA=rocep1s0f1\n"
            "conf\t/etc/nccl.conf\nconfline\t/etc/nccl.conf\tNCCL_IB_GID_INDEX=3\n"
            "ldconfig\t\tlibnccl.so.2 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnccl.so.2\n"
            "lib\t/usr/lib/x86_64-linux-gnu/libnccl.so.2\t/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.9\t190\n"
            "buildid\t/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.9\t    Build ID: c0db9360\n")
    probe = parse_nccl_probe(text)
    assert (probe.engine, probe.state) == ("podman", "running")
    view = view_of(probe, "vllm")
    assert view.settings == {"NCCL_IB_HCA": "rocep1s0f1", "NCCL_IB_GID_INDEX": "3"}
    assert view.setting_sources["NCCL_IB_HCA"] == "environment (PID 1)"
    assert view.library is not None and view.library.version == "2.28.9" and view.library.build_id == "c0db9360"
    assert view.chosen_by == "the loader's cache (ldconfig -p)" and view.where == "container vllm"
    with pytest.raises(ParseError):
        parse_nccl_probe("surprise\tline\n")
