#!/usr/bin/env bash
# Installs Debian's chromium package when no browser is at $CHROMIUM (default /usr/bin/chromium): the headless
# browser that e2e/dashboard.test.ts and `make dashboard-screenshots` drive with playwright-core. Only the make
# targets that need it run this (`make chromium`, a prerequisite of test-e2e and dashboard-screenshots).
# Idempotent: a browser already there is kept.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=apt-install.sh
source "$here/apt-install.sh"
chromium=${CHROMIUM:-/usr/bin/chromium}
log() { echo "[chromium] $*" >&2; }

if [ -x "$chromium" ]; then
  exit 0
fi
[ "$chromium" = /usr/bin/chromium ] || { echo "CHROMIUM=$chromium: no such executable" >&2; exit 1; }
log "installing Debian's chromium package"
apt_install chromium fonts-dejavu-core
"$chromium" --version >&2
