#!/usr/bin/env bash
# Installs Debian's influxdb (1.x), victoria-metrics and graphite-web packages when their servers are missing:
# the real servers that test/integration/{influxdb,victoria-metrics,graphite}-source.test.ts start (through
# e2e/metric-servers.ts). Only `make metric-servers`, a prerequisite of test-integration, runs this.
# Idempotent: servers already there are kept.
set -euo pipefail
log() { echo "[metric-servers] $*" >&2; }

missing=()
[ -x "${INFLUXD_BINARY:-/usr/bin/influxd}" ] || missing+=(influxdb)
[ -x "${VICTORIA_METRICS_BINARY:-/usr/bin/victoria-metrics}" ] || missing+=(victoria-metrics)
[ -f /usr/lib/python3/dist-packages/graphite/settings.py ] && /usr/bin/python3 -c "import whisper" 2>/dev/null ||
  missing+=(graphite-web python3-whisper)
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "${missing[*]} missing: rerun as root, or: sudo apt-get install ${missing[*]}" >&2; exit 1; }
log "installing Debian's ${missing[*]}"
# The packages would start their services; the tests start their own servers, so forbid service starts for the
# duration of the install (the standard policy-rc.d mechanism, as install-prerequisites.sh does for prometheus).
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy"
  trap 'rm -f "$policy"' EXIT
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The packages enable their own services; the tests start their own servers on free ports instead.
for service in influxdb victoria-metrics carbon-cache; do
  systemctl disable --now "$service" >/dev/null 2>&1 || true
done
