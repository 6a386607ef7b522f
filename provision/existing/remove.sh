#!/bin/bash
# `testbed down` on an existing host: undo what the ledger (written by prepare.sh) lists,
# and nothing else. Prints one `done<TAB>what<TAB>detail` or `kept<TAB>what<TAB>why` line
# per item, for the summary `down` prints.
#
#   remove.sh OWNER BEGIN END   OWNER: the checkout's identity (a host claimed by another is left
#                               alone); BEGIN, END: the marker lines of the blocks it removes
#
# Order: services stopped, the site address and kernel settings put back, blocks and
# replaced files restored, created files removed, packages purged, accounts deleted,
# created folders removed, and last the ledger, the backups and the marker.
# TB_ROOT (tests only) prefixes every path.
set -euo pipefail
owner=$1 BEGIN=$2 END=$3
R=${TB_ROOT:-}
ledger=$R/var/lib/testbed/ledger
backup=$R/var/lib/testbed/backup
marker=$R/etc/testbed/installed-by
# folders no ledger line may remove, whatever it says (each existed before any testbed)
PROTECTED=" / /bin /boot /dev /etc /home /lib /lib64 /opt /proc /root /run /sbin /srv /sys /tmp /usr /var \
/var/lib /var/log /var/spool /var/tmp /usr/local /usr/sbin /usr/bin /usr/lib "

if [ ! -f "$marker" ] && [ ! -f "$ledger" ]; then
  echo "nothing	host	the testbed installed nothing here"
  exit 0
fi
if [ -f "$marker" ]; then
  mine=$(sed -n 's/^owner=//p' "$marker" | head -1)
  if [ "$mine" != "$owner" ]; then
    echo "conflict	claimed	by topology $(sed -n 's/^topology=//p' "$marker" | head -1) of $mine"
    exit 3
  fi
fi
touch "$ledger"
entries() { awk -F'\t' -v k="$1" '$1 == k' "$ledger"; }
say() { printf '%s\t%s\t%s\n' "$@"; }

while IFS=$'\t' read -r _ unit; do
  if systemctl disable --now "$unit" >/dev/null 2>&1; then say done service "$unit"
  else say kept service "$unit: systemctl disable --now failed"; fi
done < <(entries service)
while IFS=$'\t' read -r _ iface cidr; do
  if ip addr del "$cidr" dev "$iface" 2>/dev/null; then say done address "$cidr on $iface"; fi
done < <(entries address)
while IFS=$'\t' read -r _ iface; do
  ip link set "$iface" down 2>/dev/null && say done link "$iface down again"
done < <(entries link)
while IFS=$'\t' read -r _ key value; do
  if sysctl -q -w "$key=$value" >/dev/null 2>&1; then say done sysctl "$key = $value"
  else say kept sysctl "$key: could not set it back to $value"; fi
done < <(entries sysctl)
while IFS=$'\t' read -r _ file; do
  if [ -f "$R$file" ] && grep -qF "$BEGIN" "$R$file"; then
    awk -v b="$BEGIN" -v e="$END" 'index($0, b) == 1 {skip = 1} !skip {print} index($0, e) == 1 {skip = 0}' \
      "$R$file" > "$R$file.testbed-tmp"
    cat "$R$file.testbed-tmp" > "$R$file" && rm -f "$R$file.testbed-tmp"   # same file, same owner and mode
    say done block "$file"
  fi
done < <(entries block)
while IFS=$'\t' read -r _ file; do
  if [ -e "$backup$file" ]; then cp -a "$backup$file" "$R$file" && say done restored "$file"
  else say kept restored "$file: no copy of the original in ${backup#$R}"; fi
done < <(entries backup)

mapfile -t pkgs < <(entries package | cut -f2)
if [ "${#pkgs[@]}" -gt 0 ]; then
  installed=()
  for p in "${pkgs[@]}"; do
    case "$(dpkg-query -W -f '${Status}' "$p" 2>/dev/null || true)" in
      "install ok installed"|*config-files) installed+=("$p") ;;
    esac
  done
  if [ "${#installed[@]}" -gt 0 ]; then
    # apt would also take out what depends on them: only if every such package is on the list
    extra=$(apt-get -s -q purge "${installed[@]}" 2>/dev/null | awk '/^(Purg|Remv) / {print $2}' \
            | grep -vxF -f <(printf '%s\n' "${installed[@]}") | tr '\n' ' ' || true)
    if [ -n "${extra% }" ]; then
      say kept packages "${installed[*]}: removing them would also remove ${extra% } (installed since)"
    elif DEBIAN_FRONTEND=noninteractive apt-get -y -q purge "${installed[@]}" >/dev/null 2>&1; then
      say done packages "${installed[*]}"
    else
      say kept packages "${installed[*]}: apt-get purge failed"
    fi
  fi
fi
while IFS=$'\t' read -r _ user; do
  if getent passwd "$user" >/dev/null; then
    if userdel "$user" 2>/dev/null; then say done user "$user"; else say kept user "$user: userdel failed"; fi
  fi
done < <(entries user)
while IFS=$'\t' read -r _ group; do
  if getent group "$group" >/dev/null; then groupdel "$group" 2>/dev/null && say done group "$group"; fi
done < <(entries group)
# deepest first
while IFS=$'\t' read -r _ path; do
  case "$PROTECTED" in *" $path "*) say kept path "$path: never removed"; continue ;; esac
  [ "${path#/}" != "$path" ] || { say kept path "$path: not an absolute path"; continue; }
  case "/$path/" in */../*|*/./*) say kept path "$path: not a plain path"; continue ;; esac
  if [ -e "$R$path" ] || [ -L "$R$path" ]; then rm -rf --one-file-system "${R:-}$path" && say done path "$path"; fi
done < <(entries path | awk -F'\t' '{print length($2) "\t" $0}' | sort -rn | cut -f2-)

rm -rf "$backup"
rm -f "$ledger" "$marker"
systemctl daemon-reload >/dev/null 2>&1 || true
say done record "the ledger, the backups and the marker"
