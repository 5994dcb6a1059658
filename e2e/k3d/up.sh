#!/usr/bin/env bash
# Creates a k3d cluster with Istio (demo profile) and its Prometheus addon, builds the controller and the
# sample app (v1, v2, v3) with Docker, imports the images, installs the controller with config/default (the
# sample's host and gateway allowed: e2e/k3d/controller), and deploys the sample CanaryApp at v1 behind
# Istio's ingress gateway on http://localhost:$LB_PORT.
# Then run e2e/k3d/story.sh; e2e/k3d/down.sh deletes the cluster.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need docker k3d kubectl istioctl curl
cd "$REPO_ROOT"

log "k3d cluster $CLUSTER: 1 server, 2 agents, no Traefik, load balancer port $LB_PORT → 80"
if k3d cluster list "$CLUSTER" >/dev/null 2>&1; then
  echo "cluster $CLUSTER exists; reusing it (e2e/k3d/down.sh deletes it)"
else
  run k3d cluster create "$CLUSTER" \
    --agents 2 \
    --port "$LB_PORT:80@loadbalancer" \
    --k3s-arg "--disable=traefik@server:0" \
    --wait
fi
run kubectl config use-context "k3d-$CLUSTER"
require_context
run kubectl get nodes

log "Istio $ISTIO_VERSION (demo profile) and its Prometheus addon"
run istioctl install --set profile=demo -y
run kubectl apply -f "$PROMETHEUS_ADDON"
run kubectl -n istio-system rollout status deployment/prometheus --timeout=5m

log "images: the controller (Dockerfile) and the sample app, one image per release"
run docker build -t "$CONTROLLER_IMAGE" .
images=("$CONTROLLER_IMAGE")
for version in "${VERSIONS[@]}"; do
  run docker build --build-arg "VERSION=$version" -t "$SAMPLE_IMAGE:$version" examples/sample-app
  images+=("$SAMPLE_IMAGE:$version")
done
run k3d image import --cluster "$CLUSTER" "${images[@]}"

log "the controller: CRD, RBAC, admission policy and Deployment from config/default, the sample's host and gateway allowed"
printf '$ kubectl kustomize e2e/k3d/controller | kubectl apply --server-side -f -\n' >&2
kubectl kustomize e2e/k3d/controller | kubectl apply --server-side -f -
run kubectl -n canaryapp-system rollout status deployment/canaryapp-controller --timeout=5m

log "namespace $NAMESPACE (sidecar injection on), the ingress Gateway, the sample CanaryApp at v1"
run kubectl apply -f e2e/k3d/manifests/
printf '$ kubectl kustomize e2e/k3d/sample | kubectl apply -f -\n' >&2
kubectl kustomize e2e/k3d/sample | kubectl apply -f -
run kubectl -n "$NAMESPACE" wait "canaryapp/$APP" --for=jsonpath='{.status.phase}'=Healthy --timeout=5m
run kubectl -n "$NAMESPACE" get canaryapp,deployments,pods,virtualservices

log "ready"
cat <<MSG
The sample answers through Istio's ingress gateway:
  curl -H 'Host: $APP_HOST' http://localhost:$LB_PORT/hello
Play the story (v2 promoted step by step, v3 caught and rolled back):
  e2e/k3d/story.sh
Follow the controller:
  kubectl -n canaryapp-system logs deployment/canaryapp-controller -f
MSG
