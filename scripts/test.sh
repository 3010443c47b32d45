#!/usr/bin/env bash
# Set up everything the test suite needs on a fresh Debian 12 machine, then run lint, types and tests.
# As root it installs the Debian packages the lab and the parser tests use (real sshd, iproute2,
# ethtool, netplan, perftest, iptables, shellcheck); as a normal user the lab tests skip with a reason.
set -euo pipefail
cd "$(dirname "$0")/.."

# network-manager and dbus: the real NetworkManager in lab nodes (tests/lab/nm_daemon.py); systemd-container and
# mmdebstrap: the real renderer tier (tests/lab/nspawn.py), whose container root is built below.
DEBS=(openssh-server openssh-client iproute2 ethtool netplan.io perftest procps util-linux iputils-ping openmpi-bin iptables shellcheck chromium podman crun gcc libc6-dev binutils network-manager dbus systemd-container mmdebstrap)
if [ "$(id -u)" = 0 ]; then
  missing=()
  for p in "${DEBS[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq
    # Where systemd is PID 1, network-manager's postinst would start NetworkManager on this machine and let it manage
    # its interfaces: a policy-rc.d refusing every start while installing, then the service masked.
    guard=""
    if [ -d /run/systemd/system ] && [ ! -e /usr/sbin/policy-rc.d ]; then
      guard=/usr/sbin/policy-rc.d
      printf '#!/bin/sh\nexit 101\n' > "$guard" && chmod 755 "$guard"
    fi
    rc=0
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || rc=$?
    if [ -n "$guard" ]; then
      rm -f "$guard"
      systemctl mask --now NetworkManager.service >/dev/null 2>&1 || true
    fi
    [ "$rc" = 0 ] || exit "$rc"
  fi
fi

# Monitoring: Debian's prometheus (with promtool) and prometheus-node-exporter, their binaries extracted under
# .monitoring/ (never installed: a postinst would enable and, where systemd is PID 1, start both services). The
# tests find them on PATH and skip without them; promtool checks the shipped alerting rules here.
MONITORING_DEBS=(prometheus prometheus-node-exporter)
if [ "$(id -u)" = 0 ] && [ ! -x .monitoring/usr/bin/promtool ]; then
  rm -rf .monitoring.tmp && mkdir -p .monitoring.tmp
  fetch() { (cd .monitoring.tmp && apt-get download -qq "${MONITORING_DEBS[@]}" 2>/dev/null); }
  if { fetch || { apt-get update -qq && fetch; }; } \
      && (cd .monitoring.tmp && for f in *.deb; do dpkg-deb -x "$f" .; done && rm -f ./*.deb); then
    rm -rf .monitoring && mv .monitoring.tmp .monitoring
  else
    rm -rf .monitoring.tmp && echo "scripts/test.sh: could not download ${MONITORING_DEBS[*]}" >&2
  fi
fi
if [ -d .monitoring/usr/bin ]; then export PATH="$PWD/.monitoring/usr/bin:$PATH"; fi
if command -v promtool >/dev/null 2>&1; then
  promtool check rules linkcheck/service/monitoring/linkcheck.rules.yml
else
  echo "scripts/test.sh: promtool is not installed, the alerting rules not checked" >&2
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
# Two parts, each timed: everything but the lab (the quick loop, `pytest` without options), then the lab tests
# (`-m lab`: real sshd in network namespaces). One worker per CPU, two in the lab. Labs on workers run side by side:
# each takes its own addresses under the lab lock (tests/lab/mgmt.py) and its own namespaces, and mostly waits on
# ib_write_bw's -D and sshd. `-n 0` after it runs in one process. pytest's exit 5 (no test selected) fails a part:
# a part that selects nothing has lost its tests.
if [ "$(id -u)" = 0 ]; then  # as root the lab must run: a skip here would pass CI with no lab test run
  .venv/bin/python -c 'import sys; from tests.lab.pytest_plugin import lab_skip_reason as why
sys.exit(why() and f"scripts/test.sh: running as root, yet the lab cannot run: {why()}")'
fi
# The real renderer tier's container root (Debian 12 with netplan, networkd and NetworkManager), built once into
# /var/cache/linkcheck-lab and reused; without it those lab tests skip with the reason.
if [ "$(id -u)" = 0 ]; then
  scripts/lab-nspawn-root.sh || echo "scripts/test.sh: the real renderer tier's root could not be built" >&2
fi
status=0
part() {
  local name=$1 workers=$2 start=$SECONDS rc=0
  shift 2
  .venv/bin/python -m pytest -n "$workers" --durations=15 "$@" || rc=$?
  [ "$rc" = 5 ] && echo "scripts/test.sh: the $name part selected no test" >&2
  timings+=("$name: $((SECONDS - start)) s (pytest exit $rc)")
  [ "$rc" = 0 ] || status=1
}
timings=()
part "not lab" auto "$@"
# The lab mostly sleeps (ib_write_bw's -D, sshd, NetworkManager's timers: the load stays near 1.5 on 2 CPUs with one
# worker per CPU), so it runs two workers per CPU; each worker keeps its xdist_group's shared labs to itself.
part "lab" $((2 * $(nproc))) -m lab "$@"
printf 'scripts/test.sh: %s\n' "${timings[@]}"
exit $status
