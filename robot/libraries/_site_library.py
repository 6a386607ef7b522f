"""The base of the area libraries (TuningLibrary, NetworkLibrary, CondorLibrary,
StorageLibrary): `site`, the suite's session, which its TestbedLibrary builds and owns.
One session per suite is what lets `Clear WAN` know the links `Set WAN Latency` set, and
`Apply Profile If Needed` the profile another library applied. Not a library itself (its
name starts with `_` and no suite imports it); the libraries import it from their own
folder, which Robot puts on sys.path while it imports a library by path."""
from robot.libraries.BuiltIn import BuiltIn


class SiteLibrary:

    @property
    def site(self):
        """The suite's `testbed.harness.session.Session`."""
        return BuiltIn().get_library_instance("TestbedLibrary").site
