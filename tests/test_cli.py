import yaml

from testbed import cli


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
    assert "no such topology (known: default, small)" in capsys.readouterr().err


def test_topology_show_prints_plan(capsys):
    assert cli.main(["-t", "small", "topology", "show", "--no-ram-check"]) == 0
    out = capsys.readouterr().out
    assert "dtn" in out and "RAID6 6 x 1 GB" in out and "18 execute slots planned" in out
    assert "total guest RAM 4352 MB" in out


def test_topology_show_refuses_plan_bigger_than_free_ram(monkeypatch, capsys):
    from testbed import topology
    monkeypatch.setattr(topology, "host_free_memory_mb", lambda: 512)
    assert cli.main(["-t", "default", "topology", "show"]) == 2
    assert "host has 512 MB free" in capsys.readouterr().err


def test_ssh_to_unknown_host(capsys):
    assert cli.main(["-t", "small", "ssh", "nohost"]) == 2
    assert "no host 'nohost'" in capsys.readouterr().err
