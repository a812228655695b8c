# shellcheck shell=bash disable=SC2154 # lib.sh's variables
# How the entrypoint runs the user's hooks (init.sh, pre.sh and post.sh beside it). Sourced by the
# entrypoint after lib.sh, never run.

# Hooks are user shell snippets, each run by a bash of its own, so that its `exit`, options and
# variables cannot break the entrypoint. What it exports comes back (adopt_environment), and so
# reaches the broker and the command: `export OMP_NUM_THREADS=4`, `source setup-env.sh && spack load
# lammps`, as when the flux-operator pastes its commands into its entrypoint. Under strict logging they
# run strict too, and a failure stops the pod.
run_hook() {
  local hook=$run_config/$1.sh status=0 exported
  local -a shell=(bash)
  [[ -f $hook ]] || return 0
  log "running the $1 hook"
  if [[ $MC_STRICT == true ]]; then shell=(bash -euo pipefail); fi
  if ! exported=$(mktemp 2>/dev/null); then # a read-only /tmp: the hook runs, its exports stay its own
    log "no file to keep what the $1 hook exports (mktemp failed): the broker does not get it"
    exported=
  fi
  # shellcheck disable=SC2016 # the inner bash expands them: $0 is the file, $1 the hook
  "${shell[@]}" -c 'trap "[[ -z \$0 ]] || env -0 >\"\$0\" || :" EXIT; source "$1"' "$exported" "$hook" || status=$?
  if ((status != 0)) && [[ $MC_STRICT == true ]]; then die "the $1 hook failed with status $status"; fi
  if ((status != 0)); then log "the $1 hook failed with status $status (continuing; set logging.strict to stop)"; fi
  if [[ -n $exported ]]; then
    adopt_environment "$exported"
    rm -f "$exported"
  fi
}

# The variables in `env -0`'s listing $1 that are new or changed, exported here: not the shell's own,
# not the entrypoint's settings (MC_*), not an exported function (BASH_FUNC_name%%).
adopt_environment() {
  local entry name
  while IFS= read -r -d '' entry; do
    name=${entry%%=*}
    [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
    case $name in MC_* | PWD | OLDPWD | SHLVL | _) continue ;; esac
    if [[ ${!name-} != "${entry#*=}" ]]; then export "$name=${entry#*=}"; fi
  done <"$1"
}
