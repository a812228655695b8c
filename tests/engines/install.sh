#!/usr/bin/env bash
# The real engines of the tests marked realengine, built from Go modules: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler and kubectl here, with the test kubelet's streaming server
# (tests/kubelet/streaming); then the real node's programs (node.sh: containerd, runc, the kubelet, the
# CNI plugins, CoreDNS) and the Pulumi CLI, its Python language host and the Kubernetes resource plugin
# (pulumi.sh). Versions: versions.py. Idempotent: a second run with the same pins finds the
# binaries and does nothing; the Go module and build caches are kept, so a rebuild after a change of
# pin takes what changed only.
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

# The test kubelet's logs and exec server is the project's own code: built every time (the build
# cache makes that a second when it has not changed).
echo "== the test kubelet's streaming server (tests/kubelet/streaming)"
(cd "$here/../kubelet/streaming" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -o "$prefix/kubelet-streaming/bin/kubelet-streaming" .)

# The real node's programs and Pulumi's, side by side: on two cores each build leaves a core idle while
# it downloads modules or links, which the other fills (a cold run took 3.5 and 12 minutes one after
# the other). Each one's lines carry its name; either failing fails the install.
node_and_pulumi() {
  local node_pid status=0
  (set -o pipefail && bash "$here/node.sh" "$prefix" 2>&1 | sed -u 's/^/[node] /') &
  node_pid=$!
  (set -o pipefail && bash "$here/pulumi.sh" "$prefix" 2>&1 | sed -u 's/^/[pulumi] /') || status=$?
  wait "$node_pid" || status=$?
  return "$status"
}

if built; then
  echo "the engines are built at $bin"
  node_and_pulumi
  exit
fi

work=$prefix/build/kubernetes-$KUBERNETES
mkdir -p "$work" "$bin"
cd "$work"
export GOFLAGS=-mod=mod CGO_ENABLED=0

echo "== the wrapper module of k8s.io/kubernetes v$KUBERNETES"
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
	_ "k8s.io/kubectl/pkg/cmd"
)
GO
go mod tidy

# The version stamped as Kubernetes' own release build stamps it (hack/lib/version.sh), in both packages
# that report it: unstamped, the API server says v0.0.0-master+$Format:%H$, which kubectl cannot parse
# and which no cluster has, so that clients that read it (the Kubernetes provider) see a false one.
major=${KUBERNETES%%.*}
minor=${KUBERNETES#*.}
minor=${minor%%.*}
stamp=()
for package in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  stamp+=("-X $package.gitVersion=v$KUBERNETES" "-X $package.gitMajor=$major" "-X $package.gitMinor=$minor"
    "-X $package.gitTreeState=clean")
done
ldflags="${stamp[*]}"

echo "== building ${wanted[*]} (the first build takes minutes on two cores)"
# One build for the four commands, so that their links run beside the compiles (kubectl: the benchmarks'
# baseline, tests/bench); etcd's server is a command named by its module's path, built on its own.
go build -trimpath -ldflags "$ldflags" -o "$bin/" k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
go build -trimpath -o "$bin/etcd" go.etcd.io/etcd/server/v3
built
echo "the engines are built at $bin"
node_and_pulumi # the real node's kubelet builds on this module's cache
