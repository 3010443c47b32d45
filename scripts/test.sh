#!/usr/bin/env bash
# Set up everything the test suite needs on a fresh Debian 12 machine, then run lint, types and tests.
# As root it installs the Debian packages the lab and the parser tests use (real sshd, iproute2,
# ethtool, netplan, perftest, iptables, shellcheck); as a normal user the lab tests skip with a reason.
set -euo pipefail
cd "$(dirname "$0")/.."

DEBS=(openssh-server openssh-client iproute2 ethtool netplan.io perftest procps util-linux iputils-ping openmpi-bin iptables shellcheck chromium podman crun gcc libc6-dev binutils)
if [ "$(id -u)" = 0 ]; then
  missing=()
  for p in "${DEBS[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
# [html] brings matplotlib, so the HTML report's plots are tested too; chromium (above) renders that page.
.venv/bin/python -m pip install -q -e '.[test,html]'

# The inspection script every node runs (POSIX sh); as root shellcheck was installed above.
if [ "$(id -u)" = 0 ] || command -v shellcheck >/dev/null 2>&1; then
  shellcheck linkcheck/collect/inspect.sh && shellcheck -s sh linkcheck/collect/nccl_probe.sh
else
  echo "scripts/test.sh: shellcheck is not installed, linkcheck/collect/inspect.sh not checked" >&2
fi
.venv/bin/ruff check .
.venv/bin/mypy
# One worker per CPU. Labs on two workers run side by side: each takes its own addresses under the lab lock
# (tests/lab/mgmt.py) and its own namespaces, and mostly waits on ib_write_bw's -D and sshd. `-n 0` after it runs
# in one process. The slowest tests are listed at the end: the lab tests set the suite's wall time.
.venv/bin/python -m pytest -n auto --durations=20 "$@"
