"""User-facing errors: one line naming the file, the field and the problem."""


class TestbedError(Exception):
    """An error the CLI prints as one line and exits with code 2."""

    __test__ = False  # not a pytest class

    exit_code = 2


class ConfigError(TestbedError):
    """Bad input in a topology, profile or option: file, field, problem."""

    def __init__(self, source, field, problem):
        self.source, self.field, self.problem = str(source), field, problem
        where = f"{self.source}: {field}" if field else self.source
        super().__init__(f"{where}: {problem}")


class RemoteError(TestbedError):
    """A command on a testbed VM failed."""

    exit_code = 1


class GuestDown(RemoteError):
    """A guest that cannot answer any more: its kernel died (the console says how)."""
