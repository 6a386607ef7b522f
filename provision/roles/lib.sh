# Helpers shared by the role scripts. Sourced, not run.
set -euo pipefail
# shellcheck disable=SC1091
. files/etc/testbed/host.env
changed_file=/var/lib/testbed/changed
: > "$changed_file"

# put REL [MODE]: install files/REL as /REL when its content differs;
# records the path in $changed_file so callers restart only what changed.
put() {
  local rel=$1 mode=${2:-0644}
  if ! cmp -s "files/$rel" "/$rel"; then
    install -D -m "$mode" "files/$rel" "/$rel"
    echo "/$rel" >> "$changed_file"
  fi
}
changed() { grep -q -- "$1" "$changed_file"; }

# put_block FILE REL: keep files/REL, a block of lines between the markers TB_BLOCK_BEGIN
# and TB_BLOCK_END, in FILE in place of an older one, every other line left as it is
# (an existing host's /etc/hosts); records FILE in $changed_file when it changed.
put_block() {
  local file=$1 tmp
  tmp=$(mktemp)
  awk -v b="$TB_BLOCK_BEGIN" -v e="$TB_BLOCK_END" \
    'index($0, b) == 1 {skip = 1} !skip {print} index($0, e) == 1 {skip = 0}' "$file" > "$tmp"
  cat "files/$2" >> "$tmp"
  if ! cmp -s "$tmp" "$file"; then cat "$tmp" > "$file"; echo "$file" >> "$changed_file"; fi
  rm -f "$tmp"
}

# start_or_restart UNIT CHANGED(0/1): enable; restart when config changed.
# A daemon-reload is seconds of PID 1's emulated CPU under TCG: enabling only adds the
# boot-time symlink (the unit file is unchanged, and `restart` loads it from disk), so it
# reloads nothing; only an unmask needs systemd to read the unit again.
start_or_restart() {
  local st; st=$(systemctl is-enabled "$1" 2>/dev/null || true)
  if [ "$st" = masked ] || [ "$st" = masked-runtime ]; then systemctl unmask "$1" >/dev/null 2>&1 || true; fi
  if [ "$st" != enabled ]; then systemctl enable --no-reload "$1" >/dev/null 2>&1 || true; fi
  if [ "$2" = 1 ] || ! systemctl is-active -q "$1"; then systemctl restart "$1"; fi
}
