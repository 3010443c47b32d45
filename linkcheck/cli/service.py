"""`linkcheck service`: install the systemd units that check the link after boot and every few minutes, and the
run they start (docs/service.md)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from linkcheck.cli.common import out, quiet_libraries, say
from linkcheck.errors import UsageError
from linkcheck.service.run import RunSettings, service_run
from linkcheck.service.units import DEFAULT_CONFIG, DEFAULT_TEXTFILE_DIR, install, settings_for, uninstall

ConfigPathOpt = Annotated[Path, typer.Option("--config", "-c", help="The configuration the service checks.")]
TextfileDirOpt = Annotated[Path, typer.Option(
    "--textfile-dir", help="node_exporter's textfile folder (--collector.textfile.directory).")]
ServiceBaselineOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "--baseline", help="The saved baseline every run compares with (a name from `linkcheck baseline list`).")]

NEXT_STEPS = """next, as root (linkcheck changes nothing else):
  useradd --system --home-dir /var/lib/linkcheck --shell /usr/sbin/nologin linkcheck
  install -d -o linkcheck -g linkcheck -m 0700 /var/lib/linkcheck /var/lib/linkcheck/.ssh   # its key, known_hosts
  chgrp linkcheck {textfile_dir} && chmod g+w {textfile_dir}   # the textfiles
  systemctl daemon-reload && systemctl enable linkcheck-boot.service linkcheck-check.timer"""


def _program() -> str:
    """The absolute path of the linkcheck program that runs now: as started, else the one beside this Python (a
    virtual environment's), else the one on PATH."""
    started = sys.argv[0]
    if os.sep in started and os.path.basename(started) == "linkcheck" and os.access(started, os.X_OK):
        return os.path.abspath(started)
    beside = Path(sys.executable).with_name("linkcheck")
    found = str(beside) if os.access(beside, os.X_OK) else shutil.which("linkcheck")
    if found is None:
        raise UsageError("cannot find the linkcheck program to name in the units", fix="install linkcheck first")
    return os.path.abspath(found)


def install_units(
    root: Annotated[Path, typer.Option("--root", help="Install under this folder instead of / (a staging root).")]
    = Path("/"),
    do_uninstall: Annotated[bool, typer.Option("--uninstall", help="Remove the units this command installs, and "
                                               "nothing else.")] = False,
    config: ConfigPathOpt = DEFAULT_CONFIG, textfile_dir: TextfileDirOpt = DEFAULT_TEXTFILE_DIR,
    baseline: ServiceBaselineOpt = None,
) -> None:
    """Write the units (linkcheck-boot.service, linkcheck-check.service and .timer) under ROOT/etc/systemd/system,
    each path printed; --uninstall removes exactly them. Enables and starts nothing."""
    if do_uninstall:
        removed = uninstall(root)
        out("\n".join(f"removed {p}" for p in removed) if removed else "no linkcheck unit installed there")
        return
    written = install(root, settings_for(_program(), config, textfile_dir, baseline))
    out("\n".join(f"wrote {p}" for p in written))
    for line in NEXT_STEPS.format(textfile_dir=textfile_dir).splitlines():
        say(line)


def run(
    boot: Annotated[bool, typer.Option("--boot", help="The run after boot: wait for the nodes (--wait), then "
                                       "check --quick (8 s of traffic); without it, inspection only.")] = False,
    config: ConfigPathOpt = DEFAULT_CONFIG, textfile_dir: TextfileDirOpt = DEFAULT_TEXTFILE_DIR,
    baseline: ServiceBaselineOpt = None,
    bundles: Annotated[Path, typer.Option("--bundles", help="The folder of the runs' bundles.")]
    = Path("/var/lib/linkcheck/bundles"),
    keep: Annotated[int, typer.Option("--keep", min=1, max=100000, help="Bundles kept, the newest.")] = 100,
    wait: Annotated[float, typer.Option("--wait", min=0, max=3600, help="With --boot: seconds to wait for the "
                                        "nodes' SSH ports.")] = 300.0,
    timeout: Annotated[float, typer.Option("--timeout", min=1, max=86400, help="The check's wall time at most, "
                                           "seconds; then it is interrupted as by Ctrl-C.")] = 1800.0,
) -> None:
    """What the units run: wait for the nodes, the check against the baseline (textfile, history, bundle), one
    line per finding on stdout (the journal), the service's textfile, the old bundles removed. Exit: the check's."""
    quiet_libraries()
    code = service_run(RunSettings(config=config, textfile_dir=textfile_dir, bundles=bundles, baseline=baseline,
                                    boot=boot, keep=keep, wait_s=wait, timeout_s=timeout), out)
    raise typer.Exit(code)

