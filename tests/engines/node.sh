#!/usr/bin/env bash
# The real node's programs, built from Go modules and Debian packages (install.sh runs this): runc,
# containerd with ctr and containerd-shim-runc-v2, the CNI plugins the pod network uses, the kubelet,
# CoreDNS and the sandbox image's program (pause), all in NODE_BIN (the plugins in NODE_BIN/cni).
# Versions: versions.py. Idempotent: each part is built once; the Go module and build caches keep a
# rebuild after a change of pin short.
# tests/engines/node.py runs them.
#
# Usage: tests/engines/node.sh [PREFIX [PART...]]    (PREFIX: $MC_ENGINES, else /opt/minicluster-engines;
#        PARTS: runc containerd cni_plugins kubelet coredns pause, all by default)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
MC_ENGINES=${1:-${MC_ENGINES:-/opt/minicluster-engines}}
export MC_ENGINES
eval "$(python3 "$here/versions.py")"
export GOFLAGS=$ENGINES_GOFLAGS
build=$MC_ENGINES/build/node
mkdir -p "$build" "$NODE_BIN/cni"

module_dir() { # the module's folder in the module cache, downloaded if need be
  go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p'
}

# A module of our own that requires `module` (its replace lines are its own go.mod's, which a
# dependency's go.mod cannot pass on) and imports `packages`, so that `go mod tidy` resolves them.
wrapper() {
  local work=$1 module=$2 source
  shift 2
  mkdir -p "$work"
  source=$(module_dir "$module")
  {
    printf 'module minicluster.test/node\n\ngo %s\n\nrequire %s\n\n' "$(sed -n 's/^go //p' "$source/go.mod")" "${module/@/ }"
    sed -n 's/^replace \(.*\)/replace \1/p' "$source/go.mod"
  } >"$work/go.mod"
  {
    printf '// Package node names the commands this module builds, so that go mod tidy keeps what they need.\n'
    printf 'package node\n\nimport (\n'
    printf '\t_ "%s"\n' "$@"
    printf ')\n'
  } >"$work/node.go"
  (cd "$work" && go mod tidy)
}

runc() {
  [[ -x $NODE_BIN/runc ]] && return
  echo "== runc $RUNC (cgo, static, seccomp)"
  # libseccomp's static library, unpacked from Debian's package into a folder of our own rather than
  # installed: the build needs it, the machine does not. The download runs as root, as the install
  # does (apt's `_apt` user may not write to the engines' folder, and said so in every cold run), and
  # reads the package lists again once where they are missing or name a version no longer served.
  local sysroot=$build/libseccomp
  if [[ ! -f $sysroot/usr/lib/x86_64-linux-gnu/libseccomp.a ]]; then
    mkdir -p "$sysroot"
    local download=(apt-get download -q -o APT::Sandbox::User=root libseccomp-dev)
    (cd "$build" && { "${download[@]}" || { apt-get update -qq && "${download[@]}"; }; } &&
      dpkg-deb -x libseccomp-dev_*.deb "$sysroot" && rm libseccomp-dev_*.deb)
  fi
  wrapper "$build/runc" "github.com/opencontainers/runc@v$RUNC" github.com/opencontainers/runc/libcontainer
  (cd "$build/runc" &&
    PKG_CONFIG_SYSROOT_DIR=$sysroot PKG_CONFIG_LIBDIR=$sysroot/usr/lib/x86_64-linux-gnu/pkgconfig CGO_ENABLED=1 \
      go build -buildmode=pie -tags "seccomp urfave_cli_no_docs netgo osusergo" \
      -ldflags "$ENGINES_LDFLAGS -X main.version=$RUNC -linkmode external -extldflags -static-pie" \
      -o "$NODE_BIN/runc.new" "github.com/opencontainers/runc")
  mv "$NODE_BIN/runc.new" "$NODE_BIN/runc"
}

containerd() {
  [[ -x $NODE_BIN/containerd-shim-runc-v2 ]] && return
  echo "== containerd $CONTAINERD, ctr and containerd-shim-runc-v2"
  local module=github.com/containerd/containerd/v2 version="$ENGINES_LDFLAGS -X github.com/containerd/containerd/v2/version.Version=v$CONTAINERD"
  wrapper "$build/containerd" "$module@v$CONTAINERD" "$module/cmd/containerd/server" "$module/cmd/ctr/app"
  (cd "$build/containerd" && export CGO_ENABLED=0 &&
    go build -tags "urfave_cli_no_docs osusergo netgo static_build" -ldflags "$version" -o "$NODE_BIN/containerd" "$module/cmd/containerd" &&
    go build -tags "urfave_cli_no_docs osusergo netgo static_build" -ldflags "$version" -o "$NODE_BIN/ctr" "$module/cmd/ctr" &&
    go build -tags "urfave_cli_no_docs osusergo netgo static_build no_grpc" -ldflags "$version" \
      -o "$NODE_BIN/containerd-shim-runc-v2.new" "$module/cmd/containerd-shim-runc-v2")
  mv "$NODE_BIN/containerd-shim-runc-v2.new" "$NODE_BIN/containerd-shim-runc-v2"
}

cni_plugins() {
  [[ -x $NODE_BIN/cni/portmap ]] && return
  echo "== the CNI plugins $CNI_PLUGINS: bridge, host-local, loopback, portmap"
  local module=github.com/containernetworking/plugins plugin
  wrapper "$build/cni" "$module@v$CNI_PLUGINS" "$module/pkg/ip"
  for plugin in main/loopback ipam/host-local main/bridge meta/portmap; do
    (cd "$build/cni" && CGO_ENABLED=0 go build -ldflags "$ENGINES_LDFLAGS" -o "$NODE_BIN/cni/${plugin#*/}" "$module/plugins/$plugin")
  done
}

kubelet() {
  [[ -x $NODE_BIN/kubelet ]] && return
  echo "== the kubelet $KUBERNETES (on top of the control plane's build cache)"
  # install.sh builds it with the control plane's commands; this is for a node of new pins beside a
  # control plane built before: its wrapper module (install.sh) with the kubelet's command added.
  local work=$build/kubelet
  mkdir -p "$work"
  cp "$MC_ENGINES/build/kubernetes-$KUBERNETES/go.mod" "$work/go.mod"
  printf 'package node\n\nimport _ "k8s.io/kubernetes/cmd/kubelet/app"\n' >"$work/node.go"
  (cd "$work" && go mod tidy)
  (cd "$work" && CGO_ENABLED=0 go build -ldflags "$ENGINES_LDFLAGS $KUBERNETES_STAMP" -o "$NODE_BIN/kubelet.new" \
    k8s.io/kubernetes/cmd/kubelet)
  mv "$NODE_BIN/kubelet.new" "$NODE_BIN/kubelet"
}

coredns() {
  [[ -x $NODE_BIN/coredns ]] && return
  echo "== CoreDNS $COREDNS, with the plugins the node's DNS uses"
  local module=github.com/coredns/coredns
  wrapper "$build/coredns" "$module@v$COREDNS" "$module/coremain"
  cp "$here/coredns/main.go" "$build/coredns/node.go"
  (cd "$build/coredns" && go mod tidy && CGO_ENABLED=0 go build -ldflags "$ENGINES_LDFLAGS" -o "$NODE_BIN/coredns" .)
}

pause() { # the project's own code: built every time (the build cache makes that a second)
  mkdir -p "$build/pause"
  cp "$here/pause/main.go" "$build/pause/main.go"
  printf 'module minicluster.test/pause\n\ngo 1.24\n' >"$build/pause/go.mod"
  (cd "$build/pause" && CGO_ENABLED=0 go build -ldflags "$ENGINES_LDFLAGS" -o "$NODE_BIN/pause" .)
}

parts=("${@:2}")
[[ ${#parts[@]} -gt 0 ]] || parts=(runc containerd cni_plugins kubelet coredns pause)
for part in "${parts[@]}"; do
  case $part in
    runc | containerd | cni_plugins | kubelet | coredns | pause) "$part" ;;
    *) echo "node.sh: no part $part" >&2 && exit 2 ;;
  esac
done
echo "the real node's programs (${parts[*]}) are built at $NODE_BIN"
