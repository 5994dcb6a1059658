#!/usr/bin/env bash
# Installs Debian's influxdb (1.x), victoria-metrics and graphite-web packages when their servers are missing:
# the real servers that test/integration/{influxdb,victoria-metrics,graphite}-source.test.ts start (through
# e2e/metric-servers.ts). Only `make metric-servers`, a prerequisite of test-integration, runs this.
# Idempotent: servers already there are kept.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=apt-install.sh
source "$here/apt-install.sh"
log() { echo "[metric-servers] $*" >&2; }

missing=()
[ -x "${INFLUXD_BINARY:-/usr/bin/influxd}" ] || missing+=(influxdb)
[ -x "${VICTORIA_METRICS_BINARY:-/usr/bin/victoria-metrics}" ] || missing+=(victoria-metrics)
[ -f /usr/lib/python3/dist-packages/graphite/settings.py ] && /usr/bin/python3 -c "import whisper" 2>/dev/null ||
  missing+=(graphite-web python3-whisper)
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
log "installing Debian's ${missing[*]}"
apt_install "${missing[@]}"
# The packages enable their own services; the tests start their own servers on free ports instead.
for service in influxdb victoria-metrics carbon-cache; do
  systemctl disable --now "$service" >/dev/null 2>&1 || true
done
