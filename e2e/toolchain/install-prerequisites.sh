#!/usr/bin/env bash
# Prepares a fresh Debian bookworm machine (as root) for `make test`: the apt packages the tests run
# (openssl, shellcheck, lua5.1 for the Argo CD Lua tests, prometheus — whose binary the tests start themselves, never as a
# service), Node in the project cache,
# then the local control plane (build-control-plane.sh all: what `make demo` needs; the targets that need helm or istioctl
# build them). Idempotent: what is present is not installed again.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
# shellcheck source=apt-install.sh
source "$here/apt-install.sh"
cache=${CANARYAPP_CACHE:-$HOME/.cache/canaryapp}
log() { echo "[prerequisites] $*" >&2; }
die() { echo "$*" >&2; exit 1; }

# Go builds the control plane; it is not packaged recent enough in bookworm, so it must come from go.dev.
command -v go >/dev/null ||
  die "go not found: install Go >= 1.24 from the official Go downloads (e.g. into /usr/local/go) and add its bin folder to PATH, then rerun"
go_minor=$(go env GOVERSION | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
[ "${go_minor:-0}" -ge 24 ] || die "$(go env GOVERSION) is too old: install Go >= 1.24 and rerun"

missing=()
command -v openssl >/dev/null || missing+=(openssl)
command -v prometheus >/dev/null || missing+=(prometheus)
command -v shellcheck >/dev/null || missing+=(shellcheck)
command -v lua5.1 >/dev/null || missing+=(lua5.1)
command -v make >/dev/null || missing+=(make)
command -v npm >/dev/null || missing+=(npm)
[ -e /etc/ssl/certs/ca-certificates.crt ] || missing+=(ca-certificates)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  # The prometheus package would start a system service; the tests run their own (apt_install forbids it).
  apt_install "${missing[@]}"
fi

node_dir=$cache/node-$NODE_MAJOR
node_bin=$node_dir/node_modules/node/bin/node
if ! { [ -x "$node_bin" ] && "$node_bin" --version | grep -q "^v$NODE_MAJOR\."; }; then
  log "installing Node $NODE_MAJOR into $node_dir"
  mkdir -p "$node_dir"
  npm install --prefix "$node_dir" --no-save --no-package-lock "node@$NODE_MAJOR" >/dev/null
  "$node_bin" --version >/dev/null || die "Node $NODE_MAJOR install failed: $node_bin does not run"
fi

"$here/build-control-plane.sh" all >/dev/null
log "ready: Node $("$node_bin" --version), Go $(go env GOVERSION), control plane in $cache"
