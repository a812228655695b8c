#!/usr/bin/env bash
# A worker broker's rc1 and rc3 (its broker.rc1_path and rc3_path, set by the entrypoint on ranks above
# 0): what Flux's own `flux modprobe rc1|rc3` does on such a rank, with Flux's C commands.
#
# Usage: worker_rc.sh 1|3        run by the broker, with its FLUX_URI
#
# Why: flux modprobe is a Python program that imports Flux's bindings and plans from its module tables
# before it loads anything: about 0.1 s of CPU on every worker's way into the instance and out of it,
# on a worker that only loads a fixed set of modules. All of a MiniCluster's pods pay it at once.
#
# The short way is taken only where it is exactly what modprobe would do there: Flux of the version whose
# plan MC_WORKER_MODULES is (MC_WORKER_RC_FLUX; the Job sets both, empty where the stack's broker config
# could change the plan), rc paths that are Flux's modprobe, and no module table, rc script or search
# path beyond Flux's own. Anywhere else this runs Flux's own rc. Either way, its rc3 first asks whether
# rank 0 is still there (mark_if_rank0_is_gone), and its rc1 ends by reading the KVS (hold_kvs_root).

set -euo pipefail
level=${1:?usage: worker_rc.sh 1|3}
flux=${MC_FLUX:?}
read -ra modules <<<"${MC_WORKER_MODULES?}"
own_rc=$("$flux" config builtin "rc${level}_path") # Flux's own rc, a command line: "flux modprobe rc1"

# Flux's own rc, its flux this pod's (MC_FLUX), wherever PATH points.
flux_own() {
  local -a own
  read -ra own <<<"$own_rc"
  if [[ ${own[0]} == flux ]]; then own[0]=$flux; fi
  "${own[@]}"
}

# Files that would add to modprobe's plan or run as rc scripts (nullglob: none is an empty list).
site_additions() {
  local confdir datadir libexecdir
  confdir=$("$flux" config builtin confdir)
  datadir=$("$flux" config builtin datadir)
  libexecdir=$("$flux" config builtin libexecdir)
  shopt -s nullglob
  local -a found=(
    "$datadir"/modprobe/modprobe.d/*.toml "$confdir"/modprobe/modprobe.d/*.toml
    "$libexecdir"/modprobe/rc"$level".d/*.py "$confdir"/modprobe/rc"$level".d/*.py "$confdir"/rc"$level".d/*
  )
  shopt -u nullglob
  ((${#found[@]} > 0))
}

short_way_applies() {
  local version variable
  ((${#modules[@]} > 0)) || return 1
  for variable in FLUX_MODPROBE_PATH FLUX_MODPROBE_PATH_APPEND FLUX_MODPROBE_PATH_PREPEND FLUX_MODPROBE_DISABLE \
    FLUX_RC_EXTRA; do
    [[ -z ${!variable+set} ]] || return 1 # each changes what modprobe loads, or adds rc scripts
  done
  [[ $own_rc == "flux modprobe rc${level}" ]] || return 1
  version=$("$flux" version)
  [[ $version =~ commands:[[:space:]]+([^[:space:]]+) && ${BASH_REMATCH[1]} == "${MC_WORKER_RC_FLUX:?}"* ]] || return 1
  ! site_additions
}

# A worker's broker leaves the instance with exit status 0 whenever its parent shuts down, and then, at
# its rc3, its parent is still up and in that state. That is the instance's end if rank 0 is shutting
# down too; but a worker below another in Flux's tree (tbon.topo) is also shut down when the worker
# above it leaves on its own, having lost rank 0 (killed, and replaced): rank 0 is then out of reach,
# and this broker is marked to rejoin the instance (start_worker, worker.sh) rather than complete its
# pod, which the Job would never run again.
# Only an answer that rank 0 is out of reach marks it: a rank 0 slow to answer (5 s) may be one busy at
# the instance's end, and a worker marked then would wait for a rank 0 that never comes back.
mark_if_rank0_is_gone() {
  local -a ping=("$flux" ping --count=1 0)
  local status=0
  if command -v timeout >/dev/null; then ping=(timeout 5 "${ping[@]}"); fi
  "${ping[@]}" >/dev/null 2>&1 || status=$?
  if ((status != 0 && status != 124)); then touch "${MC_REJOIN_MARK:?}"; fi # 124: timeout's, no answer
}

# A worker's KVS takes the primary namespace's root from the broker above it when it is first asked, and
# only then listens for the commits that change it (flux-core 0.88's kvs module): a commit that lands in
# between is missed, and this rank reads the older root until the next commit
# (tests/realflux/test_real_flux_kvs.py). Asked here, the first time is before this rank is online, so
# before any job can run on it: asked first by the undrain (worker.sh) just as rank 0 started a batch
# job, the commit missed was the one of the job's R, and the job's shell on this rank failed, not
# finding it. A worker whose site's module table loads no KVS has none to hold.
hold_kvs_root() {
  "$flux" kvs version >/dev/null 2>&1 || :
}

if ((level == 3)); then mark_if_rank0_is_gone; fi
if ! short_way_applies; then
  flux_own
elif ((level == 1)); then
  for module in "${modules[@]}"; do "$flux" module load "$module"; done
else
  for ((i = ${#modules[@]} - 1; i >= 0; i--)); do "$flux" module remove -f "${modules[i]}"; done
fi
if ((level == 1)); then hold_kvs_root; fi
