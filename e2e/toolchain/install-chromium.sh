#!/usr/bin/env bash
# Installs Debian's chromium package when no browser is at $CHROMIUM (default /usr/bin/chromium): the headless
# browser that e2e/dashboard.test.ts and `make dashboard-screenshots` drive with playwright-core. Only the make
# targets that need it run this (`make chromium`, a prerequisite of test-e2e and dashboard-screenshots).
# Idempotent: a browser already there is kept.
set -euo pipefail
chromium=${CHROMIUM:-/usr/bin/chromium}
log() { echo "[chromium] $*" >&2; }

if [ -x "$chromium" ]; then
  exit 0
fi
[ "$chromium" = /usr/bin/chromium ] || { echo "CHROMIUM=$chromium: no such executable" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "chromium missing: rerun as root, or: sudo apt-get install chromium" >&2; exit 1; }
log "installing Debian's chromium package"
apt-get update -qq
# fonts-dejavu-core: text in the screenshots the same on every machine.
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
"$chromium" --version >&2
