#!/bin/bash
# The headless browser `testbed test` renders the documentation site and a run's report in
# (Debian's chromium-headless-shell), installed on first use: `./tb demo` never needs it.
# Idempotent; `testbed host undo` removes it with the rest.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/provision/host/ledger.sh"
mkdir -p /run/lock
exec 8>/run/lock/grid-testbed-setup.lock   # not beside another `./tb`'s apt
flock 8
install_packages chromium-headless-shell
