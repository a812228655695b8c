#!/usr/bin/env bash
# The real engines of the tests marked realengine, built from Go modules: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl and the kubelet here, with the test kubelet's
# streaming server (tests/kubelet/streaming); beside them the real node's other programs (node.sh:
# containerd, runc, the CNI plugins, CoreDNS) and the Pulumi CLI, its language hosts and the Kubernetes
# resource plugin (pulumi.sh). Versions, Go flags and the version stamp: versions.py. Idempotent: a
# second run with the same pins finds the binaries and does nothing; the Go module and build caches are
# kept, so a rebuild after a change of pin takes what changed only.
#
# k8s.io/kubernetes cannot be `go install`ed: its go.mod points each k8s.io/* staging module at a
# folder of its own tree. A wrapper module requires it and points each of them at the release of
# the same number (v1.37.2 -> v0.37.2) instead; etcd's server is built from the release that
# Kubernetes itself requires, by the same module graph.
#
# Usage: tests/engines/install.sh [PREFIX]    (default: $MC_ENGINES, else /opt/minicluster-engines)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
prefix=${1:-${MC_ENGINES:-/opt/minicluster-engines}}
eval "$(MC_ENGINES=$prefix python3 "$here/versions.py")"
bin=$prefix/kubernetes-$KUBERNETES/bin
wanted=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl)

built() {
  local name
  for name in "${wanted[@]}"; do [[ -x $bin/$name ]] || return 1; done
  # Built before the version was stamped (the API server then says v0.0.0-master): build again.
  [[ $("$bin/kube-apiserver" --version 2>/dev/null) == "Kubernetes v$KUBERNETES" ]]
}

command -v go >/dev/null || { echo "install.sh: Go is needed to build the engines" >&2 && exit 1; }
export GOFLAGS=$ENGINES_GOFLAGS CGO_ENABLED=0

# The test kubelet's logs and exec server is the project's own code: built every time (the build
# cache makes that a second when it has not changed).
echo "== the test kubelet's streaming server (tests/kubelet/streaming)"
(cd "$here/../kubelet/streaming" && go build -ldflags "$ENGINES_LDFLAGS" -o "$prefix/kubelet-streaming/bin/kubelet-streaming" .)

# Kubernetes' commands, with the kubelet: one `go build`, so that their links run beside the compiles
# (kubectl: the benchmarks' baseline, tests/bench); etcd's server is a command named by its module's
# path, built on its own. The kubelet goes to the node's folder, where node.sh finds it built.
kubernetes() {
  if built; then
    echo "the engines are built at $bin"
    return
  fi
  local work=$prefix/build/kubernetes-$KUBERNETES
  mkdir -p "$work/bin" "$bin" "$NODE_BIN"
  cd "$work"
  echo "== the wrapper module of k8s.io/kubernetes v$KUBERNETES"
  local upstream
  upstream=$(go mod download -json "k8s.io/kubernetes@v$KUBERNETES" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
  {
    echo "module minicluster.test/engines"
    echo
    echo "go $(sed -n 's/^go //p' "$upstream")"
    echo
    echo "require k8s.io/kubernetes v$KUBERNETES"
    echo
    sed -n 's|^\t\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*|replace \1 => \1 v0.'"${KUBERNETES#1.}"'|p' "$upstream"
  } >go.mod
  cat >engines.go <<'GO'
// Package engines names the commands this module builds, so that `go mod tidy` keeps what they need.
package engines

import (
	_ "go.etcd.io/etcd/server/v3/etcdmain"
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
	_ "k8s.io/kubernetes/cmd/kubelet/app"
	_ "k8s.io/kubectl/pkg/cmd"
)
GO
  go mod tidy
  echo "== building ${wanted[*]} and the kubelet (the first build takes minutes on two cores)"
  local commands=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
  [[ -x $NODE_BIN/kubelet ]] || commands+=(kubelet)
  go build -ldflags "$ENGINES_LDFLAGS $KUBERNETES_STAMP" -o "$work/bin/" "${commands[@]/#/k8s.io/kubernetes/cmd/}"
  go build -ldflags "$ENGINES_LDFLAGS" -o "$work/bin/etcd" go.etcd.io/etcd/server/v3
  [[ ! -f $work/bin/kubelet ]] || mv "$work/bin/kubelet" "$NODE_BIN/kubelet"
  mv "$work/bin/"* "$bin/" # last: their presence says the part is built
  built
  echo "the engines are built at $bin"
}

# Three builds side by side from the start: Kubernetes' commands, the node's other programs, Pulumi's.
# On two cores each leaves a core idle while it downloads modules or links, which the others fill. The
# node's kubelet comes last, after Kubernetes' commands: it shares most of their compiled packages, and
# is built with them unless it was built before. Each one's lines carry its name; any failing fails the
# install.
tagged() { # NAME COMMAND...: run it with its lines tagged
  local name=$1
  shift
  (set -o pipefail && "$@" 2>&1 | sed -u "s/^/[$name] /")
}
status=0
tagged pulumi bash "$here/pulumi.sh" "$prefix" &
pulumi_pid=$!
tagged node bash "$here/node.sh" "$prefix" runc containerd cni_plugins coredns pause &
node_pid=$!
# In the background, as the others: a function run as an `if` condition would run with `set -e` off.
(set -o pipefail && kubernetes 2>&1 | sed -u 's/^/[kubernetes] /') &
if wait "$!"; then
  tagged node bash "$here/node.sh" "$prefix" kubelet || status=$?
else
  status=1
fi
wait "$node_pid" || status=$?
wait "$pulumi_pid" || status=$?
exit "$status"
