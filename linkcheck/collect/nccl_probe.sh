# shellcheck shell=sh
# What NCCL a process started here would load, and with which settings. Run on a node itself ($1 = host) and inside
# a container through its engine's `exec` ($1 = container). Read-only: it writes no file and leaves no process.
# specs.py puts an lp_globs function (the usual install places) in front of this text.
#
# One line per fact, `tag<TAB>fields`, parsed by linkcheck/parsers/nccl_probe.py:
#   env NAME=VALUE          the environment a process started by `exec` gets (NCCL_*, LD_LIBRARY_PATH, LD_PRELOAD)
#   pid1 NAME=VALUE         the same of PID 1, the workload's own (an entrypoint may export what `exec` never sees)
#   conf PATH / confline PATH LINE   the nccl.conf files in NCCL's order (src/misc/param.cc initEnvFunc)
#   ldconfig LINE           `ldconfig -p`'s libnccl lines (the loader's cache)
#   lib PATH REALPATH SIZE  a libnccl.so* or libnccl-net*.so file found, its target and size in bytes
#   dist LIBPATH DIR        the pip wheel's dist-info folder beside a wheel's nvidia/nccl/lib (its version)
#   version REALPATH TEXT   the "NCCL version" string inside a library whose name and wheel say no version
#   buildid REALPATH LINE   readelf -n's Build ID line, or, without readelf:
#   elf REALPATH HEXLINE    od's dump of its first 4096 bytes (the caller reads the GNU build-id note in it)
#   mapped PATH             a libnccl file some process here has mapped (/proc/PID/maps): what a job loaded
lp_mode=${1:-host}
lp_vars='^(NCCL_[A-Za-z0-9_]*|LD_LIBRARY_PATH|LD_PRELOAD)='
lp_tag() {  # $1 tag, then lines on stdin: each printed behind the tag
  while IFS= read -r lp_l; do printf '%s\t%s\n' "$1" "$lp_l"; done
}
env | grep -E "$lp_vars" | lp_tag env
if [ "$lp_mode" = container ] && [ -r /proc/1/environ ]; then
  tr '\000' '\n' </proc/1/environ 2>/dev/null | grep -E "$lp_vars" | lp_tag pid1
fi
lp_conf() {
  [ -f "$1" ] && [ -r "$1" ] || return 0
  printf 'conf\t%s\n' "$1"
  while IFS= read -r lp_l || [ -n "$lp_l" ]; do printf 'confline\t%s\t%s\n' "$1" "$lp_l"; done <"$1"
}
if [ -n "${NCCL_CONF_FILE:-}" ]; then lp_conf "$NCCL_CONF_FILE"; elif [ -n "${HOME:-}" ]; then lp_conf "$HOME/.nccl.conf"; fi
lp_conf /etc/nccl.conf
lp_ldc=$(command -v ldconfig 2>/dev/null) || lp_ldc=/sbin/ldconfig
lp_cache=$("$lp_ldc" -p 2>/dev/null | grep libnccl)
[ -z "$lp_cache" ] || printf '%s\n' "$lp_cache" | lp_tag ldconfig
# Every candidate: the loader's cache, the LD_LIBRARY_PATH folders (this environment's and PID 1's), the usual
# places (lp_globs), and in a container every file of the image itself (find -xdev: not the mounted volumes).
lp_candidates() {
  printf '%s\n' "$lp_cache" | sed -n 's/.*=> //p'
  lp_dirs=$(env | sed -n 's/^LD_LIBRARY_PATH=//p')
  if [ "$lp_mode" = container ] && [ -r /proc/1/environ ]; then
    lp_dirs="$lp_dirs:$(tr '\000' '\n' </proc/1/environ 2>/dev/null | sed -n 's/^LD_LIBRARY_PATH=//p')"
  fi
  lp_ifs=$IFS; IFS=:
  for lp_d in $lp_dirs; do
    for lp_f in "$lp_d"/libnccl.so* "$lp_d"/libnccl-net*.so*; do [ -e "$lp_f" ] && printf '%s\n' "$lp_f"; done
  done
  IFS=$lp_ifs
  lp_globs
  if [ "$lp_mode" = container ] && command -v find >/dev/null 2>&1; then
    find / -xdev \( -name 'libnccl.so*' -o -name 'libnccl-net*.so*' \) 2>/dev/null
  fi
}
lp_seen=' '
lp_candidates | sort -u | while IFS= read -r lp_f; do
  [ -e "$lp_f" ] || continue
  lp_real=$(readlink -f "$lp_f" 2>/dev/null) || lp_real=$lp_f
  lp_size=$(stat -L -c %s "$lp_f" 2>/dev/null) || lp_size=$(wc -c <"$lp_f" 2>/dev/null) || lp_size=
  printf 'lib\t%s\t%s\t%s\n' "$lp_f" "$lp_real" "$lp_size"
  case $lp_f in */nvidia/nccl/lib/*)
    for lp_d in "${lp_f%/nvidia/nccl/lib/*}"/nvidia_nccl*.dist-info; do
      [ -d "$lp_d" ] && printf 'dist\t%s\t%s\n' "$lp_f" "$lp_d"
    done;;
  esac
  case $lp_seen in *" $lp_real "*) continue;; esac
  lp_seen="$lp_seen$lp_real "
  case ${lp_real##*/}:$lp_f in
    libnccl.so.[0-9]*.[0-9]*.[0-9]*:*|*:*/nvidia/nccl/lib/*) ;;
    *) lp_v=$(grep -a -o -m 1 'NCCL version [0-9][0-9.]*[+a-z0-9.]*' "$lp_real" 2>/dev/null | head -n 1)
       [ -z "$lp_v" ] || printf 'version\t%s\t%s\n' "$lp_real" "$lp_v";;
  esac
  if command -v readelf >/dev/null 2>&1; then
    readelf -n "$lp_real" 2>/dev/null | grep 'Build ID' | lp_tag "buildid	$lp_real"
  else
    od -An -tx1 -v -N 4096 "$lp_real" 2>/dev/null | lp_tag "elf	$lp_real"
  fi
done
grep -h -o '/[^ ]*libnccl[^ ]*' /proc/[0-9]*/maps 2>/dev/null | sort -u | lp_tag mapped
true
