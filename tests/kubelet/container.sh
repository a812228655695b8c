#!/usr/bin/env bash
# A container of the test kubelet (tests/kubelet/pods.py). It runs as PID 1 of its own PID, mount and
# UTS namespaces, inside its pod's network namespace, and becomes the container's command once it has
# given it what a container runtime gives:
#   - the pod's hostname, and /etc/hosts linked to the pod network's hosts file (which it replaces in
#     one rename at each change: network.py);
#   - the volumes, mounted where the pod spec mounts them (read-only where it says so), over overlays
#     of the host's top-level directories, so that no mount point is ever made on the host;
#   - a /tmp of its own, and a /dev/shm of its own in memory (a runtime gives each pod one);
#   - the user, group and supplementary groups the pod runs as, without privileges, where it says so,
#     and no passwd or group entry for them (as in an image that does not know the pod's user);
# With --gate FILE, it waits there, ready, until the kubelet releases FILE's lock: the containers of a
# cluster's pods then start at one instant, as on nodes that start them in parallel.
# Its environment is the container's: it is passed through untouched.
#
# Usage: container.sh --hostname NAME --dns DIR --scratch DIR [--mount SOURCE TARGET ro|rw]...
#                     [--workdir DIR] [--user UID GID GROUPS] [--gate FILE] -- COMMAND [ARG]...
set -euo pipefail

hostname="" dns="" scratch="" workdir="/" user=() gate=""
mounts=()
while (($#)); do
  case $1 in
    --hostname) hostname=$2 && shift 2 ;;
    --dns) dns=$2 && shift 2 ;;
    --scratch) scratch=$2 && shift 2 ;;
    --mount) mounts+=("$2" "$3" "$4") && shift 4 ;;
    --workdir) workdir=$2 && shift 2 ;;
    --user) user=("$2" "$3" "$4") && shift 4 ;;
    --gate) gate=$2 && shift 2 ;;
    --) shift && break ;;
    *) echo "container.sh: unknown option $1" >&2 && exit 2 ;;
  esac
done
[[ -n $hostname && -n $dns && -n $scratch && $# -gt 0 ]] || {
  echo "container.sh: --hostname, --dns, --scratch and a command are required" >&2
  exit 2
}

# The host's directory TOP as an overlay whose changes land in scratch: mount points can be made in it.
overlay() {
  local top=$1 name=${1//\//_}
  [[ -d $top ]] || {
    echo "container.sh: $top does not exist on this machine: the harness mounts only under existing top-level directories" >&2
    exit 2
  }
  grep -q " $top overlay " /proc/self/mounts && return 0
  mkdir -p "$scratch/$name/upper" "$scratch/$name/work"
  mount -t overlay overlay -o "lowerdir=$top,upperdir=$scratch/$name/upper,workdir=$scratch/$name/work" "$top"
}

hostname "$hostname"
overlay /etc
printf '%s\n' "$hostname" >/etc/hostname
mkdir -p /etc/.cluster-dns
mount --bind "$dns" /etc/.cluster-dns
mount -o remount,bind,ro /etc/.cluster-dns
ln -sfn /etc/.cluster-dns/hosts /etc/hosts
# The runtime's /dev/shm (64 MiB, in memory, writable by every user), before the volumes: one of the pod's
# mounted there covers it. A runtime's is the pod's, shared by its containers; here each has its own.
mount -t tmpfs -o nosuid,nodev,noexec,mode=1777,size=64m shm /dev/shm

for ((i = 0; i < ${#mounts[@]}; i += 3)); do
  source=${mounts[i]} target=${mounts[i + 1]} mode=${mounts[i + 2]}
  # The top-level directory the target really lies in: /var/run/... is /run/... where /var/run links there.
  top=$(realpath -m "$target")
  top=${top#/}
  overlay "/${top%%/*}"
  if [[ -d $source ]]; then mkdir -p "$target"; else mkdir -p "$(dirname "$target")" && touch "$target"; fi
  mount --bind "$source" "$target"
  if [[ $mode == ro ]]; then mount -o remount,bind,ro "$target"; fi
done

# The gate is opened before /tmp is covered (it lives in the host's /tmp, as do the volumes' sources
# and the scratch directory): past the gate, only the command's own start remains, as with a runtime.
# /proc/self/fd/N reaches the scratch directory itself, under whatever covers its name.
if [[ -n $gate ]]; then exec {gate_fd}<"$gate" {scratch_fd}<"$scratch"; fi
mkdir -p "$scratch/tmp" && chmod 1777 "$scratch/tmp"
mount --bind "$scratch/tmp" /tmp
cd "$workdir"
if [[ -n $gate ]]; then
  touch "/proc/self/fd/$scratch_fd/at-gate"
  flock --shared "$gate_fd"
  exec {gate_fd}<&- {scratch_fd}<&-
fi

if ((${#user[@]})); then
  sed -i -e "/^[^:]*:[^:]*:${user[0]}:/d" /etc/passwd
  sed -i -e "/^[^:]*:[^:]*:${user[1]}:/d" -e "/^[^:]*:[^:]*:${user[2]}:/d" /etc/group
  exec setpriv --reuid="${user[0]}" --regid="${user[1]}" --groups="${user[2]}" --no-new-privs \
    --inh-caps=-all --bounding-set=-all -- "$@"
fi
exec "$@"
