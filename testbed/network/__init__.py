"""The emulated WAN: netem plans per destination, applying and measuring links, sampling interfaces."""
