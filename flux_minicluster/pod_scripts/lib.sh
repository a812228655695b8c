# shellcheck shell=bash disable=SC2034 # its variables are the sourcing script's
# What every MiniCluster script shares: its log lines, reading the mounted files, Flux on the paths.
# Sourced, never run. Every MC_* variable is set by the Job (flux_minicluster/builders/files.py) and required
# here: a script never guesses a default of its own.

flux=${MC_FLUX:?}
run_config=${MC_RUN_CONFIG_DIR:?}
state=${MC_STATE_DIR:?}
local_uri=${MC_LOCAL_URI:?} # where this pod's broker listens (its FLUX_URI)
rank=${MC_RANK:-} # found by the entrypoint (find_rank), and inherited by rank 0's initial program

log() {
  if [[ ${MC_QUIET:?} != true ]]; then printf '%s[rank %s]: %s\n' "${MC_LOG_PREFIX:?}" "${rank:-?}" "$*" >&2; fi
}

die() {
  printf '%s[rank %s]: error: %s\n' "${MC_LOG_PREFIX:?}" "${rank:-?}" "$*" >&2
  exit 1
}

# A command that may take 5 s at most, where the image has `timeout` (the grace period bounds it anyway).
# SIGTERM is not enough: `flux exec` passes it on to its tasks and goes on waiting for a rank that is
# gone (a worker killed as rank 0 hands over), so the call is killed a second later.
bounded() {
  local -a limit
  read -ra limit <<<"$(time_limit)"
  "${limit[@]}" "$@"
}

time_limit() {
  if command -v timeout >/dev/null; then printf 'timeout -k 1 5'; fi
}

# Lines of a mounted file into the named array; a missing file is an empty list.
# (Namerefs get names no caller uses: `local -n x=x` is a circular reference.)
read_lines() {
  local -n lines_out_=$1
  lines_out_=()
  # shellcheck disable=SC2034 # a nameref: this fills the caller's array
  if [[ -f $run_config/$2 ]]; then mapfile -t lines_out_ <"$run_config/$2"; fi
}

# Words of a mounted file into the named array: a word a line, each read back with printf %b, which
# undoes what builders/files.py wrote (backslashes doubled, a word's line breaks as \n).
read_words() {
  local -n words_out_=$1
  local -a lines_
  local line_
  read_lines lines_ "$2"
  words_out_=()
  for line_ in "${lines_[@]}"; do
    printf -v line_ '%b' "$line_"
    words_out_+=("$line_")
  done
}

# Flux copied in by the flux-view init container (MC_FLUX_VIEW): appended to the paths, so that the
# application image's own software wins where both have it.
use_flux_view() {
  local view=${MC_FLUX_VIEW?} site
  [[ -n $view ]] || return 0
  export PATH="$PATH:$view/view/bin"
  export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$view/view/lib"
  for site in "$view"/view/lib/python3*/site-packages; do
    if [[ -d $site ]]; then export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$site"; fi
  done
}

# Flux refuses more nodes than tasks: spread over every node only when there is a task for each.
task_layout() {
  local -n layout_out_=$1
  # shellcheck disable=SC2034 # a nameref: this fills the caller's array
  if ((${MC_TASKS:?} >= ${MC_SIZE:?})); then
    layout_out_=(-N"$MC_SIZE" -n"$MC_TASKS")
  else
    layout_out_=(-n"$MC_TASKS")
  fi
}

# The command's `flux submit --watch` (submit and interactive modes, a secret command's too): the task
# layout, the submit flags and the command's words, into the named array.
submit_command() {
  local -n submit_out_=$1
  local -a command_words_ flags_ layout_
  read_words command_words_ command.args
  read_words flags_ submit.flags
  task_layout layout_
  # shellcheck disable=SC2034 # a nameref: this fills the caller's array
  submit_out_=("${flux:?}" submit --watch "${layout_[@]}" "${flags_[@]}" "${command_words_[@]}")
}

# The flux view's files link into MC_VIEW_SOFTWARE, which its init container could only copy alongside.
# (Under securityProfile restricted the pod mounts them there itself: nothing to copy.)
restore_view_software() {
  local software=$MC_FLUX_VIEW/software target=${MC_VIEW_SOFTWARE?}
  [[ -n $MC_FLUX_VIEW && -d $software ]] || return 0
  if [[ $target -ef $software ]]; then return 0; fi
  if ! { mkdir -p "$target" && cp -R "$software/." "$target/"; }; then
    log "could not restore $target from the flux view (not root?); view programs may fail"
  fi
}

# A wait of $1 seconds with bash's own read timeout, not a process: for the loops that run beside every
# broker. The descriptor is opened once per shell, and nothing is ever written to it.
nap() {
  if [[ -z ${nap_idle-} ]]; then exec {nap_idle}<> <(:); fi
  read -rt "$1" -u "$nap_idle" || true
}

# A sleep that SIGTERM cuts short.
pause() {
  local pid
  sleep "$1" &
  pid=$!
  wait "$pid" || kill "$pid" 2>/dev/null || true
}

# A process and every process under it, SIGKILLed at once (the pids in `killed`): its descendants, and
# its session's other processes where it leads one (a broker: run_broker, entrypoint.sh), which stay in
# it when their parent is gone; so this also ends what a broker that ended on its own left behind. Each
# one found is stopped first, so that none starts another unseen while /proc is read; the read repeats
# until it finds no more (a child may come before its parent in /proc's order). Builtins only: no ps or
# pkill in every image.
kill_tree() {
  local -A in_tree=(["$1"]=1)
  local stat fields pid ppid session found=true
  killed=()
  if kill -STOP "$1" 2>/dev/null; then killed=("$1"); fi # gone already: its session may outlive it
  while [[ $found == true ]]; do
    found=false
    for stat in /proc/[0-9]*/stat; do
      read -r fields 2>/dev/null <"$stat" || continue # it ended meanwhile
      pid=${fields%% *}
      fields=${fields##*) } # past the command's name, which may hold spaces: "STATE PPID PGRP SESSION ..."
      fields=${fields#* }
      ppid=${fields%% *}
      fields=${fields#* * }
      session=${fields%% *}
      if [[ (-n ${in_tree[$ppid]-} || -n ${in_tree[$session]-}) && -z ${in_tree[$pid]-} ]]; then
        in_tree[$pid]=1
        killed+=("$pid")
        found=true
        kill -STOP "$pid" 2>/dev/null || true
      fi
    done
  done
  if ((${#killed[@]})); then kill -KILL "${killed[@]}" 2>/dev/null || true; fi
}
