# Sourced by setup.sh and libvirtd.sh: the host ledger, one line per change this project
# made outside its folders ("KIND<TAB>WHAT"), written before the change and only when it
# is made (what was there before is never listed, so never undone). `testbed host
# changes` lists it, `testbed host undo` undoes it (testbed/machines/host_ledger.py).
TESTBED_HOST_LEDGER=${TESTBED_HOST_LEDGER:-/var/lib/grid-testbed/host-ledger}
ledger_has() { grep -qxF "$(printf '%s\t%s' "$1" "$2")" "$TESTBED_HOST_LEDGER" 2>/dev/null; }
ledger_note() {
  ledger_has "$1" "$2" && return 0
  mkdir -p "$(dirname "$TESTBED_HOST_LEDGER")"
  printf '%s\t%s\n' "$1" "$2" >> "$TESTBED_HOST_LEDGER"
}
# the packages installed now (status "ii"), one per line, sorted
installed_packages() { dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' 2>/dev/null | awk '$1 == "ii" {print $2}' | sort; }
# install the packages of "$@" that are missing, noting each and every dependency apt
# pulls in (they are the testbed's too)
install_packages() {
  local missing=() p before
  for p in "$@"; do
    dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  [ "${#missing[@]}" -gt 0 ] || return 0
  printf '[setup] apt: installing %s\n' "${missing[*]}"
  for p in "${missing[@]}"; do ledger_note package "$p"; done
  before=$(installed_packages)
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  for p in $(comm -13 <(printf '%s\n' "$before") <(installed_packages)); do ledger_note package "$p"; done
}
