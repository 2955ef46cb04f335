#!/usr/bin/env bash
# Makes sure a program the tests drive is installed from Debian's packages, installing it with
# apt-get when it is missing (CI runs as root). Nothing is downloaded from anywhere else.
#
# Usage: scripts/ensure-debian-package.sh <name> <check command> <package>...
#   e.g. scripts/ensure-debian-package.sh chromium "chromium --version" chromium
#
# Prints nothing when the check command succeeds; one line when it installs the packages
# (apt-get's output goes to a log file, shown when the install fails). Exits non-zero with a clear
# message when the program is missing and cannot be installed: not root, apt-get failing, or the
# install taking longer than INSTALL_TIMEOUT seconds (default 600).
set -euo pipefail

[ $# -ge 3 ] || { echo "usage: $0 <name> <check command> <package>..." >&2; exit 2; }
name="$1"
check="$2"
shift 2
packages="$*"
install_timeout="${INSTALL_TIMEOUT:-600}"
install_command="apt-get install -y --no-install-recommends $packages"

fail() {
  echo >&2
  echo "ensure $name: ERROR: $*" >&2
  echo >&2
  exit 1
}

works() { bash -c "$check" >/dev/null 2>&1; }

if works; then exit 0; fi

# Two Jest processes may ask at once (npm test runs the end-to-end shards concurrently): apt-get
# would refuse the second for dpkg's lock. One installs while the other waits, then checks again.
if command -v flock >/dev/null 2>&1; then
  exec 9>"${TMPDIR:-/tmp}/mss-ensure-debian-package.lock"
  flock -w "$((install_timeout + 60))" 9 || fail "another install held the lock for more than $((install_timeout + 60)) s"
  if works; then exit 0; fi
fi

[ "$(id -u)" = 0 ] || fail "the tests need $name ('$check' fails). Install it as root: apt-get update && $install_command"
command -v apt-get >/dev/null 2>&1 || fail "$name is missing ('$check' fails) and there is no apt-get to install it with."

log=$(mktemp -t "ensure-$name.XXXXXX.log")
started=$(date +%s)
echo "ensure $name: missing; installing Debian's packages ($install_command, up to ${install_timeout} s, log: $log)" >&2
status=0
# apt-get update first: on a machine kept from an earlier session the lists may be stale or absent.
timeout "$install_timeout" bash -c "export DEBIAN_FRONTEND=noninteractive; apt-get update -q && $install_command" \
  >"$log" 2>&1 || status=$?
if [ "$status" = 124 ]; then
  tail -n 20 "$log" >&2
  fail "installing took longer than ${install_timeout} s and was stopped (INSTALL_TIMEOUT raises the limit). Log: $log"
elif [ "$status" != 0 ]; then
  tail -n 20 "$log" >&2
  fail "'apt-get update && $install_command' failed with exit code $status. Log: $log"
fi
works || fail "$packages installed but '$check' still fails. Log: $log"
echo "ensure $name: installed $packages in $(($(date +%s) - started)) s" >&2
rm -f "$log"
