"""Robot Framework keywords of the emulated WAN, thin over `testbed.harness.session`
(which sets, measures and clears the links through `testbed.network.wan`)."""
from robot.api import logger
from robot.api.deco import keyword, library

from _site_library import SiteLibrary


@library(scope="SUITE", auto_keywords=False)
class NetworkLibrary(SiteLibrary):

    @keyword
    def set_wan_latency(self, a, b, rtt_ms):
        """Emulate `rtt_ms` between host groups a and b (LAN elsewhere); returns the measured RTT."""
        return self.site.set_wan_latency(a, b, rtt_ms, echo=logger.console)

    @keyword
    def set_wan_latency_if_needed(self, a, b, rtt_ms):
        """Set `rtt_ms` between a and b unless this suite set it last; returns the measured RTT."""
        return self.site.set_wan_latency_if_needed(a, b, rtt_ms, echo=logger.console)

    @keyword
    def measured_rtt_should_match(self, configured, measured, base=0.0):
        self.site.check_measured_rtt(configured, measured, base)

    @keyword
    def measure_rtt(self, a, b):
        """The RTT between a and b without emulation, the base a suite's WAN is checked
        against: measured, less what the links in force add between them (a topology's
        own, e.g. `default`'s dtn<->origin, or a link an earlier row set)."""
        return self.site.lan_rtt(a, b)

    @keyword
    def clear_wan(self):
        self.site.clear_wan()
