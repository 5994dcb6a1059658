#!/usr/bin/env bash
# Deletes the k3d cluster made by up.sh (and with it everything deployed in it).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need k3d
run k3d cluster delete "$CLUSTER"
