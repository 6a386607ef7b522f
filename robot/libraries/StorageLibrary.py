"""Robot Framework keywords of the DTN's storage: its RAID and the XRootD caching proxy,
thin over `testbed.harness.session` and its storage (`testbed.services.storage`)."""
from robot.api import logger
from robot.api.deco import keyword, library

from _site_library import SiteLibrary


@library(scope="SUITE", auto_keywords=False)
class StorageLibrary(SiteLibrary):

    @keyword
    def raid_should_be(self, level, members):
        return self.site.check_raid(level, members)

    @keyword
    def planned_raid_members(self):
        return self.site.storage.dtn.disks.count

    @keyword
    def read_through_caching_proxy_and_check(self, filename):
        return self.site.check_caching_proxy_read(filename, echo=logger.console)
