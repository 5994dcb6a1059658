# shellcheck shell=bash
# apt_install PACKAGE...: installs Debian packages as root, quietly, without starting any service they ship (the
# standard policy-rc.d mechanism, until the script exits, unless a policy already exists): the tests start the
# servers they need themselves, on free ports. Exits with the command to run when not root. Sourced by the
# install-*.sh scripts.
apt_install() {
  [ "$(id -u)" -eq 0 ] || { echo "missing $*: rerun as root, or: sudo apt-get install $*" >&2; exit 1; }
  local policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy"
    # shellcheck disable=SC2064 # the path is fixed now, on purpose
    trap "rm -f '$policy'" EXIT
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
