#!/usr/bin/env bash
# Installs Debian's python3-scipy package when $PYTHON (default /usr/bin/python3, Debian's own) cannot import
# scipy: the reference the judge's Mann-Whitney test is checked against (tools/judge/reference.py,
# test/integration/judge-scipy-live.test.ts, `make judge-reference`). Only the make targets that need it run this
# (`make scipy`, a prerequisite of judge-reference). Idempotent: a scipy already there is kept.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=apt-install.sh
source "$here/apt-install.sh"
python=${PYTHON:-/usr/bin/python3}
log() { echo "[scipy] $*" >&2; }

if "$python" -c 'import scipy' 2>/dev/null; then
  exit 0
fi
[ "$python" = /usr/bin/python3 ] || { echo "PYTHON=$python cannot import scipy; install it for that python" >&2; exit 1; }
log "installing Debian's python3-scipy package"
apt_install python3-scipy
"$python" -c 'import scipy; print("scipy", scipy.__version__)' >&2
