# shellcheck shell=sh
# linkcheck inspection script: one fenced section per command, then a DONE sentinel (see script.py).
#
# Fed to `sh -s` on stdin after one `set --` line that carries the run's values as positional parameters:
#   TOKEN TIMEOUT_S KILL_GRACE_S, then four words per spec: ID SCOPE HOW COMMAND
# SCOPE is `-` (once per node), `netdev` (once per ConnectX-7 interface, which the command gets as "$1") or
# `container` (once per container named in lc_containers, the line ahead of `set --`; the name is "$1");
# HOW is `x` (plain words, run as they are), `xa` (the same, with the interface as a last argument) or
# `c` (shell syntax, run through sh -c).
#
# Kept POSIX (dash, busybox): DGX OS runs /bin/sh = dash. Every command gets /dev/null as stdin,
# because sh is reading this very script from its stdin and a command that read it would eat the rest.
LC_ALL=C; export LC_ALL
PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"; export PATH
lc_tok=$1 lc_to_s=$2 lc_grace=$3
case $lc_tok:$lc_to_s:$lc_grace in
  *[!0-9a-f:]*|:*|*::*|*:) echo 'linkcheck: bad token or timeouts' >&2; exit 64;;
esac
shift 3
lc_n=0
# The sections' files go to memory (/dev/shm) unless TMPDIR says where: a run creates ~200 small files,
# and on a disk-backed /tmp each one costs a journal update (3x the whole script's time in the lab).
lc_dir=/tmp
if [ -n "${TMPDIR:-}" ]; then lc_dir=$TMPDIR; elif [ -d /dev/shm ] && [ -w /dev/shm ]; then lc_dir=/dev/shm; fi
lc_tmp=$(mktemp -d "$lc_dir/linkcheck.XXXXXX" 2>/dev/null || mktemp -d /tmp/linkcheck.XXXXXX) ||
  { echo 'linkcheck: mktemp -d failed' >&2; exit 70; }
trap 'rm -rf "$lc_tmp"' EXIT
# On a hang-up or a dead connection, end the running commands by PID (each `timeout` leads its own
# process group) before leaving, so nothing of ours outlives the session.
lc_abort() {
  for lc_p in "$lc_tmp"/*.pid; do
    lc_q=; read -r lc_q 2>/dev/null <"$lc_p"
    case $lc_q in ''|*[!0-9]*) continue;; esac
    kill -TERM "-$lc_q" 2>/dev/null || kill -TERM "$lc_q" 2>/dev/null
  done
  exit "$1"
}
trap 'lc_abort 129' HUP
trap 'lc_abort 130' INT
trap 'lc_abort 141' PIPE
trap 'lc_abort 143' TERM
if command -v timeout >/dev/null 2>&1; then lc_to="timeout -k $lc_grace $lc_to_s"; else lc_to=; fi
# Timestamps come from /proc/uptime through the `read` builtin (centiseconds): no process per reading.
lc_cs() {
  lc_up=; read -r lc_up _ 2>/dev/null </proc/uptime
  case $lc_up in *[0-9].[0-9][0-9]) lc_v=${lc_up%.*}${lc_up#*.};; *) lc_v=;; esac
}
# Every command starts at once in the background, into its own files; its section (markers included)
# is complete on disk when its subshell ends. The sections are then printed in a fixed order, each as
# soon as its command is done, so a connection lost half-way still leaves the sections printed before
# it. Nothing polls: `wait` on each subshell's PID blocks until that command is done.
printf '@@LC %s STDERR\n' "$lc_tok" >"$lc_tmp/m"
lc_end() {  # $1 spec, $2 arg, $3 exit status, $4 start time: the section's files are complete
  lc_cs
  case $4$lc_v in *[!0-9]*|'') lc_dt=0;; *) lc_dt=$(( (lc_v - $4) * 10 ));; esac
  echo >>"$lc_j.out"; echo >>"$lc_j.err"
  printf '@@LC %s END %s %s rc=%s ms=%s\n' "$lc_tok" "$1" "$2" "$3" "$lc_dt" >"$lc_j.e"
  : >"$lc_j.d"  # created empty once .e is whole: `>file` exists before its content is written
}
lc_run() {  # $1 spec, $2 interface or -, $3 how, $4 command
  lc_n=$(( lc_n + 1 ))
  lc_j="$lc_tmp/$lc_n"
  printf '@@LC %s BEGIN %s %s\n' "$lc_tok" "$1" "$2" >"$lc_j.b"
  lc_cs; lc_t0=$lc_v
  case $3 in x|xa)  # a tool that is not installed (MLNX_OFED's, often) costs no process: 127 as from sh
    if ! command -v "${4%% *}" >/dev/null 2>&1; then
      : >"$lc_j.out"; echo "${4%% *}: not found" >"$lc_j.err"
      lc_end "$1" "$2" 127 "$lc_t0"
      eval "lc_pid_$lc_n="
      return
    fi;;
  esac
  (
    # $lc_to and an x/xa command are split into words on purpose: plain words only (script.py checks).
    # shellcheck disable=SC2086
    case $3 in
      x) $lc_to $4 </dev/null >"$lc_j.out" 2>"$lc_j.err" & ;;
      xa) $lc_to $4 "$2" </dev/null >"$lc_j.out" 2>"$lc_j.err" & ;;
      *) $lc_to sh -c "$4" sh "$2" </dev/null >"$lc_j.out" 2>"$lc_j.err" & ;;
    esac
    echo $! >"$lc_j.pid"
    wait $!
    lc_rc=$?
    : >"$lc_j.pid"  # done: lc_abort must not signal a PID that may be reused by now
    lc_end "$1" "$2" "$lc_rc" "$lc_t0"
  ) &
  eval "lc_pid_$lc_n=\$!"
}
lc_start() {  # $1 the interface, or - for the once-per-node specs; then the spec words (see the top)
  lc_if=$1; shift
  while [ $# -ge 4 ]; do
    case $2:$lc_if in
      -:-) lc_run "$1" - "$3" "$4";;
      -:*|netdev:-) ;;
      netdev:*) lc_run "$1" "$lc_if" "$3" "$4";;
    esac
    shift 4
  done
}
lc_emit() {  # one `cat` prints the section waited for and every later one already complete (its .d file)
  lc_i=1
  while [ "$lc_i" -le "$lc_n" ]; do
    eval "lc_p=\$lc_pid_$lc_i"
    [ -z "$lc_p" ] || wait "$lc_p"
    set --
    while :; do
      lc_j="$lc_tmp/$lc_i"
      set -- "$@" "$lc_j.b" "$lc_j.out" "$lc_tmp/m" "$lc_j.err" "$lc_j.e"
      lc_i=$(( lc_i + 1 ))
      if [ "$lc_i" -gt "$lc_n" ] || [ ! -e "$lc_tmp/$lc_i.d" ]; then break; fi
    done
    cat "$@" || lc_abort 141  # the reader is gone
  done
}
# The containers named on the command line (`lc_containers`, set ahead of this script, names validated by script.py):
# each `container` spec runs once per container, which its command gets as "$1"; lc_start leaves those specs alone.
lc_start_container() {  # $1 the container; then the spec words
  lc_c=$1; shift
  while [ $# -ge 4 ]; do
    [ "$2" != container ] || lc_run "$1" "$lc_c" "$3" "$4"
    shift 4
  done
}
lc_start_containers() {
  # shellcheck disable=SC2154,SC2086  # set on the line ahead of this script; validated names, split on purpose
  for lc_c in ${lc_containers:-}; do lc_start_container "$lc_c" "$@"; done
}
lc_netdevs=
for lc_d in /sys/class/net/*; do
  lc_vendor=; read -r lc_vendor 2>/dev/null <"$lc_d/device/vendor"
  [ "$lc_vendor" = 0x15b3 ] || continue
  lc_d=${lc_d##*/}
  case $lc_d in ''|-|*[!A-Za-z0-9_.:-]*) continue;; esac
  lc_netdevs="$lc_netdevs $lc_d"
done
lc_start - "$@"
for lc_d in $lc_netdevs; do lc_start "$lc_d" "$@"; done
lc_start_containers "$@"
lc_emit
printf '@@LC %s DONE %s\n' "$lc_tok" "$lc_n"
