#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd and kwok from Go modules into a
# per-version cache folder, and fetches Istio's CRDs from the istio.io/api module (`all`: what `make demo` runs).
# `helm` (the chart's tests), `flagger` and `argo-rollouts` (the peers `make bench-peers` compares with), `istioctl` (which
# `make test-e2e` checks the controller's Istio objects with) and `gateway-api` (the Gateway API CRDs, which only
# clusters started with --gateway-api install) are built or fetched only when asked: not part of `all`.
# Idempotent: a version already built is not built again (a no-op run takes milliseconds).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
cache=${CANARYAPP_CACHE:-$HOME/.cache/canaryapp}
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false

command -v go >/dev/null || { echo "go not found: install Go >= 1.24 (it builds the local control plane)" >&2; exit 1; }
log() { echo "[control-plane] $*" >&2; }

# Each k8s.io/<staging> module that k8s.io/kubernetes replaces with ./staging/... is replaced here by its
# published v0.<minor>.<patch>, which is what makes the main module buildable from the proxy.
build_kubernetes() {
  local out=$cache/kubernetes-v$KUBERNETES_VERSION
  [ -x "$out/kube-apiserver" ] && [ -x "$out/kubectl" ] && [ -x "$out/kube-scheduler" ] && [ -x "$out/kube-controller-manager" ] && return
  log "building Kubernetes v$KUBERNETES_VERSION (first time only; several minutes)"
  local staging=0.${KUBERNETES_VERSION#1.}
  local mod; mod=$(go mod download -json "k8s.io/kubernetes@v$KUBERNETES_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  local work=$cache/work/kubernetes-v$KUBERNETES_VERSION
  rm -rf "$work"; mkdir -p "$work"
  {
    echo "module canaryapp.local/kubernetes-build"
    echo "go 1.24.0"
    echo "godebug default=go1.24"
    echo "require k8s.io/kubernetes v$KUBERNETES_VERSION"
    grep -E '^\s*k8s.io/[a-z0-9-]+ => \./staging' "$mod" | awk -v v="v$staging" '{print "replace " $1 " => " $1 " " v}'
  } >"$work/go.mod"
  local pkgs=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
  (
    cd "$work"
    for p in "${pkgs[@]}"; do go get -tool "k8s.io/kubernetes/cmd/$p@v$KUBERNETES_VERSION" >/dev/null; done
    local ver=v$KUBERNETES_VERSION minor=${KUBERNETES_VERSION#1.}; minor=${minor%%.*}
    local ld="-s -w"
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ld+=" -X $pkg.gitVersion=$ver -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
    done
    mkdir -p "$out.tmp"
    go build -trimpath -ldflags "$ld" -o "$out.tmp/" "${pkgs[@]/#/k8s.io/kubernetes/cmd/}"
  )
  rm -rf "$out"; mv "$out.tmp" "$out"
}

# etcd's server module replaces its sibling modules with ../ paths; use their published versions instead.
build_etcd() {
  local out=$cache/etcd-v$ETCD_VERSION
  [ -x "$out/etcd" ] && return
  log "building etcd v$ETCD_VERSION"
  local work=$cache/work/etcd-v$ETCD_VERSION
  rm -rf "$work"; mkdir -p "$work"
  {
    echo "module canaryapp.local/etcd-build"
    echo "go 1.24"
    echo "require go.etcd.io/etcd/server/v3 v$ETCD_VERSION"
    for m in api/v3 client/pkg/v3 client/v3 pkg/v3; do echo "replace go.etcd.io/etcd/$m => go.etcd.io/etcd/$m v$ETCD_VERSION"; done
  } >"$work/go.mod"
  (
    cd "$work"
    go get -tool "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" >/dev/null
    mkdir -p "$out.tmp"
    go build -trimpath -ldflags "-s -w" -o "$out.tmp/etcd" go.etcd.io/etcd/server/v3
  )
  rm -rf "$out"; mv "$out.tmp" "$out"
}

build_kwok() {
  local out=$cache/kwok-v$KWOK_VERSION
  [ -x "$out/kwok" ] && return
  log "building kwok v$KWOK_VERSION"
  mkdir -p "$out.tmp"
  GOBIN="$out.tmp" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION"
  rm -rf "$out"; mv "$out.tmp" "$out"
}

# helm's version string lives in an internal package; -X sets it so `helm version` names the pinned release.
build_helm() {
  local out=$cache/helm-v$HELM_VERSION
  [ -x "$out/helm" ] && return
  log "building helm v$HELM_VERSION"
  mkdir -p "$out.tmp"
  GOBIN="$out.tmp" go install -trimpath \
    -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean" \
    "helm.sh/helm/v3/cmd/helm@v$HELM_VERSION"
  rm -rf "$out"; mv "$out.tmp" "$out"
}

# Flagger, the peer of `make bench-peers`; its CRDs come from the same module (artifacts/flagger/crd.yaml).
build_flagger() {
  local out=$cache/flagger-v$FLAGGER_VERSION
  [ -x "$out/flagger" ] && [ -s "$out/crd.yaml" ] && return
  log "building Flagger v$FLAGGER_VERSION (first time only; minutes)"
  mkdir -p "$out.tmp"
  GOBIN="$out.tmp" go install -trimpath -ldflags "-s -w" "github.com/fluxcd/flagger/cmd/flagger@v$FLAGGER_VERSION"
  local dir; dir=$(go mod download -json "github.com/fluxcd/flagger@v$FLAGGER_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  cp "$dir/artifacts/flagger/crd.yaml" "$out.tmp/crd.yaml"
  chmod u+w "$out.tmp/crd.yaml"
  rm -rf "$out"; mv "$out.tmp" "$out"
}

# Argo Rollouts, the second peer of `make bench-peers`: the controller (cmd/rollouts-controller) and its CRDs
# (manifests/crds/). Its go.mod pins k8s.io/* and two others with replace directives (module => module version,
# no local paths), which `go install pkg@version` refuses: a wrapper module repeats them, as for Kubernetes.
# -X stamps the version and the release's date as its own Makefile does (utils/version), so
# `rollouts-controller --version` names the release (v1.10.1+unknown: the module proxy keeps no commit to stamp).
build_argo_rollouts() {
  local out=$cache/argo-rollouts-v$ARGO_ROLLOUTS_VERSION
  [ -x "$out/rollouts-controller" ] && [ -s "$out/crds.yaml" ] && return
  log "building Argo Rollouts v$ARGO_ROLLOUTS_VERSION (first time only; minutes)"
  local module=github.com/argoproj/argo-rollouts
  local mod; mod=$(go mod download -json "$module@v$ARGO_ROLLOUTS_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  local dir; dir=$(go mod download -json "$module@v$ARGO_ROLLOUTS_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  local work=$cache/work/argo-rollouts-v$ARGO_ROLLOUTS_VERSION
  rm -rf "$work"; mkdir -p "$work"
  {
    echo "module canaryapp.local/argo-rollouts-build"
    grep -E "^go " "$mod"
    echo "require $module v$ARGO_ROLLOUTS_VERSION"
    # Inside the replace ( ... ) block: every "<module> => <module> <version>" line.
    sed -n '/^replace (/,/^)/p' "$mod" | grep -E '^\s*[^ ]+ => [^ .][^ ]* v[^ ]+\s*$' | sed 's/^\s*/replace /'
  } >"$work/go.mod"
  local pkg=$module/utils/version
  local date; date=$(go list -m -json "$module@v$ARGO_ROLLOUTS_VERSION" | sed -n 's/.*"Time": "\(.*\)".*/\1/p')
  local ld="-s -w -X $pkg.version=$ARGO_ROLLOUTS_VERSION -X $pkg.buildDate=$date -X $pkg.gitTreeState=clean"
  (
    cd "$work"
    go get -tool "$module/cmd/rollouts-controller@v$ARGO_ROLLOUTS_VERSION" >/dev/null
    mkdir -p "$out.tmp"
    go build -trimpath -ldflags "$ld" -o "$out.tmp/rollouts-controller" "$module/cmd/rollouts-controller"
  )
  local f
  for f in rollout analysis-template cluster-analysis-template analysis-run experiment; do
    echo "---"
    cat "$dir/manifests/crds/$f-crd.yaml"
  done >"$out.tmp/crds.yaml"
  chmod u+w "$out.tmp/crds.yaml"
  rm -rf "$out"; mv "$out.tmp" "$out"
}

# istioctl, whose `validate` and `analyze` check the VirtualServices and DestinationRules the controller writes with
# Istio's own code. istio.io/istio publishes no tagged module versions, so the pin is a pseudo-version (a commit);
# -X stamps what Istio's own dev builds print: the module's VERSION with -dev, and that commit.
# istio.io/istio needs a newer Go than the control plane: go reports the version it requires if this one is older.
build_istioctl() {
  local out=$cache/istioctl-v$ISTIOCTL_VERSION
  [ -x "$out/istioctl" ] && return
  log "building istioctl v$ISTIOCTL_VERSION (first time only; 6–13 minutes)"
  local mod=istio.io/istio@v$ISTIOCTL_VERSION
  local dir; dir=$(go mod download -json "$mod" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  local pkg=istio.io/istio/pkg/version release; release=$(cat "$dir/VERSION")
  local ld="-s -w -X $pkg.buildVersion=$release-dev -X $pkg.buildGitRevision=${ISTIOCTL_VERSION##*-}"
  ld+=" -X $pkg.buildStatus=Clean -X $pkg.buildOS=$(go env GOOS) -X $pkg.buildArch=$(go env GOARCH)"
  mkdir -p "$out.tmp"
  GOBIN="$out.tmp" go install -trimpath -ldflags "$ld" "istio.io/istio/istioctl/cmd/istioctl@v$ISTIOCTL_VERSION"
  rm -rf "$out"; mv "$out.tmp" "$out"
}

fetch_istio_crds() {
  local out=$cache/istio-api-v$ISTIO_API_VERSION
  [ -s "$out/crds.yaml" ] && return
  log "fetching Istio CRDs from istio.io/api v$ISTIO_API_VERSION"
  local dir; dir=$(go mod download -json "istio.io/api@v$ISTIO_API_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  mkdir -p "$out"
  cp "$dir/kubernetes/customresourcedefinitions.gen.yaml" "$out/crds.yaml.tmp"
  chmod u+w "$out/crds.yaml.tmp"; mv "$out/crds.yaml.tmp" "$out/crds.yaml"
}

# The Gateway API's standard channel, only the CRDs the gateway-api traffic router and its tests use (HTTPRoute,
# Gateway, GatewayClass, ReferenceGrant): the other routes' CRDs would only slow every cluster that installs them.
# Its go.mod declares go 1.26, and go refuses to download a module newer than itself (GOTOOLCHAIN=local): with an
# older Go, go reports the version it requires, as for istioctl.
fetch_gateway_api_crds() {
  local out=$cache/gateway-api-v$GATEWAY_API_VERSION
  [ -s "$out/crds.yaml" ] && return
  log "fetching Gateway API CRDs from sigs.k8s.io/gateway-api v$GATEWAY_API_VERSION (standard channel)"
  local dir; dir=$(go mod download -json "sigs.k8s.io/gateway-api@v$GATEWAY_API_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  mkdir -p "$out"
  # One file per CRD upstream, none starting with a document separator: each gets one here.
  local name
  for name in httproutes gateways gatewayclasses referencegrants; do
    echo "---"
    cat "$dir/config/crd/standard/gateway.networking.k8s.io_$name.yaml"
  done >"$out/crds.yaml.tmp"
  chmod u+w "$out/crds.yaml.tmp"; mv "$out/crds.yaml.tmp" "$out/crds.yaml"
}

what=${1:-all}
case "$what" in
  kubernetes) build_kubernetes ;;
  etcd) build_etcd ;;
  kwok) build_kwok ;;
  istio) fetch_istio_crds ;;
  gateway-api) fetch_gateway_api_crds ;;
  helm) build_helm ;;
  flagger) build_flagger ;;
  argo-rollouts) build_argo_rollouts ;;
  istioctl) build_istioctl ;;
  all) fetch_istio_crds; build_etcd; build_kwok; build_kubernetes ;;
  *) echo "usage: $0 [all|kubernetes|etcd|kwok|istio|gateway-api|helm|flagger|argo-rollouts|istioctl]" >&2; exit 2 ;;
esac
