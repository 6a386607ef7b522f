"""Robot Framework keywords of the tuning profiles, thin over `testbed.harness.session`
(which applies a profile through `testbed.services.tuning` and reads it back). Which
profiles a run compares is the run's (TestbedLibrary's `Profiles To Compare`)."""
from robot.api import logger
from robot.api.deco import keyword, library

from _site_library import SiteLibrary


@library(scope="SUITE", auto_keywords=False)
class TuningLibrary(SiteLibrary):

    @keyword
    def apply_profile_if_needed(self, name):
        """Apply `name` unless this suite applied it last or, before it applied any, the site's
        record names it and every value of it reads back; returns the seconds an apply took (0)."""
        return self.site.apply_profile_if_needed(name, echo=logger.console)

    @keyword
    def apply_profile(self, name):
        return self.site.apply_profile(name, echo=logger.console)

    @keyword
    def restore_the_default_profile(self):
        """Suite teardown: apply `default` unless it is known to be in force (this suite applied
        it last, or the site's record says so); returns the seconds it took (0)."""
        current = self.site.current_profile()
        if current is not None and current.name == "default":
            return 0.0
        return self.apply_profile("default")

    @keyword
    def profile_should_be_in_force(self, name):
        n, bad = self.site.profile_mismatches(name)
        if bad:
            raise AssertionError(f"profile {name}: {bad[0]} ({len(bad)} mismatches)")
        logger.console(f"  profile {name}: {n} values read back, all as the profile says")
        return n
