#!/usr/bin/env bash
# Makes sure Debian's chromium is installed for the browser tests (test/browser/), installing it
# with apt-get when it is missing (scripts/ensure-debian-package.sh). Nothing downloads a browser
# build of its own (no `playwright install`): playwright-core drives this one.
#
# Environment: CHROMIUM_PATH (default /usr/bin/chromium), CHROMIUM_INSTALL_TIMEOUT (default 600 s).
set -euo pipefail

chromium="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ -x "$chromium" ] && ! "$chromium" --version >/dev/null 2>&1; then
  echo "ensure chromium: ERROR: $chromium is there but does not run ('$chromium --version' fails)." >&2
  exit 1
fi
INSTALL_TIMEOUT="${CHROMIUM_INSTALL_TIMEOUT:-600}" exec bash "$(dirname "${BASH_SOURCE[0]}")/ensure-debian-package.sh" \
  chromium "'$chromium' --version" chromium
