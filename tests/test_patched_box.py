"""`testbed box build --patch`: the box spec a topology names, the build's hashes and names,
its one-line errors (a patch that does not apply, a missing source, a failing step), the
image edit, pruning, and the box a site boots. No chroot is made and no compiler runs:
commands go to fakes, or to the host's own `patch`, `mkfs.ext4` and `debugfs` on files in
a temporary folder."""
import copy
import hashlib
import io
import json
import shutil
import subprocess
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from testbed import cli
from testbed.machines import box as box_mod, box_choice, daemon_build, plan
from testbed.machines.box import Box
from testbed.machines.box_image import ImageError, RawImage
from testbed.machines.daemon_build import DaemonBuild, StepFailed, read_patch, relink, targets_of
from testbed.machines.patched_box import PatchedBox, box_for
from testbed.model import boxspec, constants as c, profiles, topology
from testbed.model.errors import ConfigError, TestbedError
from testbed.model.state import TestbedState
from testbed.remote.site import Site

TRANSKEY = boxspec.PATCH_DIR / "htcondor-reconnect-transkey.patch"
SMALL = topology.load("small")


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("TESTBED_BOX_CACHE", str(root))
    return root


def diff(path="src/condor_shadow.V6.1/remoteresource.cpp", old="\tabortFileTransfer();", new="\tkeep();"):
    return (f"--- a/{path}\n+++ b/{path}\n@@ -1,3 +1,3 @@\n void\n-{old}\n+{new}\n }}\n")


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --- the box spec and the topology ---------------------------------------------------------------
def test_a_box_spec_names_patches_from_provision_patches():
    assert boxspec.parse("debian13") == boxspec.BoxSpec("debian13", ())
    spec = boxspec.parse("debian13+patch:htcondor-reconnect-transkey")
    assert spec.kind == "debian13" and spec.patches == (TRANSKEY,)
    assert str(spec) == "debian13+patch:htcondor-reconnect-transkey"


@pytest.mark.parametrize("text, problem", [
    ("debian13+patch:no-such-fix", "no patch .*no-such-fix.patch \\(known: htcondor-reconnect-transkey"),
    ("el9+patch:htcondor-reconnect-transkey", "patches apply to the debian13 box only"),
    ("debian13+fix:htcondor-reconnect-transkey", "'fix:htcondor-reconnect-transkey' .* is not patch:NAME"),
    ("debian13+patch:htcondor-reconnect-transkey+patch:htcondor-reconnect-transkey", "named twice"),
    ("win95", "must be one of debian13, el9"),
])
def test_a_bad_box_spec_is_one_line_naming_file_and_field(text, problem):
    with pytest.raises(ConfigError, match=problem) as err:
        topology.parse({"name": "t", "box": text, "hosts": {"submit": {"roles": ["submit"]}}}, "t.yaml")
    assert str(err.value).startswith("t.yaml: box: ") and "\n" not in str(err.value)


def test_a_topology_selects_the_patched_box_and_the_plan_boots_it(tmp_path):
    data = {"name": "tp", "box": "debian13+patch:htcondor-reconnect-transkey",
            "hosts": {"submit": {"roles": ["submit"]}, "cm1": {"roles": ["cm"]}, "w1": {"roles": ["worker"]}}}
    topo = topology.parse(copy.deepcopy(data), "tp.yaml")
    assert topo.box == "debian13" and topo.box_patches == (TRANSKEY,)
    p = plan.build(topo, profiles.load("default"), TestbedState("tp", root=tmp_path), accelerator="tcg",
                   box=box_for(topo.box_spec))
    stock = Box("debian13")
    assert p["box"]["name"].startswith(stock.name + "-patched-") and p["box"]["direct_kernel_boot"] is True
    assert p["box"]["kernel"] == str(box_for(topo.box_spec).dir / "vmlinuz") and p["box"]["built"] is False
    assert p["box"]["spec"] == "debian13+patch:htcondor-reconnect-transkey"
    stock_plan = plan.build(SMALL, profiles.load("default"), TestbedState("small", root=tmp_path), accelerator="tcg",
                            box=box_for(SMALL.box_spec))
    assert stock_plan["box"]["name"] == stock.name and stock_plan["box"]["spec"] == "debian13"


def test_up_box_is_kept_for_the_site_until_down_and_refused_over_vms_of_another_box(tmp_path, monkeypatch):
    site = Site(topology.load("small"), root=tmp_path)
    spec = box_choice.choose(site, "debian13+patch:htcondor-reconnect-transkey",
                             exists=lambda: pytest.fail("no plan yet: no VMs to ask about"))
    assert site.topo.box_patches == (TRANSKEY,) and str(spec).endswith("transkey")
    again = box_choice.apply_recorded(Site(topology.load("small"), root=tmp_path))
    assert again.topo.box_patches == (TRANSKEY,)
    plan_file = plan.plan_path(site.state)
    plan_file.write_text(json.dumps({"box": {"name": Box("debian13").name}}))
    with pytest.raises(TestbedError, match=r"were made from box grid-testbed-debian13-\w+; `testbed -t small down` first"):
        box_choice.choose(Site(topology.load("small"), root=tmp_path), "debian13+patch:htcondor-reconnect-transkey",
                          exists=lambda: True)
    box_choice.choose(Site(topology.load("small"), root=tmp_path), "debian13", exists=lambda: True)  # the same box
    box_choice.forget(site)
    assert box_choice.apply_recorded(Site(topology.load("small"), root=tmp_path)).topo.box_patches == ()


def test_a_dry_run_plans_on_the_box_asked_for_and_records_nothing(tmp_path):
    site = Site(topology.load("small"), root=tmp_path)
    box_choice.choose(site, "debian13+release:sid", exists=lambda: False, record=False)
    assert str(site.topo.box_spec) == "debian13+release:sid"
    assert str(box_choice.apply_recorded(Site(topology.load("small"), root=tmp_path)).topo.box_spec) == "debian13"


# --- hashes and names ----------------------------------------------------------------------------
def build_of(tmp_path, *texts, names=None, **kw):
    files = [write(tmp_path / "p" / f"{(names or [])[i] if names else f'fix{i}'}.patch", t)
             for i, t in enumerate(texts)]
    return DaemonBuild(files, root=tmp_path / "cache", **kw)


def test_the_recipe_hash_follows_source_patches_and_recipe_and_the_key_the_package_set(tmp_path, monkeypatch):
    one = build_of(tmp_path / "a", diff())
    assert one.recipe_hash == build_of(tmp_path / "b", diff()).recipe_hash            # same inputs
    assert one.recipe_hash != build_of(tmp_path / "c", diff(new="\tother();")).recipe_hash   # content
    assert one.recipe_hash != build_of(tmp_path / "d", diff(), names=["renamed"]).recipe_hash  # name
    assert one.key("condor 1 amd64\n") != one.key("condor 2 amd64\n")             # package set
    assert one.key("condor 1 amd64\n") == one.key("condor 1 amd64\n")
    pinned = one.recipe_hash
    monkeypatch.setattr(c, "HTCONDOR_SOURCE_SHA256", "0" * 64)
    assert build_of(tmp_path / "e", diff()).recipe_hash != pinned                   # source
    recipe = tmp_path / "recipe"
    shutil.copytree(daemon_build.RECIPE_DIR, recipe)
    before = build_of(tmp_path / "f", diff(), recipe_dir=recipe)
    (recipe / "cmake-options.txt").write_text("-DEXTRA=1\n")
    after = build_of(tmp_path / "g", diff(), recipe_dir=recipe)
    assert before.recipe_hash != after.recipe_hash and before.chroot_hash == after.chroot_hash


def test_the_patched_box_is_named_after_the_stock_box_and_the_build():
    box = PatchedBox([TRANSKEY])
    stock = Box("debian13")
    assert box.name == f"{stock.name}-patched-{box.hash}" and len(box.hash) == 12
    assert box.dir.parent == stock.dir.parent and box.dir != stock.dir
    other_base = SimpleNamespace(hash="0" * 12, name="grid-testbed-debian13-000000000000", kind="debian13")
    assert PatchedBox([TRANSKEY], base=other_base).name != box.name


def test_a_patch_is_read_for_the_files_it_changes_and_only_rebuildable_daemons_pass(tmp_path):
    patch = read_patch(TRANSKEY)
    assert patch.files == ("src/condor_shadow.V6.1/remoteresource.cpp",) and patch.name == TRANSKEY.stem
    assert patch.sha256 == hashlib.sha256(TRANSKEY.read_bytes()).hexdigest()
    assert targets_of([patch]) == {"src/condor_shadow.V6.1/": ("condor_shadow", "/usr/sbin/condor_shadow")}
    lib = read_patch(write(tmp_path / "lib.patch", diff("src/condor_utils/file_transfer.cpp")))
    with pytest.raises(ConfigError, match="changes src/condor_utils/file_transfer.cpp, which `box build --patch` "
                                          "cannot rebuild"):
        targets_of([lib])
    with pytest.raises(ConfigError, match="is not a unified diff"):
        read_patch(write(tmp_path / "notes.patch", "just words\n"))


# --- the steps' one-line errors ------------------------------------------------------------------
def test_a_missing_source_names_the_step_and_its_log(tmp_path):
    def unreachable(url, dest):
        raise OSError("Name or service not known")
    build = build_of(tmp_path, diff(), fetch=unreachable, log=lambda *_: None)
    with pytest.raises(StepFailed) as err:
        build.build("23.9.6+dfsg-2.1+b10")
    log = build.logs / "source.log"
    assert str(err.value) == (f"box build --patch: step source failed: cannot download {build.source_url}; "
                              f"see {log}")
    assert "Name or service not known" in log.read_text()


def test_a_source_with_another_hash_is_refused_and_set_aside(tmp_path):
    build = build_of(tmp_path, diff(), fetch=lambda url, dest: Path(dest).write_bytes(b"not the tarball"),
                     log=lambda *_: None)
    with pytest.raises(StepFailed, match="step source failed: condor_23.9.6\\+dfsg.orig.tar.xz does not have "
                                         "the pinned sha256; see .*source.log"):
        build.source()
    assert not build.source_file.exists() and build.source_file.with_suffix(".rejected").exists()


class LocalChroot(DaemonBuild):
    """The chroot's commands run on this machine, paths inside the chroot mapped below it."""

    def in_chroot(self, *cmd, cwd="/"):
        mapped = [str(self.chroot) + a if str(a).startswith("/build/") else str(a) for a in cmd]
        return ["sh", "-c", f"cd {self.chroot}{cwd} && exec " + " ".join(f"'{a}'" for a in mapped)]


def source_tarball(tmp_path, text):
    data = text.encode()
    path = tmp_path / "source.tar.xz"
    with tarfile.open(path, "w:xz") as tar:
        info = tarfile.TarInfo(f"{c.HTCONDOR_SOURCE_TOP}/src/condor_shadow.V6.1/remoteresource.cpp")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.skipif(not shutil.which("patch"), reason="needs the patch tool")
def test_a_patch_that_does_not_apply_is_one_line_naming_the_step_and_its_log(tmp_path):
    build = build_of(tmp_path, diff(), log=lambda *_: None)
    build.__class__ = LocalChroot
    build.chroot.mkdir(parents=True)
    with pytest.raises(StepFailed) as err:
        build.unpack_and_patch(source_tarball(tmp_path, "void\n\tsomething_else();\n}\n"))
    log = build.logs / "patch.log"
    assert str(err.value) == (f"box build --patch: step patch failed: {tmp_path}/p/fix0.patch does not apply "
                              f"to {c.HTCONDOR_SOURCE_TOP}; see {log}")
    assert "FAILED" in log.read_text()
    src = build.unpack_and_patch(source_tarball(tmp_path, "void\n\tabortFileTransfer();\n}\n"))  # it applies
    assert (Path(str(build.chroot) + src) / "src/condor_shadow.V6.1/remoteresource.cpp").read_text() == \
        "void\n\tkeep();\n}\n"


def test_a_compile_that_fails_names_the_file_the_step_and_its_log(tmp_path):
    build = build_of(tmp_path, diff(), run=lambda argv, **kw: SimpleNamespace(returncode=1, stdout="",
                                                                              stderr="error: expected ';'"))
    src = "/build/x/" + c.HTCONDOR_SOURCE_TOP
    obj = write(tmp_path / "obj" / "compile_commands.json", json.dumps([
        {"directory": "/build/x/obj/src/condor_shadow.V6.1", "file": f"{src}/src/condor_shadow.V6.1/shadow.cpp",
         "command": "c++ -o CMakeFiles/condor_shadow.dir/shadow.cpp.o -c shadow.cpp"},
        {"directory": "/build/x/obj/src/condor_utils", "file": f"{src}/src/condor_utils/x.cpp",
         "command": "c++ -o CMakeFiles/condor_utils.dir/x.cpp.o -c x.cpp"}])).parent
    with pytest.raises(StepFailed, match=r"step compile failed: shadow.cpp did not compile; see .*compile.log$"):
        build.compile(obj, src)
    assert "expected ';'" in (build.logs / "compile.log").read_text()
    assert "condor_utils" not in (build.logs / "compile.log").read_text()      # only the daemon's own sources


def test_the_link_takes_the_packaged_shared_libraries_for_the_static_ones(tmp_path):
    argv = ["c++", "-O2", "a.o", "-o", "condor_shadow", "../condor_utils/libcondor_version_obj.a",
            "../condor_utils/libcondor_utils_23_9_6.a", "-ldl", "-Wl,--wrap,exit", "../classad/libclassad.a", "-lcrypto"]
    assert relink(argv, tmp_path / "link.log") == [
        "c++", "-O2", "a.o", "-o", "condor_shadow", "/usr/lib/libcondor_utils_23_9_6.so", "-ldl",
        "-Wl,--wrap,exit", "/usr/lib/libclassad.so.23.9.6", "-lcrypto"]
    with pytest.raises(StepFailed, match="needs the in-tree library ../ccb/libccb.a, which condor does not package"):
        relink(["c++", "../ccb/libccb.a"], tmp_path / "link.log")


def test_the_check_wants_the_version_and_every_library_resolved_to_the_packaged_one(tmp_path):
    ldd = {"good": "libcondor_utils_23_9_6.so => /lib/libcondor_utils_23_9_6.so (0x1)\n"
                   "libclassad.so.23.9.6 => /lib/libclassad.so.23.9.6 (0x2)\n",
           "bad": "libcondor_utils_23_9_6.so => not found\nlibclassad.so.23.9.6 => /lib/libclassad.so.23.9.6 (0x2)\n"}
    for case in ("good", "bad"):
        def run(argv, **kw):
            out = ldd[case] if "ldd" in argv[-1] else "$CondorVersion: 23.9.6 2026-07-12 PackageID: x $\n"
            return SimpleNamespace(returncode=0, stdout=out)
        build = build_of(tmp_path / case, diff(), run=run)
        binary = build.chroot / "build" / "condor_shadow"
        if case == "good":
            report = build.check({"condor_shadow": binary}, "23.9.6+dfsg-2.1+b10")
            assert report["condor_shadow"]["libraries"] == ["libclassad.so.23.9.6", "libcondor_utils_23_9_6.so"]
        else:
            with pytest.raises(StepFailed, match="step check failed: condor_shadow does not resolve "
                                                 "libcondor_utils_23_9_6.so to the packaged library"):
                build.check({"condor_shadow": binary}, "23.9.6+dfsg-2.1+b10")


def test_the_chroot_must_carry_the_boxs_condor(tmp_path, monkeypatch):
    build = build_of(tmp_path, diff(), log=lambda *_: None)
    monkeypatch.setattr(build, "source", lambda: tmp_path / "src.tar.xz")
    monkeypatch.setattr(build, "ensure_chroot", lambda apt: "bash 5 amd64\ncondor 23.9.7+dfsg-1 amd64\n")
    with pytest.raises(StepFailed, match="step chroot failed: the chroot has condor 23.9.7\\+dfsg-1, the box "
                                         "23.9.6\\+dfsg-2.1\\+b10; rebuild the stock box"):
        build.build("23.9.6+dfsg-2.1+b10")


def test_a_tree_with_something_mounted_in_it_is_not_removed(tmp_path, monkeypatch):
    tree = tmp_path / "chroot"
    (tree / "dev").mkdir(parents=True)
    table = write(tmp_path / "mounts", f"udev {tree}/dev devtmpfs rw 0 0\n")
    real = daemon_build.mounted_under
    monkeypatch.setattr(daemon_build, "mounted_under", lambda p: real(p, table))
    with pytest.raises(TestbedError, match=f"{tree}/dev is still mounted"):
        daemon_build.remove_tree(tree)
    assert (tree / "dev").exists()
    table.write_text("")
    daemon_build.remove_tree(tree)
    assert not tree.exists()


def test_mount_points_below_a_tree_are_found_in_the_mount_table(tmp_path):
    table = write(tmp_path / "mounts", f"proc {tmp_path}/r/proc proc rw 0 0\nudev /dev devtmpfs rw 0 0\n"
                                       f"x {tmp_path}/rr/dev tmpfs rw 0 0\n")
    assert daemon_build.mounted_under(tmp_path / "r", table) == [f"{tmp_path}/r/proc"]


# --- the image -----------------------------------------------------------------------------------
needs_e2fs = pytest.mark.skipif(not (shutil.which("mkfs.ext4") or Path("/sbin/mkfs.ext4").exists())
                                or not (shutil.which("debugfs") or Path("/sbin/debugfs").exists()),
                                reason="needs e2fsprogs")


def ext4(tmp_path, files):
    tree = tmp_path / "tree"
    for name, text in files.items():
        write(tree / name.lstrip("/"), text)
    raw = tmp_path / "root.raw"
    with open(raw, "wb") as f:
        f.truncate(32 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-d", str(tree), str(raw)], check=True, env={"PATH": "/sbin:/usr/sbin:/usr/bin:/bin"})
    return RawImage(raw, tmp_path / "image.log")


@needs_e2fs
def test_a_daemon_goes_over_the_packaged_one_which_stays_beside_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/sbin:/usr/sbin:" + __import__("os").environ["PATH"])
    image = ext4(tmp_path, {"/usr/sbin/condor_shadow": "packaged\n"})
    rebuilt = write(tmp_path / "condor_shadow", "rebuilt\n")
    image.install(rebuilt, "/usr/sbin/condor_shadow", keep_as="/usr/sbin/condor_shadow.debian")
    image.mkdir("/usr/share/grid-testbed")
    image.add(write(tmp_path / "list", "fix:abc\n"), c.BOX_PATCHES_FILE)
    image.check()
    assert image.read("/usr/sbin/condor_shadow", tmp_path / "a") == hashlib.sha256(b"rebuilt\n").hexdigest()
    assert (tmp_path / "a").stat().st_mode & 0o777 == 0o755
    assert (image.read("/usr/sbin/condor_shadow.debian", tmp_path / "b")
            == hashlib.sha256(b"packaged\n").hexdigest())
    assert image.read(c.BOX_PATCHES_FILE, tmp_path / "c") == hashlib.sha256(b"fix:abc\n").hexdigest()
    with pytest.raises(ImageError, match="/usr/sbin/condor_shadow.debian is already in the image"):
        image.install(rebuilt, "/usr/sbin/condor_shadow", keep_as="/usr/sbin/condor_shadow.debian")
    with pytest.raises(ImageError, match=r"step image failed: /usr/sbin/condor_starter is not in the image .*; see "):
        image.install(rebuilt, "/usr/sbin/condor_starter")


@needs_e2fs
def test_a_debugfs_error_is_an_error_though_debugfs_exits_0(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/sbin:/usr/sbin:" + __import__("os").environ["PATH"])
    image = ext4(tmp_path, {"/etc/x": "x\n"})
    with pytest.raises(ImageError, match="debugfs: .*No such file or directory"):
        image.debugfs([f"write {tmp_path}/missing /etc/y"], write=True)


def test_the_patched_box_needs_the_stock_box_and_never_builds_it(tmp_path):
    base = SimpleNamespace(built=False, name="grid-testbed-debian13-000000000000", hash="0" * 12,
                           kind="debian13", build=lambda *a, **k: pytest.fail("stock box built"))
    box = PatchedBox([TRANSKEY], base=base)
    with pytest.raises(TestbedError, match="the stock box grid-testbed-debian13-0+ is not built; run "
                                           "`testbed box build` first"):
        box.build(log=lambda *_: None)


# --- pruning -------------------------------------------------------------------------------------
def test_pruning_never_takes_the_stock_box_for_a_patched_one_or_back(tmp_path):
    stock = Box("debian13")
    patched = PatchedBox([TRANSKEY])
    older = "grid-testbed-debian13-0123456789ab"
    names = [stock.name, older, patched.name, f"{older}-patched-{patched.hash}",
             f"{stock.name}-patched-ffffffffffff", f"{stock.name}.partial", "grid-testbed-el9-0123456789ab"]
    assert stock.stale(names) == [older]
    assert patched.stale(names) == [f"{older}-patched-{patched.hash}"]


def test_the_stock_box_prune_leaves_the_patched_box_in_the_cache(cache, monkeypatch):
    stock, patched = Box("debian13"), PatchedBox([TRANSKEY])
    for d in (stock.dir, patched.dir, cache / "boxes" / "grid-testbed-debian13-0123456789ab"):
        d.mkdir(parents=True)
    removed = []
    monkeypatch.setattr(box_mod, "remove_box", lambda name, log=print: removed.append(name))
    stock.prune(log=lambda *_: None)
    patched.prune(log=lambda *_: None)
    assert removed == ["grid-testbed-debian13-0123456789ab"]


# --- the command line and the guests' record -----------------------------------------------------
def test_box_build_patch_with_bad_input_exits_2_with_one_line(tmp_path, capsys, cache):
    lib = write(tmp_path / "utils.patch", diff("src/condor_utils/file_transfer.cpp"))
    assert cli.main(["box", "build", "--patch", str(lib)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"testbed: {lib}: changes src/condor_utils/file_transfer.cpp")
    assert cli.main(["box", "build", "--patch", str(tmp_path / "nope.patch")]) == 2
    assert capsys.readouterr().err == f"testbed: {tmp_path / 'nope.patch'}: no such patch file\n"
    assert not (cache / "boxes").exists()


def test_the_guests_report_the_patches_of_their_box(tmp_path, monkeypatch):
    from testbed.services import health
    listing = write(tmp_path / "condor-patches", "fix-a:aaa\nfix-b:bbb\n")
    script = health.VERSIONS_SCRIPT.replace(c.BOX_PATCHES_FILE, str(listing))
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True)
    assert out.returncode == 0 and "condor_patches=fix-a:aaa fix-b:bbb\n" in out.stdout
    listing.unlink()
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True)
    assert out.returncode == 0 and "condor_patches" not in out.stdout and "os=" in out.stdout


def test_the_patched_box_copies_the_kernel_without_libvirts_labels(tmp_path):
    import os
    from testbed.machines.patched_box import copy_plain
    kernel = tmp_path / "vmlinuz"
    kernel.write_bytes(b"kernel")
    kernel.chmod(0o640)
    try:
        os.setxattr(kernel, "user.libvirt.security.ref_dac", b"9")
    except OSError:
        pytest.skip("this file system keeps no extended attributes")
    copy_plain(kernel, tmp_path / "copy")
    assert (tmp_path / "copy").read_bytes() == b"kernel"
    assert (tmp_path / "copy").stat().st_mode & 0o777 == 0o640
    assert os.listxattr(tmp_path / "copy") == []


def test_a_release_box_is_named_hashed_and_chosen_by_its_spec(tmp_path, monkeypatch):
    from testbed.machines import box as box_mod
    from testbed.machines.patched_box import box_for
    from testbed.model import boxspec
    from testbed.model.errors import ConfigError
    releases = tmp_path / "releases"
    releases.mkdir()
    (releases / "sid.txt").write_text("suite sid\ncondor 25.14.1+dfsg-1\n")
    spec = boxspec.parse("debian13+release:sid", "t.yaml", release_dir=releases)
    assert spec.release == releases / "sid.txt" and str(spec) == "debian13+release:sid"
    with pytest.raises(ConfigError, match=r"t.yaml: box: 'release:nope'.*known: sid"):
        boxspec.parse("debian13+release:nope", "t.yaml", release_dir=releases)
    with pytest.raises(ConfigError, match="names both"):
        boxspec.parse("debian13+release:sid+patch:htcondor-reconnect-transkey", "t.yaml", release_dir=releases)
    monkeypatch.setattr(box_mod, "cache_root", lambda: tmp_path / "cache")
    stock, sid = box_mod.Box("debian13"), box_for(spec)
    assert sid.name.startswith("grid-testbed-debian13-sid-") and sid.hash != stock.hash
    (releases / "sid.txt").write_text("suite sid\ncondor 25.15.0+dfsg-1\n")   # a new pin is a new box
    assert box_for(spec).hash != sid.hash
    # neither build prunes the other's boxes
    assert stock.stale([sid.name, "grid-testbed-debian13-000000000000"]) == ["grid-testbed-debian13-000000000000"]
    assert sid.stale([stock.name, "grid-testbed-debian13-sid-000000000000"]) == ["grid-testbed-debian13-sid-000000000000"]
