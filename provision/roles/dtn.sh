# DTN: md RAID over the extra virtual disks, XFS aligned to the stripe,
# md knobs from the profile, and the four XRootD instances.
. provision/lib.sh
mapfile -t disks < <(lsblk -dn -o NAME,TYPE | awk '$2=="disk" && $1!="vda" {print "/dev/"$1}' | sort | head -n "$TB_RAID_DEVICES")
if [ "${#disks[@]}" -lt "$TB_RAID_DEVICES" ]; then
  echo "dtn: expected $TB_RAID_DEVICES data disks, found ${#disks[@]}: ${disks[*]}" >&2; exit 1
fi
if [ ! -e /dev/md0 ]; then
  # after a reboot udev may have auto-assembled the array under another name (md127)
  for md in /dev/md[0-9]*; do [ -e "$md" ] && ! mountpoint -q "$TB_RAID_MOUNT" && mdadm --stop "$md" >/dev/null 2>&1 || true; done
  mdadm --assemble /dev/md0 "${disks[@]}" 2>/dev/null ||
    mdadm --create /dev/md0 --run --metadata=1.2 --level="$TB_RAID_LEVEL" \
      --raid-devices="$TB_RAID_DEVICES" --chunk="${TB_RAID_CHUNK_KB}K" --bitmap=none \
      --assume-clean "${disks[@]}"
fi
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
