#!/bin/bash
# Vagrant's shell provisioner runs this on every VM (as root). It unpacks the
# host's rendered bundle (uploaded to /tmp/testbed-provision.tgz) and runs the
# role scripts. Idempotent: a second run changes nothing and restarts nothing.
set -euo pipefail
bundle=${1:-/tmp/testbed-provision.tgz}
dir=/var/lib/testbed/provision
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
