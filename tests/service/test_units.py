"""The shipped systemd units: `systemd-analyze verify` accepts them as shipped and as installed (exit 0 and nothing
on stderr: an unknown key or a bad value only warns), `linkcheck service install --root DIR` writes exactly them and
prints each, `--uninstall` removes exactly them, and a value that would change a unit's meaning is refused."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from linkcheck.service.units import UNIT_DIR, UNITS, UnitSettings, rendered, shipped

if TYPE_CHECKING:
    from tests.conftest import InProcessCli


def _verify(folder: Path) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze is not installed (Debian package systemd)")
    return subprocess.run([tool, "verify", *(f"./{name}" for name in UNITS)], cwd=folder, capture_output=True,
                          text=True, timeout=60)


def test_systemd_analyze_verify_accepts_the_units_as_shipped(tmp_path: Path) -> None:
    for name in UNITS:
        (tmp_path / name).write_text(shipped(name))
    done = _verify(tmp_path)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr


def test_verify_catches_a_misspelt_key_so_the_check_above_can_fail(tmp_path: Path) -> None:
    for name in UNITS:
        (tmp_path / name).write_text(shipped(name).replace("After=network-online.target", "Aftr=network-online.target"))
    done = _verify(tmp_path)
    assert "Aftr" in done.stderr


def test_the_boot_unit_runs_after_the_network_and_only_where_the_configuration_is() -> None:
    boot = shipped("linkcheck-boot.service")
    for line in ("Wants=network-online.target", "After=network-online.target",
                 "ConditionPathExists=/etc/linkcheck/linkcheck.yaml", "User=linkcheck", "ProtectSystem=strict",
                 "ReadWritePaths=-/var/lib/prometheus/node-exporter", "NoNewPrivileges=yes",
                 "WantedBy=multi-user.target", "ExecStart=/usr/bin/env linkcheck service run --boot"):
        assert line in boot.splitlines()
    timer = shipped("linkcheck-check.timer")
    assert "OnUnitActiveSec=5min" in timer and "Unit=linkcheck-check.service" in timer
    assert "--boot" not in shipped("linkcheck-check.service")  # the timer's run sends no traffic


def test_install_writes_exactly_the_units_and_uninstall_removes_exactly_them(cli: InProcessCli,
                                                                             tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / UNIT_DIR).mkdir(parents=True)
    neighbour = root / UNIT_DIR / "other.service"
    neighbour.write_text("[Service]\nExecStart=/bin/true\n")
    result = cli("service", "install", "--root", str(root), "--baseline", "good-pair",
                 "--textfile-dir", "/srv/textfiles")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"wrote {root / UNIT_DIR / name}" for name in UNITS]
    assert sorted(os.listdir(root / UNIT_DIR)) == sorted([*UNITS, "other.service"])
    boot = (root / UNIT_DIR / "linkcheck-boot.service").read_text()
    exec_line = next(line for line in boot.splitlines() if line.startswith("ExecStart="))
    program = exec_line.removeprefix("ExecStart=").split()[0]
    assert os.path.isabs(program) and os.access(program, os.X_OK)
    assert exec_line.endswith("service run --boot --textfile-dir /srv/textfiles --baseline good-pair")
    assert "ReadWritePaths=-/srv/textfiles" in boot
    assert "useradd --system" in result.stderr  # what it leaves to the administrator, said

    done = _verify(root / UNIT_DIR)  # as installed: the ExecStart program exists
    assert (done.returncode, done.stderr) == (0, ""), done.stderr

    result = cli("service", "install", "--root", str(root), "--uninstall")
    assert result.returncode == 0
    assert result.stdout.splitlines() == [f"removed {root / UNIT_DIR / name}" for name in UNITS]
    assert os.listdir(root / UNIT_DIR) == ["other.service"]
    assert cli("service", "install", "--root", str(root), "--uninstall").stdout.strip() == \
        "no linkcheck unit installed there"


def test_install_never_writes_through_a_link_and_uninstall_leaves_one(cli: InProcessCli, tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / UNIT_DIR).mkdir(parents=True)
    target = tmp_path / "elsewhere"
    (root / UNIT_DIR / "linkcheck-boot.service").symlink_to(target)
    result = cli("service", "install", "--root", str(root))
    assert result.returncode == 74 and "symbolic link" in result.stderr
    assert not target.exists()
    result = cli("service", "install", "--root", str(root), "--uninstall")
    assert result.returncode == 74 and (root / UNIT_DIR / "linkcheck-boot.service").is_symlink()


@pytest.mark.parametrize("option", [("--baseline", "x%n"), ("--baseline", "a\nExecStartPre=/bin/sh"),
                                    ("--textfile-dir", "relative/dir"), ("--config", "/etc/$HOME/l.yaml")])
def test_a_value_that_would_change_the_unit_is_refused(cli: InProcessCli, tmp_path: Path,
                                                       option: tuple[str, str]) -> None:
    result = cli("service", "install", "--root", str(tmp_path), *option)
    assert result.returncode == 4 and result.stderr.count("\n") == 1, result.stderr
    assert not (tmp_path / UNIT_DIR).exists()


def test_rendering_keeps_the_shipped_defaults_when_none_is_given() -> None:
    settings = UnitSettings(linkcheck="/opt/lc/bin/linkcheck")
    text = rendered("linkcheck-check.service", settings)
    assert "ExecStart=/opt/lc/bin/linkcheck service run\n" in text
    assert text.replace("/opt/lc/bin/linkcheck", "/usr/bin/env linkcheck") == shipped("linkcheck-check.service")
