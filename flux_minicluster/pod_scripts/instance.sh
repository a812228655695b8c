#!/usr/bin/env bash
# Rank 0's initial program (`flux start ... bash instance.sh`) for what needs more than one command:
# the batch job, the interactive command, the Flux RESTful API; for a secret command, whose words
# Flux would log as its initial program's; and for a command the Job runs again after a failure. It runs inside the instance, with the entrypoint's
# environment (MC_RANK, MC_SIZE and FLUX_URI among it); flux start returns its status.

set -o pipefail
if [[ ${MC_STRICT:?} == true ]]; then set -euo pipefail; fi
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "${MC_RUN_CONFIG_DIR:?}/lib.sh"

# The API's code and libraries were put on the api volume by its init container (pod_template.py).
run_restful_api() {
  local dir=${MC_RESTFUL_DIR:?}
  cd "$dir" || die "cannot enter $dir"
  if [[ -d $dir/${MC_RESTFUL_LIBRARIES:?} ]]; then export PYTHONPATH="$dir/$MC_RESTFUL_LIBRARIES${PYTHONPATH:+:$PYTHONPATH}"; fi
  # Signs the API's access tokens: private to this server, new at every start.
  FLUX_TOKEN_SIGNING_KEY=${FLUX_TOKEN_SIGNING_KEY:-$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')}
  export FLUX_TOKEN_SIGNING_KEY
  export FLUX_NUMBER_NODES=${MC_SIZE:?} # the size when this rank 0 started
  python3 app/db/init_db.py init || die "could not create the API's user database"
  log "the Flux RESTful API listens on port $MC_RESTFUL_PORT"
  exec python3 -m uvicorn app.main:app --host=0.0.0.0 --port="$MC_RESTFUL_PORT"
}

# The batch script (written by the builders: each command line submitted, then each job attached to
# in turn) as one `flux batch` job, whose output goes to the KVS: attaching streams it into the log.
run_batch() {
  local jobid
  jobid=$("$flux" batch --output=kvs -N"${MC_SIZE:?}" "$run_config/${MC_BATCH_SCRIPT:?}") || die "flux batch failed"
  log "batch job $jobid submitted"
  if [[ -n ${MC_BATCH_OUTPUT?} ]]; then
    log "keeping a copy of its output in $MC_BATCH_OUTPUT"
    "$flux" job attach "$jobid" 2>&1 | tee -a "$MC_BATCH_OUTPUT"
  else
    "$flux" job attach "$jobid"
  fi
}

# The command, like submit mode; then the instance stays up for the user.
run_interactive() {
  local -a submit
  submit_command submit
  "${submit[@]}" || log "the command exited with status $?"
  log "interactive: the instance stays up; stop it with 'flux shutdown'"
  while :; do sleep 3600; done
}

# The command in submit or launcher mode, what the entrypoint would give flux start, run from here: a
# secret one (`pulumi config set --secret minicluster:command`), where nothing logs its words, and one
# the Job runs again after a failure (below).
run_command() {
  local -a command
  if [[ $MC_MODE == launcher ]]; then
    read_words command command.args
  else
    submit_command command
  fi
  if ((${MC_BACKOFF_LIMIT:?} == 0)); then exec "${command[@]}"; fi
  "${command[@]}" # on a shutdown Flux signals this program's process group, the command with it
}

# With a backoffLimit above 0 the Job runs rank 0 again after a failure. At the instance's end every
# worker completes, and a Job never runs a completed index again: the next rank 0 waited for its
# workers for good. So a failure first marks the workers to rejoin the next run, as a rank 0 that is
# told to stop does (stopping.sh). Where the limit is reached, the Job fails and stops them.
mark_for_the_next_run() {
  log "the command failed (status $1), and the Job runs rank 0 again (backoffLimit $MC_BACKOFF_LIMIT):" \
    "marking the workers to rejoin its next run"
  bounded "$flux" exec -r all touch "${MC_REJOIN_MARK:?}" >/dev/null 2>&1 ||
    log "could not mark every worker to rejoin; those that were not will complete"
}

if [[ -n ${MC_RESTFUL_PORT?} ]]; then run_restful_api; fi
status=0
case ${MC_MODE:?} in
  batch) run_batch || status=$? ;;
  interactive) run_interactive ;;
  submit | launcher) run_command || status=$? ;;
  *) die "instance.sh is for batch, interactive and secret commands, not mode '$MC_MODE'" ;;
esac
if ((status != 0 && MC_BACKOFF_LIMIT > 0)); then mark_for_the_next_run "$status"; fi
exit "$status"
