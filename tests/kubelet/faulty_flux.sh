#!/usr/bin/env bash
# Real Flux with faults injected: a test's MiniCluster sets fluxPath to this file, placed in a claim
# beside the files that say which calls fail (tests/kubelet/faults.py). Every call runs real flux
# (/opt/flux/bin/flux, where the image has it: tests/kubelet/image.py), except those a fault file names:
#   <dir>/<subcommand>[-<second word>]  one token per call, taken in order, then real flux again:
#     0        this call runs real flux
#     ignored  this call does nothing and exits 0 (a request Flux took and never acted on)
#     N        this call prints "injected fault" on stderr and exits N, as a failing flux would
#     slow:S   this call runs real flux after S seconds (a broker slow to answer)
# The two-word name (resource-drain) is looked up before the one-word one (jobs).
set -euo pipefail

faults=$(dirname "$0")
real=/opt/flux/bin/flux
for name in "${1:-}-${2:-}" "${1:-}"; do
  [[ -f $faults/$name ]] || continue
  exec {held}>>"$faults/.lock"
  flock "$held"
  read -r token rest <"$faults/$name" || token=""
  if [[ -n ${rest:-} ]]; then printf '%s\n' "$rest" >"$faults/$name"; else rm -f "$faults/$name"; fi
  exec {held}>&-
  case ${token:-0} in
    0) ;;
    ignored) exit 0 ;;
    slow:*) sleep "${token#slow:}" ;;
    *) printf 'flux-%s: injected fault\n' "$1" >&2 && exit "$token" ;;
  esac
  break
done
exec "$real" "$@"
