"""Robot --dryrun of every suite in the experiment registry: syntax, keywords and arguments."""
import subprocess
import sys

import pytest

from testbed import PROJECT_ROOT
from testbed.harness import registry


@pytest.mark.parametrize("name", list(registry.experiments()))
def test_suite_dry_run_has_no_errors(name, tmp_path):
    suite = registry.get(name).suite_path
    proc = subprocess.run([sys.executable, "-m", "robot", "--dryrun", "--output", "NONE", "--report", "NONE",
                           "--log", "NONE", "--consolecolors", "off", "--variable", "TOPOLOGY:small",
                           "--variable", "SCALE:ci", str(suite)],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "[ ERROR ]" not in out and "[ WARN ]" not in out, out[-3000:]
