# DTN: md RAID over the extra virtual disks, XFS aligned to the stripe,
# md knobs from the profile, and the four XRootD instances.
. provision/lib.sh
# The data disks by their serials (tb-data-0..N-1, set by the Vagrantfile), in member
# order: device names (vdb, vdc, ...) need not follow the disks' order.
udevadm settle || true
disks=()
for i in $(seq 0 $((TB_RAID_DEVICES - 1))); do
  disk=/dev/disk/by-id/virtio-tb-data-$i
  [ -b "$disk" ] || { echo "dtn: data disk $disk (serial tb-data-$i) not found" >&2; exit 1; }
  disks+=("$disk")
done
# has_data DISK: an md superblock, or any other signature blkid finds (a file system,
# a partition table); blkid -p exits 2 when it finds nothing.
has_data() {
  local rc=0
  mdadm --examine "$1" >/dev/null 2>&1 && return 0
  blkid -p "$1" >/dev/null 2>&1 || rc=$?
  [ "$rc" -ne 2 ]
}
# ensure_md0 DISK...: create the array only when every member is blank (new disks);
# otherwise assemble it, or stop: never --create (and mkfs) over data.
ensure_md0() {
  local disk used=()
  # after a reboot udev may have auto-assembled the array under another name (md127)
  for md in /dev/md[0-9]*; do [ -e "$md" ] && ! mountpoint -q "$TB_RAID_MOUNT" && mdadm --stop "$md" >/dev/null 2>&1 || true; done
  for disk in "$@"; do if has_data "$disk"; then used+=("$disk"); fi; done
  if [ "${#used[@]}" -eq 0 ]; then
    mdadm --create /dev/md0 --run --metadata=1.2 --level="$TB_RAID_LEVEL" \
      --raid-devices="$TB_RAID_DEVICES" --chunk="${TB_RAID_CHUNK_KB}K" --bitmap=none \
      --assume-clean "$@"
  elif ! mdadm --assemble /dev/md0 "$@"; then
    echo "dtn: cannot assemble /dev/md0 from $*, and ${used[*]} hold md superblocks or" \
      "other data: not creating a new array over them (see mdadm --examine)" >&2
    return 1
  fi
}
[ -e /dev/md0 ] || ensure_md0 "${disks[@]}"
mdadm --detail --scan > /etc/mdadm/mdadm.conf.new
if cmp -s /etc/mdadm/mdadm.conf.new /etc/mdadm/mdadm.conf; then rm /etc/mdadm/mdadm.conf.new
else mv /etc/mdadm/mdadm.conf.new /etc/mdadm/mdadm.conf; fi
if [ -z "$(blkid -o value -s TYPE /dev/md0 || true)" ]; then
  mkfs.xfs -q -d su="${TB_RAID_CHUNK_KB}k",sw="$TB_RAID_DATA_DISKS" /dev/md0
fi
grep -q "^/dev/md0 " /etc/fstab || echo "/dev/md0 $TB_RAID_MOUNT xfs noatime,nofail 0 0" >> /etc/fstab
mkdir -p "$TB_RAID_MOUNT"
mountpoint -q "$TB_RAID_MOUNT" || mount "$TB_RAID_MOUNT"
echo "$TB_MD_STRIPE_CACHE_SIZE" > /sys/block/md0/md/stripe_cache_size
echo "$TB_MD_GROUP_THREAD_CNT" > /sys/block/md0/md/group_thread_cnt
install -d -o xrootd -g xrootd "$TB_RAID_MOUNT/data" "$TB_RAID_MOUNT/xcache"
put etc/xrootd/dtn.cfg
for inst in redir data xcache direct; do ln -sfn dtn.cfg "/etc/xrootd/xrootd-$inst.cfg"; done
restart=0; changed /etc/xrootd/dtn.cfg && restart=1
for unit in cmsd@redir xrootd@redir cmsd@data xrootd@data xrootd@xcache xrootd@direct; do
  start_or_restart "$unit.service" "$restart"
done
