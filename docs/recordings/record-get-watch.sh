#!/usr/bin/env bash
# Records `kubectl canaryapp get canaryapp-sample -w` during the demo's story (v1 live, v2 promoted step by
# step, v3 caught and rolled back) as e2e/story.test.ts plays it on the full local cluster (kwok pods, the
# traffic simulator, real Prometheus, the controller): the plugin follows the app in a tmux pane, captured
# at three moments; then `kubectl canaryapp wait --for=healthy` on v3, with its exit code, and `history`.
# After `make build`, from the repository root:
#   node dist/e2e/cluster/with-cluster.js --profile cluster -- docs/recordings/record-get-watch.sh [OUTPUT]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-$repo/docs/recordings/kubectl-canaryapp-get-watch.txt}
[ -n "${KUBECONFIG:-}" ] || { echo "run under e2e/cluster/with-cluster.js --profile cluster (see the header)" >&2; exit 2; }
# shellcheck source=/dev/null
source "$repo/e2e/toolchain/versions.env"
cache=${CANARYAPP_CACHE:-$HOME/.cache/canaryapp}
export PATH="$repo/bin:$cache/kubernetes-v$KUBERNETES_VERSION:$cache/node-$NODE_MAJOR/node_modules/node/bin:$PATH"
app=canaryapp-sample
session=canaryapp-record-$$
work=$(mktemp -d)

(cd "$repo" && node --test --test-reporter=spec dist/e2e/story.test.js >"$work/story.log" 2>&1) &
story=$!
cleanup() { tmux kill-session -t "$session" 2>/dev/null || true; }
trap cleanup EXIT

until ns=$(kubectl get canaryapp -A -o jsonpath='{.items[0].metadata.namespace}' 2>/dev/null) && [ -n "$ns" ]; do
  kill -0 "$story" 2>/dev/null || { cat "$work/story.log" >&2; exit 1; }
  sleep 0.2
done

tmux new-session -d -s "$session" -x 200 -y 45 \
  "export KUBECONFIG='$KUBECONFIG' PATH='$PATH'; kubectl canaryapp get $app -n $ns -w"

state() { kubectl get canaryapp "$app" -n "$ns" -o jsonpath="$1" 2>/dev/null || true; }
# Captures the pane (wrapped lines joined) as soon as it shows every pattern: the moment as the user saw it.
capture_when() {
  local title=$1 screen pattern missing
  shift
  while :; do
    screen=$(tmux capture-pane -p -J -t "$session" | sed -e 's/[[:space:]]*$//')
    missing=0
    for pattern in "$@"; do grep -qE -- "$pattern" <<<"$screen" || missing=1; done
    [ "$missing" = 0 ] && break
    sleep 0.05
  done
  { echo "=== $title"; echo "\$ kubectl canaryapp get $app -n $ns -w"; sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' <<<"$screen"; echo; } >>"$out.tmp"
}

{
  echo "# kubectl canaryapp get -w during the demo's story (e2e/story.test.ts on the cluster profile), captured with"
  echo "# tmux capture-pane by docs/recordings/record-get-watch.sh on $(date -u +%Y-%m-%d); each frame is the screen as it was."
  echo
} >"$out.tmp"
capture_when "1. v2 under test: step 3 of 5, 30% of traffic on the secondary" \
  '^Steps: .* step 3 of 5' '^Traffic: +primary 70% +secondary 30%' '^Analysis: +passed'
capture_when "2. v2 promoted: the primary runs it, all traffic on it, the secondary gone" \
  '^Phase: +Healthy$' '^Primary: +\S+:v2$' '^└── VirtualService/\S+ +primary 100 +secondary 0$' 'Normal +Promoted '
until [[ "$(state '{.spec.image}')" == *:v3 ]]; do sleep 0.1; done
waitlog=$work/wait.txt
(
  set +e
  kubectl canaryapp wait "$app" -n "$ns" --for=healthy --timeout=5m >"$waitlog" 2>&1
  echo "(exit code $?)" >>"$waitlog"
) &
waiter=$!
capture_when "3. v3 caught at its first step and rolled back: Failed, with the reason and the measured value" \
  '^Phase: +Failed$' 'Warning +RolledBack ' '^└── VirtualService/\S+ +primary 100 +secondary 0$'
kubectl canaryapp history "$app" -n "$ns" >"$work/history.txt"
wait "$waiter" || true
{
  echo "=== 4. a pipeline waiting on v3 (started as soon as v3 was deployed)"
  echo "\$ kubectl canaryapp wait $app -n $ns --for=healthy --timeout=5m"
  cat "$waitlog"
  echo
  echo "\$ kubectl canaryapp history $app -n $ns"
  cat "$work/history.txt"
} >>"$out.tmp"
mv "$out.tmp" "$out"
wait "$story" || { echo "the story test failed:" >&2; cat "$work/story.log" >&2; exit 1; }
echo "wrote $out"
