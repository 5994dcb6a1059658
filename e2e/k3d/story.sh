#!/usr/bin/env bash
# The story of the original operator's README on the k3d cluster made by up.sh: traffic through the
# ingress gateway, v2 tested step by step and promoted, then v3 (whose /hello answers 500) caught by the
# analysis and rolled back, and recorded in status.failedImages.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need kubectl curl
require_context

url="http://localhost:$LB_PORT/hello"
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

image() { printf '%s:%s' "$SAMPLE_IMAGE" "$1"; }
patch_image() {
  run kubectl -n "$NAMESPACE" patch canaryapp "$APP" --type=merge -p "{\"spec\":{\"image\":\"$(image "$1")\"}}"
}

log "traffic: about 10 requests per second to $url (Host: $APP_HOST)"
curl -fsS -H "Host: $APP_HOST" "$url" || die "the sample does not answer through the gateway; is up.sh done?"
echo
(
  while true; do
    curl -s -o /dev/null -H "Host: $APP_HOST" "$url" || true
    sleep 0.1
  done
) &
pids+=($!)
# One line per change of image, phase or weight, as the controller reports it.
kubectl -n "$NAMESPACE" get canaryapp "$APP" --watch --output-watch-events &
pids+=($!)

log "v2: tested on the secondary while its weight climbs, then promoted"
patch_image v2
run kubectl -n "$NAMESPACE" wait "canaryapp/$APP" --for=jsonpath='{.status.primaryImage}'="$(image v2)" --timeout=10m
run kubectl -n "$NAMESPACE" wait "canaryapp/$APP" --for=jsonpath='{.status.phase}'=Healthy --timeout=5m
curl -sS -H "Host: $APP_HOST" "$url"
echo

log "v3: answers 500; the analysis catches it and traffic returns to v2"
patch_image v3
run kubectl -n "$NAMESPACE" wait "canaryapp/$APP" --for=jsonpath='{.status.phase}'=Failed --timeout=10m

log "the end"
run kubectl -n "$NAMESPACE" get canaryapp "$APP" \
  -o jsonpath='{range .status.failedImages[*]}{.image}{"  reason="}{.reason}{"  "}{.metric}{"="}{.value}{"\n  "}{.message}{"\n"}{end}'
run kubectl -n "$NAMESPACE" get virtualservice "$APP" -o jsonpath='{.spec.http[0].route}'
echo
run kubectl -n "$NAMESPACE" describe canaryapp "$APP"
primary=$(kubectl -n "$NAMESPACE" get canaryapp "$APP" -o jsonpath='{.status.primaryImage}')
[ "$primary" = "$(image v2)" ] || die "the primary runs $primary, expected $(image v2)"
echo "v2 serves, v3 is recorded as failed: the story ended as it should"
