#!/usr/bin/env bash
# Rank 0's initial program (`flux start ... bash instance.sh`) for what needs more than one command:
# the batch job, the interactive command, the Flux RESTful API; and for a secret command, whose words
# Flux would log as its initial program's. It runs inside the instance, with the entrypoint's
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

# A secret command (`pulumi config set --secret minicluster:command`) in submit or launcher mode: what
# the entrypoint would give flux start, run from here, where nothing logs its words.
run_secret_command() {
  local -a command submit
  if [[ $MC_MODE == launcher ]]; then
    read_words command command.args
    exec "${command[@]}"
  fi
  submit_command submit
  exec "${submit[@]}"
}

if [[ -n ${MC_RESTFUL_PORT?} ]]; then run_restful_api; fi
case ${MC_MODE:?} in
  batch) run_batch ;;
  interactive) run_interactive ;;
  submit | launcher) run_secret_command ;;
  *) die "instance.sh is for batch, interactive and secret commands, not mode '$MC_MODE'" ;;
esac
