# Origin (a remote site's storage): generated test files with recorded
# adler32 checksums, served read-only by a standalone XRootD.
. provision/lib.sh
data=/srv/origin/data
want="$TB_ORIGIN_FILES x $TB_ORIGIN_FILE_MB MB"
if [ "$(cat /srv/origin/.generated 2>/dev/null)" != "$want" ]; then
  rm -rf /srv/origin && install -d -o xrootd -g xrootd /srv/origin "$data"
  # one random MiB repeated, behind a unique random header per file: fast to
  # make under TCG, and every file has a distinct checksum
  head -c 1048576 /dev/urandom > /srv/origin/.block
  for i in $(seq -f %03g 1 "$TB_ORIGIN_FILES"); do
    { head -c 4096 /dev/urandom
      for _ in $(seq 2 "$TB_ORIGIN_FILE_MB"); do cat /srv/origin/.block; done
      head -c $((1048576 - 4096)) /srv/origin/.block; } > "$data/file-$i"
  done
  rm -f /srv/origin/.block
  (cd "$data" && for f in file-*; do echo "$(xrdadler32 "$f" | cut -d' ' -f1) $f"; done) > /srv/origin/checksums.txt
  chown -R xrootd:xrootd /srv/origin
  echo "$want" > /srv/origin/.generated
fi
put etc/xrootd/xrootd-origin.cfg
restart=0; changed xrootd-origin.cfg && restart=1
start_or_restart xrootd@origin.service "$restart"
