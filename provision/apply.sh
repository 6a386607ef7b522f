#!/bin/bash
# `testbed provision` runs this on every VM (as root, over SSH). It unpacks the
# host's rendered bundle (uploaded to a temporary file, the first argument) and
# runs the role scripts. Idempotent: a second run changes nothing and restarts nothing.
set -euo pipefail
bundle=${1:-/tmp/testbed-provision.tgz}
dir=/var/lib/testbed/provision
# one provisioning at a time per host (an interrupted run's may still be going)
mkdir -p /var/lib/testbed
exec 9>/var/lib/testbed/provision.lock
flock 9
rm -rf "$dir.new" && mkdir -p "$dir.new" && tar -xzf "$bundle" -C "$dir.new"
rm -rf "$dir" && mv "$dir.new" "$dir"
chmod -R go-rwx "$dir/secrets"
cd "$dir"
# shellcheck disable=SC1091
. files/etc/testbed/host.env
bash provision/system.sh
for role in $TB_ROLES; do
  if [ -f "provision/$role.sh" ]; then bash "provision/$role.sh"; fi
done
if [ "$TB_CONDOR" = 1 ]; then bash provision/condor.sh; fi
echo "testbed: $TB_HOST provisioned ($TB_ROLES)"
