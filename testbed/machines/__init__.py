"""The VMs: KVM/TCG probe, box, plan, rendering, bring-up in waves, provisioning, libvirt domains, snapshots, host cost."""
