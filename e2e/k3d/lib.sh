# shellcheck shell=bash
# Settings and helpers shared by the k3d scripts; sourced by them, not run.
# shellcheck disable=SC2034 # the settings are read by the scripts that source this file

K3D_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$K3D_DIR/../.." && pwd)
# shellcheck source=../toolchain/versions.env
source "$REPO_ROOT/e2e/toolchain/versions.env"

CLUSTER=${CLUSTER:-canaryapp-demo}
# The host port of k3d's load balancer, which forwards to Istio's ingress gateway on port 80.
LB_PORT=${LB_PORT:-8090}
# The Istio release whose Prometheus addon is installed; by default the one the local CRDs come from.
ISTIO_VERSION=${ISTIO_VERSION:-$ISTIO_API_VERSION}
PROMETHEUS_ADDON=${PROMETHEUS_ADDON:-https://raw.githubusercontent.com/istio/istio/${ISTIO_VERSION}/samples/addons/prometheus.yaml}

# These must match manifests/ and sample/ (e2e/k3d.test.ts checks that they do).
NAMESPACE=canaryapp-demo
APP=canaryapp-sample
APP_HOST=canaryapp-sample.example.com
SAMPLE_IMAGE=sample-app
CONTROLLER_IMAGE=canaryapp-controller:latest
VERSIONS=(v1 v2 v3)

log() { printf '\n\033[1m==> %s\033[0m\n' "$*" >&2; }
die() {
  printf 'error: %s\n' "$*" >&2
  exit 1
}
# Prints a command as it is run, so that the output reads like the README.
run() {
  printf '$ %s\n' "$*" >&2
  "$@"
}
need() {
  local missing=()
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || missing+=("$tool")
  done
  [ ${#missing[@]} -eq 0 ] || die "missing ${missing[*]}: see e2e/k3d/README.md (Requirements)"
}
# Fails unless kubectl talks to this script's k3d cluster, so that nothing is applied elsewhere by mistake.
require_context() {
  local context
  context=$(kubectl config current-context 2>/dev/null || true)
  [ "$context" = "k3d-$CLUSTER" ] ||
    die "kubectl's current context is \"$context\", not k3d-$CLUSTER: run e2e/k3d/up.sh, or kubectl config use-context k3d-$CLUSTER"
}
