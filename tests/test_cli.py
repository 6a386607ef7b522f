import pytest
import yaml

from testbed import PROJECT_ROOT, cli


def test_bad_topology_is_one_line_exit_2(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"name": "bad", "hosts": {"w": {"roles": ["worker"], "memory_mb": "x"}}}))
    rc = cli.main(["--topology", str(path), "topology", "show", "--no-ram-check"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"testbed: {path}: hosts.w.memory_mb: must be an integer")


def test_unknown_topology_name(capsys):
    assert cli.main(["-t", "nope", "topology", "show"]) == 2
    known = ", ".join(sorted(p.stem for p in (PROJECT_ROOT / "topologies").glob("*.yaml")))
    assert "default, e3-cores" in known
    assert f"no such topology (known: {known})" in capsys.readouterr().err


def test_topology_show_prints_plan(capsys):
    assert cli.main(["-t", "small", "topology", "show", "--no-ram-check"]) == 0
    out = capsys.readouterr().out
    assert "dtn" in out and "RAID6 6 x 1 GB" in out and "18 execute slots planned" in out
    assert "total guest RAM 4864 MB" in out


def test_topology_show_refuses_plan_bigger_than_free_ram(monkeypatch, capsys):
    from testbed.model import topology
    monkeypatch.setattr(topology, "host_free_memory_mb", lambda: 512)
    assert cli.main(["-t", "default", "topology", "show"]) == 2
    assert "host has 512 MB free" in capsys.readouterr().err


def test_ssh_to_unknown_host(capsys):
    assert cli.main(["-t", "small", "ssh", "nohost"]) == 2
    assert "no host 'nohost'" in capsys.readouterr().err


def test_compare_needs_a_run_and_names_a_bad_one(tmp_path, capsys):
    assert cli.main(["compare"]) == 2
    assert "name at least one results folder" in capsys.readouterr().err
    assert cli.main(["compare", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path}: manifest.json: not a results folder" in err and "Traceback" not in err


def test_compare_of_two_runs_prints_table_and_writes_report(tmp_path, capsys):
    from testbed.results import runs as results
    runs = []
    for value in (10.0, 25.0):
        run = results.Run.create("e2", ["default"], topology={}, profile_contents={}, accel="tcg", root=tmp_path)
        run.record("e2.raid_write_rate", value, "MB/s", stripe_cache_size=256, profile="default")
        run.finish("complete")
        runs.append(run)
    report = tmp_path / "r.html"
    assert cli.main(["compare", str(runs[0].path), str(runs[1].path), "--against", "paper",
                     "--html", str(report)]) == 0
    out = capsys.readouterr().out
    assert "A:default" in out and "B:default" in out and "2.50x" in out and "seed 001" in out
    assert report.exists() and (tmp_path / "r-plots").is_dir()


def test_run_bad_set_is_one_line_error(capsys, monkeypatch):
    from testbed import cli as c
    from testbed.model import topology
    from testbed.remote.site import Site
    monkeypatch.setattr(c.experiment_commands, "_site", lambda args, change=None, running=True: Site(topology.load("small")))
    assert cli.main(["-t", "small", "run", "e1", "--set", "rtts"]) == 2
    assert "--set: rtts: expected KEY=VALUE" in capsys.readouterr().err


def test_profile_show_and_diff(capsys):
    assert cli.main(["profile", "diff", "default", "wan-tuned"]) == 0
    out = capsys.readouterr().out
    assert "net.core.wmem_max" in out and "12582912" in out and "212992" in out
    assert cli.main(["profile", "show", "nope"]) == 2


def test_provision_pushes_each_bundle_and_runs_apply_in_parallel(tmp_path, monkeypatch, capsys):
    from testbed.machines import provision as provisioning
    from testbed.model import topology
    from testbed.remote.ssh import Result
    from testbed.model.state import TestbedState
    from testbed.remote.site import Site
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path))
    topo = topology.load("small")
    calls = {}

    class FakeSSH:
        def run(self, host, command, check=True, input_bytes=None, timeout=None):
            calls[host] = (command, input_bytes)
            ok = host != "dtn"
            return Result(host, 0 if ok else 1, f"testbed: {host} provisioned\n" if ok else "", "mdadm: boom")

    from testbed.model import profiles
    import pytest
    from testbed.model.errors import TestbedError
    with pytest.raises(TestbedError, match="provisioning failed on dtn"):
        provisioning.provision(Site(topo), profiles.load("default"), ssh=FakeSSH(), accelerator="tcg")
    assert set(calls) == set(topo.hosts)
    command, data = calls["submit"]
    assert command.startswith('f=$(mktemp /tmp/testbed-provision.XXXXXX) && cat > "$f" && bash -c ')
    assert command.endswith('rm -f "$f"; exit $rc') and data[:2] == b"\x1f\x8b"
    assert (TestbedState("small").host_dir("submit") / "files/etc/condor/config.d/50-testbed.conf").exists()
    out = capsys.readouterr().out
    assert "submit: submit provisioned" in out and "dtn: FAILED (rc 1): mdadm: boom" in out


def test_provision_names_an_unknown_host(tmp_path, monkeypatch):
    from testbed.model import profiles, topology
    from testbed.machines import provision as provisioning
    import pytest
    from testbed.model.errors import TestbedError
    from testbed.remote.site import Site
    monkeypatch.setenv("TESTBED_STATE_DIR", str(tmp_path))
    with pytest.raises(TestbedError, match="no host 'nope'"):
        provisioning.provision(Site(topology.load("small")), profiles.load("default"), ["nope"], ssh=object(), accelerator="tcg")


@pytest.mark.parametrize("argv, want", [
    (["run", "e1", "-t", "small", "--scale", "ci"], ["-t", "small", "run", "e1", "--scale", "ci"]),
    (["-t", "small", "run", "e1"], ["-t", "small", "run", "e1"]),
    (["status", "--topology=small"], ["--topology=small", "status"]),
    (["ssh", "cm1", "tmux", "-t", "x"], ["ssh", "cm1", "tmux", "-t", "x"]),   # the command's own -t
])
def test_the_topology_option_may_come_after_the_verb(argv, want):
    assert cli.hoist_topology(argv) == want
    assert cli.build_parser().parse_args(cli.hoist_topology(argv)).topology in ("small", None)


def test_every_verb_has_a_one_line_description_and_an_example_that_parses():
    parser = cli.with_examples(cli.build_parser())
    found = cli.verbs(parser)
    assert set(found) == set(cli.EXAMPLES), set(found) ^ set(cli.EXAMPLES)
    helps = {}
    for action in [a for a in parser._actions if hasattr(a, "_choices_actions")]:
        for choice in action._choices_actions:
            helps[choice.dest] = choice.help
    for name, p in found.items():
        shown = cli.examples(name)
        assert p.epilog == (f"example: {shown[0]}" if len(shown) == 1 else
                            "examples:\n" + "\n".join(f"  {e}" for e in shown))
        assert all(e in p.format_help() for e in shown)   # each example whole, on its own line
        for example in shown:
            words = example.split()[1:]
            assert cli.build_parser().parse_args(cli.hoist_topology(words)), name   # the example parses
    assert all(h and "\n" not in h for h in helps.values())
    from testbed.network import netem
    assert netem.parse_spec(cli.EXAMPLES["wan set"].split()[-1]).rtt_ms == 80
    assert any("--for e5:full" in e for e in cli.examples("plan"))
    assert any("--dry-run" in e for e in cli.examples("up"))


def test_an_interrupted_up_says_which_vms_it_left_and_how_to_remove_them(monkeypatch, capsys):
    from testbed.cli import experiment_commands
    from testbed.machines import domains, lifecycle

    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(lifecycle, "up", interrupted)
    monkeypatch.setattr(domains, "state", lambda topo, host: "running" if host in ("cm1", "dtn") else None)
    assert cli.main(["-t", "small", "up"]) == 130
    err = capsys.readouterr().err
    assert "topology small is (partly) up: 2 of 5 VMs: tb-small-cm1 (running), tb-small-dtn (running)" in err
    assert "take it down with `./tb -t small down`" in err and err.rstrip().endswith("testbed: interrupted")


def _site_downed_here(monkeypatch):
    """small's state folder as `down` leaves it (keys kept, no topology recorded as up)."""
    from testbed.machines import lifecycle
    from testbed.model.state import TestbedState
    TestbedState("small").ensure_secrets()
    monkeypatch.setattr(lifecycle, "active_topology", lambda: None)


def test_status_of_a_site_taken_down_says_so_without_probing(monkeypatch, capsys):
    from testbed.services import health
    _site_downed_here(monkeypatch)
    monkeypatch.setattr(health, "collect", lambda *a, **k: pytest.fail("probed a site that is not up"))
    assert cli.main(["-t", "small", "status"]) == 1
    assert capsys.readouterr().err == ("testbed: site small is not up in this checkout (nothing is); "
                                       "`testbed -t small up` first\n")


def test_a_command_on_a_site_taken_down_refuses_in_one_line(monkeypatch, capsys):
    _site_downed_here(monkeypatch)
    assert cli.main(["-t", "small", "profile", "apply", "default"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "site small is not up in this checkout (nothing is)" in err


def test_a_command_on_another_topology_than_the_one_up_names_it(monkeypatch, capsys):
    from testbed.machines import lifecycle
    _site_downed_here(monkeypatch)
    monkeypatch.setattr(lifecycle, "active_topology", lambda: "default")
    assert cli.main(["-t", "small", "profile", "apply", "default"]) == 2
    assert "(topology default is)" in capsys.readouterr().err
