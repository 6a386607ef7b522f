#!/bin/bash
# On an existing host (topology `existing:`), before provision/apply.sh: record every
# change provisioning is about to make in the ledger, then make the ones only an
# existing host needs (packages, users, the site address). `testbed down` runs
# remove.sh, which undoes exactly what the ledger lists and nothing else.
#
#   prepare.sh plan  CHANGES          print what would change (`would<TAB>...` lines); changes nothing
#   prepare.sh apply CHANGES MARKER   check, record, then change; MARKER is the owner file to write
#
# CHANGES (rendered by testbed/machines/ledger.py), one tab-separated entry a line:
#   path P | dir P         a path provisioning (or a package) creates: recorded when absent
#   file P SHA256          a file provisioning installs: created (recorded) or replaced (original kept)
#   exclusive P            a path a role script replaces whole: it must not exist unless recorded
#   user NAME              an account the suites run jobs as
#   package NAME           a Debian package the roles need
#   address IFACE CIDR     the host's site address on its site interface
#   sysctl KEY [VALUE]     a kernel setting a profile may set: its value now is recorded
#   block FILE             a marked block of lines provisioning keeps in FILE
#   service UNIT           a unit provisioning enables and starts
# Ledger lines (TESTBED_LEDGER): path P | backup P | package NAME | user NAME | group NAME |
#   address IFACE CIDR | link IFACE | sysctl KEY OLD | block FILE | service UNIT.
# Exit 3 with `conflict<TAB>...` lines when the host is not the testbed's to change.
# TB_ROOT (tests only) prefixes every path.
set -euo pipefail
mode=$1 changes=$2 marker_new=${3:-}
R=${TB_ROOT:-}
ledger=$R/var/lib/testbed/ledger
backup=$R/var/lib/testbed/backup
marker=$R/etc/testbed/installed-by
TAB=$'\t'

in_ledger() {  # in_ledger KIND KEY
  [ -f "$ledger" ] && awk -F'\t' -v k="$1" -v p="$2" '$1 == k && $2 == p {f = 1} END {exit !f}' "$ledger"
}
covered() {  # covered P: P or a folder above it is a path the testbed created
  [ -f "$ledger" ] && awk -F'\t' -v p="$1" '$1 == "path" && (p == $2 || index(p, $2 "/") == 1) {f = 1}
    END {exit !f}' "$ledger"
}
topmost_missing() {  # the highest folder above P (or P) that does not exist; empty when P exists
  local q=$1 top=""
  while [ "$q" != / ] && [ ! -e "$R$q" ] && [ ! -L "$R$q" ]; do top=$q; q=$(dirname "$q"); done
  echo "$top"
}
owner_of() { sed -n 's/^owner=//p' "$1" 2>/dev/null | head -1; }
topology_of() { sed -n 's/^topology=//p' "$1" 2>/dev/null | head -1; }
pkg_installed() { [ "$(dpkg-query -W -f '${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]; }
sysctl_now() { sysctl -n "$1" 2>/dev/null | tr -s ' \t' '  ' | sed 's/ *$//'; }

conflicts=() records=() would=() packages=() users=() addresses=()
declare -A pending=()
note() { would+=("$(IFS=$TAB; echo "$*")"); }
record() {  # record KIND KEY [VALUE]: once per KIND KEY (the first value is the original)
  in_ledger "$1" "$2" && return 0
  [ -z "${pending[$1$TAB$2]:-}" ] || return 0
  pending[$1$TAB$2]=1
  records+=("$(IFS=$TAB; echo "$*")")
}

# --- 1. is the host the testbed's to change? ----------------------------------------------
if [ -f "$marker" ]; then
  if [ -n "$marker_new" ] && [ "$(owner_of "$marker")" != "$(owner_of "$marker_new")" ]; then
    conflicts+=("claimed${TAB}by topology $(topology_of "$marker") of $(owner_of "$marker")")
  fi
elif pkg_installed condor || [ -e "$R/etc/condor" ] || command -v condor_master >/dev/null 2>&1; then
  conflicts+=("htcondor${TAB}HTCondor is installed and the testbed did not install it (no ${marker#$R})")
fi
while IFS=$TAB read -r kind a b; do
  if [ "$kind" = exclusive ] && { [ -e "$R$a" ] || [ -L "$R$a" ]; } && ! covered "$a"; then
    conflicts+=("exclusive${TAB}$a exists and is not the testbed's (provisioning would replace it)")
  fi
  if [ "$kind" = address ] && ! ip -o link show dev "$a" >/dev/null 2>&1; then
    conflicts+=("interface${TAB}no network interface $a (existing.interface)")
  fi
done < "$changes"
if [ "${#conflicts[@]}" -gt 0 ]; then
  printf 'conflict\t%s\n' "${conflicts[@]}"
  exit 3
fi

# --- 2. what changes, and what the ledger records before anything does ---------------------
while IFS=$TAB read -r kind a b; do
  case $kind in
    path|dir|exclusive)
      covered "$a" && continue
      top=$(topmost_missing "$a")
      if [ -n "$top" ]; then record path "$top"; note "$kind" "$a"; fi ;;
    file)
      if covered "$a" || in_ledger backup "$a"; then
        if [ -f "$R$a" ] && [ "$(sha256sum < "$R$a" | cut -d' ' -f1)" != "$b" ]; then note update "$a"; fi
        if [ ! -e "$R$a" ]; then note update "$a"; fi
      elif [ -f "$R$a" ]; then
        if [ "$(sha256sum < "$R$a" | cut -d' ' -f1)" != "$b" ]; then note replace "$a"; fi
        record backup "$a"
      else
        top=$(topmost_missing "$a")
        if [ -n "$top" ] && ! covered "$top"; then record path "$top"; fi
        note create "$a"
      fi ;;
    user)
      if ! getent passwd "$a" >/dev/null; then users+=("$a"); note user "$a"; fi ;;
    package)
      if ! pkg_installed "$a"; then packages+=("$a"); record package "$a"; fi ;;
    address)
      if ! ip -o -4 addr show dev "$a" | grep -q " ${b%/*}/"; then
        addresses+=("$a$TAB$b"); note address "$a" "$b"
        if ! ip -o link show dev "$a" | grep -q "[<,]UP[,>]"; then record link "$a"; fi
        record address "$a" "$b"
      fi ;;
    sysctl)
      now=$(sysctl_now "$a")
      [ -n "$now" ] || continue   # not a setting of this kernel: provisioning does not set it either
      record sysctl "$a" "$now"
      if [ -n "$b" ] && [ "$now" != "$b" ]; then note sysctl "$a" "$now -> $b"; fi ;;
    block)
      if ! in_ledger block "$a"; then note block "$a"; fi
      record block "$a" ;;
    service)
      if ! in_ledger service "$a"; then
        st=$(systemctl is-enabled "$a" 2>/dev/null || true)
        if [ "$st" != enabled ] || ! systemctl is-active -q "$a" 2>/dev/null; then
          note service "$a"; record service "$a"
        fi
      fi ;;
  esac
done < "$changes"

if [ "${#packages[@]}" -gt 0 ]; then
  note packages "${packages[*]}"
  # every package apt would install with them (read-only: a simulation)
  deps=$(apt-get -s -q install --no-install-recommends "${packages[@]}" 2>/dev/null \
         | awk '/^Inst / {print $2}' | grep -vxF -f <(printf '%s\n' "${packages[@]}") | tr '\n' ' ' || true)
  if [ -n "${deps% }" ]; then note dependencies "${deps% }"; fi
fi

if [ "$mode" = plan ]; then
  for w in "${would[@]:+${would[@]}}"; do printf 'would\t%s\n' "$w"; done
  exit 0
fi

# --- 3. apply: the ledger first, then the changes it lists -----------------------------------
mkdir -p "$(dirname "$ledger")" "$(dirname "$marker")"
for r in "${records[@]:+${records[@]}}"; do printf '%s\n' "$r" >> "$ledger"; done
install -m 0644 "$marker_new" "$marker"
while IFS=$TAB read -r kind a b; do
  if [ "$kind" = backup ] && [ -e "$R$a" ] && [ ! -e "$backup$a" ]; then
    mkdir -p "$(dirname "$backup$a")" && cp -a "$R$a" "$backup$a"
  fi
done < "$ledger"

if [ "${#packages[@]}" -gt 0 ]; then
  # nothing the packages ship starts before provisioning has placed keys and config
  # (Debian starts a service at installation unless policy-rc.d says no)
  # (a policy-rc.d of the host's own is left as it is)
  policy=$R/usr/sbin/policy-rc.d ours=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 0755 "$policy" && ours=1
    trap 'rm -f "$policy"' EXIT
  fi
  before_pkgs=$(dpkg-query -W -f '${Package}\n' | sort)
  before_users=$(getent passwd | cut -d: -f1 | sort) before_groups=$(getent group | cut -d: -f1 | sort)
  rc=0
  export DEBIAN_FRONTEND=noninteractive
  apt-get -q update >/dev/null && apt-get -y -q install --no-install-recommends "${packages[@]}" >/dev/null || rc=$?
  # what the installation added besides the packages asked for: their dependencies, the
  # system users and groups their scripts made
  { comm -13 <(echo "$before_pkgs") <(dpkg-query -W -f '${Package}\n' | sort) | sed 's/^/package\t/'
    comm -13 <(echo "$before_users") <(getent passwd | cut -d: -f1 | sort) | sed 's/^/user\t/'
    comm -13 <(echo "$before_groups") <(getent group | cut -d: -f1 | sort) | sed 's/^/group\t/'
  } | grep -vxF -f "$ledger" >> "$ledger" || true
  if [ -n "$ours" ]; then rm -f "$policy"; trap - EXIT; fi
  [ "$rc" -eq 0 ] || { echo "prepare: apt-get install ${packages[*]} failed (rc $rc)" >&2; exit "$rc"; }
fi
for u in "${users[@]:+${users[@]}}"; do
  printf 'user\t%s\n' "$u" >> "$ledger"
  useradd -m -s /bin/bash "$u"
  if getent group "$u" >/dev/null; then printf 'group\t%s\n' "$u" >> "$ledger"; fi
done
for a in "${addresses[@]:+${addresses[@]}}"; do
  ip addr add "${a#*$TAB}" dev "${a%%$TAB*}"
  ip link set "${a%%$TAB*}" up
done
echo "testbed: $(wc -l < "$ledger") changes recorded in ${ledger#$R}"
