#!/usr/bin/env bash
# Makes sure Debian's chromium is installed for the browser tests (test/browser/), installing it
# with apt-get when it is missing. Nothing downloads a browser build of its own (no
# `playwright install`): playwright-core drives this one.
#
# Usage: scripts/ensure-chromium.sh
#
# Prints nothing when chromium is there; one line when it installs it (apt-get's output goes to a
# log file, shown when the install fails). Exits non-zero with a clear message when chromium is
# missing and cannot be installed: not root, apt-get failing, or the install taking longer than
# CHROMIUM_INSTALL_TIMEOUT seconds (default 600).
#
# Environment: CHROMIUM_PATH (default /usr/bin/chromium), CHROMIUM_INSTALL_TIMEOUT.
set -euo pipefail

chromium="${CHROMIUM_PATH:-/usr/bin/chromium}"
install_timeout="${CHROMIUM_INSTALL_TIMEOUT:-600}"
install_command="apt-get install -y --no-install-recommends chromium"

fail() {
  echo >&2
  echo "ensure-chromium: ERROR: $*" >&2
  echo >&2
  exit 1
}

works() { "$chromium" --version >/dev/null 2>&1; }

if works; then exit 0; fi

[ -x "$chromium" ] && fail "$chromium is there but does not run ('$chromium --version' fails)."
[ "$(id -u)" = 0 ] || fail "the browser tests need Debian's chromium at $chromium, which is missing.
  Install it as root: apt-get update && $install_command"
command -v apt-get >/dev/null 2>&1 || fail "chromium is missing at $chromium and there is no apt-get to install it with."

log=$(mktemp -t ensure-chromium.XXXXXX.log)
started=$(date +%s)
echo "ensure-chromium: chromium is missing; installing Debian's package ($install_command, up to ${install_timeout} s, log: $log)" >&2
status=0
# apt-get update first: on a machine kept from an earlier session the lists may be stale or absent.
timeout "$install_timeout" bash -c "export DEBIAN_FRONTEND=noninteractive; apt-get update -q && $install_command" \
  >"$log" 2>&1 || status=$?
if [ "$status" = 124 ]; then
  tail -n 20 "$log" >&2
  fail "installing chromium took longer than ${install_timeout} s and was stopped (CHROMIUM_INSTALL_TIMEOUT raises the limit). Log: $log"
elif [ "$status" != 0 ]; then
  tail -n 20 "$log" >&2
  fail "'apt-get update && $install_command' failed with exit code $status. Log: $log"
fi
works || fail "chromium was installed but '$chromium --version' fails. Log: $log"
echo "ensure-chromium: installed $("$chromium" --version 2>/dev/null) in $(($(date +%s) - started)) s" >&2
rm -f "$log"
