#!/bin/sh
# Build, once, the Debian 12 root that the lab's "real renderer" tier boots with systemd-nspawn inside a node's
# network namespace (tests/lab/nspawn.py): systemd as PID 1, the real netplan.io 0.106, systemd-networkd and
# NetworkManager 1.42, as /work/shared/design/real-daemons.md s.2.5 proved. About 35 s and 322 MB; later runs
# find it and return at once. The root is only ever booted with --volatile=overlay, so it stays as built.
# Usage: scripts/lab-nspawn-root.sh [DIR]   (default $LINKCHECK_LAB_NSPAWN_ROOT or /var/cache/linkcheck-lab/nspawn-root)
set -eu
ROOT=${1:-${LINKCHECK_LAB_NSPAWN_ROOT:-/var/cache/linkcheck-lab/nspawn-root}}
if [ -x "$ROOT/usr/sbin/netplan" ] && [ -f "$ROOT/.linkcheck-lab-root" ]; then exit 0; fi
if [ "$(id -u)" != 0 ]; then echo "lab-nspawn-root.sh: needs root" >&2; exit 1; fi
command -v mmdebstrap >/dev/null || { echo "lab-nspawn-root.sh: mmdebstrap is not installed" >&2; exit 1; }
mkdir -p "$(dirname "$ROOT")"
TMP="$ROOT.tmp.$$"
trap 'rm -rf "$TMP"' EXIT INT TERM
# The host's own Debian sources (a deb822 file on Debian 12), so the root comes from the mirror this machine uses.
SOURCES=/etc/apt/sources.list.d/debian.sources
[ -f "$SOURCES" ] || SOURCES=/etc/apt/sources.list
mmdebstrap --quiet --mode=root --variant=minbase --aptopt='APT::Install-Recommends "false"' \
  --include=systemd,systemd-sysv,dbus,netplan.io,network-manager,iproute2,iputils-ping \
  bookworm "$TMP" - < "$SOURCES"
touch "$TMP/.linkcheck-lab-root"
rm -rf "$ROOT" && mv "$TMP" "$ROOT"
trap - EXIT INT TERM
