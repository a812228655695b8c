#!/usr/bin/env bash
# The real Pulumi engine of the tests marked realengine, built from Go modules (install.sh runs this):
#   - the Pulumi CLI, with the scripts its Python SDK needs beside it (pulumi-language-python-exec,
#     pulumi-resource-pulumi-python for the dynamic providers), in PULUMI_BIN;
#   - the Python language host, pulumi-language-python, in PULUMI_BIN (versions.py says why its version
#     differs from the CLI's);
#   - the Kubernetes resource plugin of the pulumi-kubernetes release the project pins, in PROVIDER_BIN.
# With both folders on PATH, the CLI finds every plugin there and downloads nothing. Idempotent: each
# part is built once; the Go module and build caches keep a rebuild after a change of pin short.
#
# Usage: tests/engines/pulumi.sh [PREFIX]    (default: $MC_ENGINES, else /opt/minicluster-engines)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
MC_ENGINES=${1:-${MC_ENGINES:-/opt/minicluster-engines}}
export MC_ENGINES CGO_ENABLED=0
eval "$(python3 "$here/versions.py")"
export GOFLAGS=$ENGINES_GOFLAGS
cli_bin=$MC_ENGINES/pulumi-$PULUMI/bin
provider_bin=$MC_ENGINES/pulumi-kubernetes-$PULUMI_KUBERNETES/bin
version_flag=github.com/pulumi/pulumi/sdk/v3/go/common/version.Version

module_dir() { # the module's folder in the module cache, downloaded if need be
  go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p'
}

# A module of our own that requires the command's module and names the command as a tool, so that
# `go mod tidy` resolves exactly what it needs (replace lines: those of the command's own go.mod).
wrapper() {
  local work=$1 module=$2 tool=$3
  shift 3
  mkdir -p "$work"
  printf 'module minicluster.test/wrapper\n\ngo 1.24\n\nrequire %s\n\ntool %s\n' "$module" "$tool" >"$work/go.mod"
  printf '%s\n' "$@" >>"$work/go.mod"
  (cd "$work" && go mod tidy)
}

cli() {
  [[ -x $cli_bin/pulumi ]] && return
  echo "== the Pulumi CLI $PULUMI (the first build takes minutes on two cores)"
  local sdk
  sdk=$(module_dir "github.com/pulumi/pulumi/sdk/v3@v$PULUMI")
  wrapper "$MC_ENGINES/build/pulumi-$PULUMI" "github.com/pulumi/pulumi/pkg/v3 v$PULUMI" \
    github.com/pulumi/pulumi/pkg/v3/cmd/pulumi \
    "replace github.com/pulumi/pulumi/sdk/v3 => github.com/pulumi/pulumi/sdk/v3 v$PULUMI" \
    "replace github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-20241001131231-d02d263e614e"
  mkdir -p "$cli_bin"
  install -m 755 "$sdk/python/cmd/pulumi-language-python-exec" "$sdk/python/dist/pulumi-resource-pulumi-python" \
    "$cli_bin/"
  (cd "$MC_ENGINES/build/pulumi-$PULUMI" &&
    go build -ldflags "$ENGINES_LDFLAGS -X $version_flag=v$PULUMI" -o "$cli_bin/pulumi.new" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi)
  mv "$cli_bin/pulumi.new" "$cli_bin/pulumi" # last: its presence says the whole part is built
}

language_host() {
  [[ -x $cli_bin/pulumi-language-python ]] && return
  echo "== the Python language host $PULUMI_PYTHON_HOST"
  wrapper "$MC_ENGINES/build/pulumi-language-python-$PULUMI_PYTHON_HOST" \
    "github.com/pulumi/pulumi/sdk/v3 v$PULUMI_PYTHON_HOST" github.com/pulumi/pulumi/sdk/v3/python/cmd/pulumi-language-python \
    "replace golang.org/x/text => golang.org/x/text v0.3.6"
  (cd "$MC_ENGINES/build/pulumi-language-python-$PULUMI_PYTHON_HOST" &&
    go build -ldflags "$ENGINES_LDFLAGS -X $version_flag=v$PULUMI_PYTHON_HOST" -o "$cli_bin/pulumi-language-python" \
      github.com/pulumi/pulumi/sdk/v3/python/cmd/pulumi-language-python)
}

# The Node.js and Go language hosts, for the component package's TypeScript and Go examples. Their own
# modules are not served; their last releases as packages of the SDK module are (versions.py).
sdk_host() {
  local name=$1 version=$2 package=$3
  [[ -x $cli_bin/$name ]] && return
  echo "== the language host $name $version"
  wrapper "$MC_ENGINES/build/$name-$version" "github.com/pulumi/pulumi/sdk/v3 v$version" "$package"
  (cd "$MC_ENGINES/build/$name-$version" &&
    go build -ldflags "$ENGINES_LDFLAGS -X $version_flag=v$version" -o "$cli_bin/$name" "$package")
}

# Pulumi YAML's host, for the component package's YAML example: a process of its own, built with the
# pkg/v3 its release asks for (its code does not build against the CLI's newer one).
yaml_host() {
  [[ -x $cli_bin/pulumi-language-yaml ]] && return
  echo "== the Pulumi YAML language host $PULUMI_YAML"
  wrapper "$MC_ENGINES/build/pulumi-language-yaml-$PULUMI_YAML" \
    "github.com/pulumi/pulumi-yaml v$PULUMI_YAML" github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml
  (cd "$MC_ENGINES/build/pulumi-language-yaml-$PULUMI_YAML" &&
    go build -ldflags "$ENGINES_LDFLAGS -X github.com/pulumi/pulumi-yaml/pkg/version.Version=v$PULUMI_YAML" \
      -o "$cli_bin/pulumi-language-yaml" github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml)
}

# Ours (tests/engines/sdkgen): Pulumi's TypeScript SDK generator on the package's schema. Built on every
# run, as its source is this project's; the build cache makes that a second.
sdkgen() {
  echo "== the TypeScript SDK generator (tests/engines/sdkgen)"
  local work=$MC_ENGINES/build/sdkgen
  mkdir -p "$work" "$MC_ENGINES/sdkgen/bin"
  cp "$here/sdkgen/main.go" "$work/"
  printf 'module minicluster.test/sdkgen\n\ngo 1.24\n\nrequire github.com/pulumi/pulumi/pkg/v3 v%s\n%s\n%s\n' "$PULUMI" \
    "replace github.com/pulumi/pulumi/sdk/v3 => github.com/pulumi/pulumi/sdk/v3 v$PULUMI" \
    "replace github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-20241001131231-d02d263e614e" \
    >"$work/go.mod"
  (cd "$work" && go mod tidy && go build -ldflags "$ENGINES_LDFLAGS" -o "$MC_ENGINES/sdkgen/bin/sdkgen" .)
}

# The provider's module points the SDK's at its sibling folder and embeds a schema its build makes
# (go generate: the release's schema with its version), so it is built from a copy of both folders.
provider() {
  [[ -x $provider_bin/pulumi-resource-kubernetes ]] && return
  [[ -n $PROVIDER_MODULE ]] || { echo "pulumi.sh: no provider commit known for pulumi-kubernetes $PULUMI_KUBERNETES (versions.py)" >&2 && exit 1; }
  echo "== the Kubernetes resource plugin $PULUMI_KUBERNETES (minutes, the first time)"
  local work=$MC_ENGINES/build/pulumi-kubernetes-$PULUMI_KUBERNETES
  rm -rf "$work" && mkdir -p "$work"
  cp -r "$(module_dir "github.com/pulumi/pulumi-kubernetes/provider/v4@$PROVIDER_MODULE")" "$work/provider"
  cp -r "$(module_dir "github.com/pulumi/pulumi-kubernetes/sdk/v4@v$PULUMI_KUBERNETES")" "$work/sdk"
  chmod -R u+w "$work"
  (cd "$work/provider/cmd/pulumi-resource-kubernetes" && VERSION=$PULUMI_KUBERNETES go generate)
  mkdir -p "$provider_bin"
  (cd "$work/provider" && go build -o "$provider_bin/pulumi-resource-kubernetes" \
    -ldflags "$ENGINES_LDFLAGS -X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$PULUMI_KUBERNETES" \
    ./cmd/pulumi-resource-kubernetes)
}

command -v go >/dev/null || { echo "pulumi.sh: Go is needed to build the engines" >&2 && exit 1; }
cli
language_host
sdk_host pulumi-language-nodejs "$PULUMI_NODEJS_HOST" github.com/pulumi/pulumi/sdk/v3/nodejs/cmd/pulumi-language-nodejs
sdk_host pulumi-language-go "$PULUMI_GO_HOST" github.com/pulumi/pulumi/sdk/v3/go/pulumi-language-go
yaml_host
sdkgen
provider
echo "the Pulumi engine is built at $cli_bin and $provider_bin"
