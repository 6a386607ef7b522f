"""Robot Framework keywords of the HTCondor pool: jobs, CCB and the central managers'
high availability, thin over `testbed.harness.session` and its pool
(`testbed.services.condor`)."""
from robot.api import logger
from robot.api.deco import keyword, library

from _site_library import SiteLibrary


@library(scope="SUITE", auto_keywords=False)
class CondorLibrary(SiteLibrary):

    # --- jobs -------------------------------------------------------------------------
    @keyword
    def clear_job_queue(self):
        """Remove jobs an earlier (interrupted) run left on the submit host."""
        removed = self.site.pool.clear_queue()
        if removed:
            logger.console(f"  removed {removed} job(s) left in the queue by an earlier run")
        return removed

    @keyword
    def submit_sleep_jobs(self, count=1, seconds=5, requirements=None):
        cluster = self.site.submit_sleep_jobs(count, seconds, requirements)
        logger.info(f"submitted cluster {cluster}: {count} x sleep {seconds}")
        return cluster

    @keyword
    def wait_for_jobs(self, cluster, count=1, timeout=600):
        return self.site.pool.wait(int(cluster), int(count), timeout=float(timeout))

    @keyword
    def collect_job_transfer_metrics(self, cluster):
        return self.site.job_transfer_metrics(cluster)

    @keyword
    def jobs_should_have_run_on_role(self, cluster, role):
        return self.site.check_jobs_ran_on_role(cluster, role)

    @keyword
    def startds_should_be_reached_through_ccb(self):
        return self.site.check_startds_through_ccb()

    # --- high availability --------------------------------------------------------------
    @keyword
    def active_central_manager(self):
        return self.site.pool.active_cm()

    @keyword
    def kill_central_manager(self, host):
        self.site.pool.kill_cm(host)

    @keyword
    def restart_central_manager(self, host):
        self.site.pool.restart_cm(host)

    @keyword
    def negotiator_should_move_to(self, host, timeout=300):
        seconds = self.site.pool.wait_negotiator_on(host, timeout=float(timeout))
        logger.console(f"  negotiator active on {host} after {seconds:.0f} s")
        return seconds

    @keyword
    def other_central_manager(self, host):
        return self.site.other_central_manager(host)
