"""HTCondor daemons rebuilt from Debian's source with patches, in a Debian 13 chroot, cached.

`testbed box build --patch FILE...` (testbed/machines/patched_box.py) gets its binaries here.
Each step writes its own log under the cache (`daemons/<recipe>.logs/<step>.log`); a step
that fails raises one line naming the step and that log:

- source: Debian's orig tarball of condor (constants.HTCONDOR_SOURCE), checked against its
  pinned sha256 and kept in the cache;
- chroot: debootstrap trixie with Debian's build dependencies of condor and the box's condor
  itself (provision/box/htcondor/), cached by the hash of that recipe; its package set is
  recorded, and its condor must be the box's;
- patch: a fresh copy of the source, each patch applied with `patch -p1 --forward`;
- configure: cmake as Debian's rules call it (provision/box/htcondor/cmake-options.txt), with
  Debian's hardening flags (dpkg-buildflags);
- compile: only the sources of the daemons the patches touch (constants.REBUILDABLE_DAEMONS);
- link: those objects against the packaged shared libcondor_utils and libclassad of the
  chroot's condor, which are the box's, then strip them as Debian's packaging does;
- check: the daemon prints its version in the chroot and ldd resolves every library.

The binaries are cached by the hash of (source, patches, the recipe, the chroot's package set).
"""
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from testbed.machines.box import DEFAULT_MIRROR, cache_root
from testbed.model import constants as c
from testbed.model.boxspec import patch_name
from testbed.model.clock import utc_iso
from testbed.model.errors import ConfigError, TestbedError

RECIPE_DIR = Path(__file__).resolve().parents[2] / "provision" / "box" / "htcondor"
CHROOT_RECIPE = ("build-chroot.sh", "build-packages.txt")
BUILD_RECIPE = CHROOT_RECIPE + ("cmake-options.txt",)
SUITE = "trixie"
NICE = ("nice", "-n", "19")
HARDENING = "hardening=+all"          # what Debian's rules export as DEB_BUILD_MAINT_OPTIONS
DOWNLOAD_TIMEOUT_S = 120


class StepFailed(TestbedError):
    def __init__(self, step, log, why=""):
        self.step, self.log = step, Path(log)
        super().__init__(f"box build --patch: step {step} failed{': ' + why if why else ''}; see {log}")


@dataclass(frozen=True)
class Patch:
    path: Path
    name: str
    sha256: str
    files: tuple      # the source files it changes, relative to the source's top directory


def read_patch(path):
    """A patch file: its name, hash and the files it changes (its `+++` lines, -p1)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(path, "", "no such patch file")
    data = path.read_bytes()
    files = []
    for line in data.decode(errors="replace").splitlines():
        if line.startswith("+++ "):
            name = line[4:].split("\t")[0].strip()
            name = name.split("/", 1)[1] if "/" in name else name
            if name != "/dev/null" and name not in files:
                files.append(name)
    if not files:
        raise ConfigError(path, "", "is not a unified diff (no `+++ b/FILE` line)")
    return Patch(path, patch_name(path), hashlib.sha256(data).hexdigest(), tuple(files))


def targets_of(patches):
    """{source directory: (cmake target, installed path)} of the daemons the patches change;
    a change this build cannot rebuild (a library, another daemon) is a one-line error."""
    found = {}
    for patch in patches:
        for name in patch.files:
            where = next((d for d in c.REBUILDABLE_DAEMONS if name.startswith(d)), None)
            if where is None:
                raise ConfigError(patch.path, "", f"changes {name}, which `box build --patch` cannot rebuild "
                                                  f"(it rebuilds the daemons of {', '.join(c.REBUILDABLE_DAEMONS)})")
            found[where] = c.REBUILDABLE_DAEMONS[where]
    return found


def digest(*parts):
    h = hashlib.sha256()
    for part in parts:
        h.update((part if isinstance(part, bytes) else str(part).encode()) + b"\0")
    return h.hexdigest()


def mounted_under(path, mounts_file="/proc/self/mounts"):
    """Mount points at or below `path` (a chroot's /proc, /dev, ... still bound)."""
    path = os.path.realpath(path)
    try:
        lines = Path(mounts_file).read_text().splitlines()
    except OSError:
        return []
    points = [line.split()[1].replace("\\040", " ") for line in lines if len(line.split()) > 1]
    return [p for p in points if p == path or p.startswith(path.rstrip("/") + "/")]


def remove_tree(path):
    """rm -rf that refuses a tree with something mounted in it (a bound /dev would go too)."""
    busy = mounted_under(path)
    if busy:
        raise TestbedError(f"{path}: {busy[0]} is still mounted; unmount it (`umount -l {busy[0]}`) and retry")
    shutil.rmtree(path, ignore_errors=True)


class DaemonBuild:
    """The rebuilt daemons of one set of patches: where they are cached and how they are made."""

    def __init__(self, patch_files, mirror=None, root=None, run=subprocess.run, fetch=None, log=print,
                 jobs=2, recipe_dir=RECIPE_DIR):
        self.patches = [read_patch(p) for p in patch_files]
        if not self.patches:
            raise TestbedError("box build --patch: no patch given")
        names = [p.name for p in self.patches]
        if len(set(names)) != len(names):
            raise TestbedError(f"box build --patch: two patches are named {sorted(n for n in names if names.count(n) > 1)[0]}")
        self.targets = targets_of(self.patches)
        self.mirror = (mirror or DEFAULT_MIRROR).rstrip("/")
        self.root = Path(root) if root else cache_root()
        self.run, self.fetch, self.echo, self.jobs = run, fetch or _download, log, max(1, min(int(jobs), 2))
        self.recipe_dir = Path(recipe_dir)
        self.chroot_hash = digest(SUITE, *self._recipe_bytes(CHROOT_RECIPE))[:12]
        # what the binaries are made from, known before anything is built: the source, the
        # patches (name and content, in order), the chroot's and the build's recipe
        self.recipe_hash = digest(c.HTCONDOR_SOURCE_SHA256, *(f"{p.name}:{p.sha256}" for p in self.patches),
                                  *self._recipe_bytes(BUILD_RECIPE), json.dumps(self.targets, sort_keys=True))[:12]
        self.logs = self.root / "daemons" / f"{self.recipe_hash}.logs"
        self.timings = {}

    # -- names and hashes ---------------------------------------------------------------
    def _recipe_bytes(self, names):
        return [n.encode() + b"\0" + (self.recipe_dir / n).read_bytes() for n in names]

    def key(self, package_set):
        """The binaries' cache key: the recipe and the chroot's package set as installed."""
        return digest(self.recipe_hash, package_set)[:16]

    @property
    def chroot(self):
        return self.root / "build-chroot" / f"{SUITE}-{self.chroot_hash}"

    def out_dir(self, key):
        return self.root / "daemons" / key

    @property
    def source_url(self):
        return f"{self.mirror}/{c.HTCONDOR_SOURCE}"

    @property
    def source_file(self):
        return self.root / "sources" / Path(c.HTCONDOR_SOURCE).name

    # -- the steps ----------------------------------------------------------------------
    def _log(self, step):
        self.logs.mkdir(parents=True, exist_ok=True)
        return self.logs / f"{step}.log"

    def _sh(self, step, cmd, cwd=None, env=None, why=""):
        """Run one command of a step, its output appended to the step's log."""
        log = self._log(step)
        with open(log, "a") as out:
            out.write(f"$ {shlex.join(str(x) for x in cmd)}\n")
            out.flush()
            proc = self.run([str(x) for x in cmd], stdout=out, stderr=subprocess.STDOUT, cwd=cwd,
                            env=env, text=True)
        if proc.returncode != 0:
            raise StepFailed(step, log, why or f"`{Path(str(cmd[0])).name}` exited {proc.returncode}")
        return proc

    def in_chroot(self, *cmd, cwd="/"):
        """argv running `cmd` in the chroot at `cwd`, at the lowest CPU priority."""
        return ["chroot", str(self.chroot), *NICE, "env", "LC_ALL=C", "sh", "-c",
                f"cd {shlex.quote(cwd)} && exec {shlex.join(str(x) for x in cmd)}"]

    def _output(self, step, cmd, cwd="/"):
        """Run in the chroot and return stdout (stderr to the step's log)."""
        log = self._log(step)
        with open(log, "a") as err:
            err.write(f"$ {shlex.join(cmd)}\n")
            err.flush()
            proc = self.run(self.in_chroot(*cmd, cwd=cwd), stdout=subprocess.PIPE, stderr=err, text=True)
        if proc.returncode != 0:
            raise StepFailed(step, log, f"`{cmd[0]}` exited {proc.returncode}")
        return proc.stdout

    def _timed(self, step, fn, *args):
        started = time.monotonic()
        result = fn(*args)
        self.timings[step] = round(time.monotonic() - started, 1)
        return result

    def source(self):
        """The orig tarball in the cache, downloaded once and checked against its pinned hash."""
        path = self.source_file
        log = self._log("source")
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".partial")
            self.echo(f"downloading {self.source_url}")
            try:
                self.fetch(self.source_url, tmp)
            except OSError as exc:
                log.write_text(f"GET {self.source_url}\n{exc}\n")
                raise StepFailed("source", log, f"cannot download {self.source_url}") from None
            tmp.replace(path)
        got = hashlib.sha256(path.read_bytes()).hexdigest()
        if got != c.HTCONDOR_SOURCE_SHA256:
            log.write_text(f"{path}\nsha256 {got}\nexpected {c.HTCONDOR_SOURCE_SHA256} (constants.HTCONDOR_SOURCE_SHA256)\n")
            path.replace(path.with_suffix(".rejected"))
            raise StepFailed("source", log, f"{path.name} does not have the pinned sha256")
        return path

    def ensure_chroot(self, apt_cache):
        """The build chroot, made once per recipe; returns its package set (`dpkg-query -W`)."""
        listing = self.chroot / "packages.txt"
        if not listing.exists():
            partial = self.chroot.with_name(self.chroot.name + ".partial")
            remove_tree(partial)
            self.echo(f"making the build chroot {self.chroot.name} (debootstrap {SUITE}, Debian's build "
                      f"dependencies of condor; log {self._log('chroot')})")
            self._sh("chroot", [*NICE, "bash", self.recipe_dir / "build-chroot.sh", partial, self.mirror, apt_cache])
            packages = self.run(["chroot", str(partial), "dpkg-query", "-W", "-f",
                                 "${Package} ${Version} ${Architecture}\\n"],
                                capture_output=True, text=True).stdout
            if not packages.strip():
                raise StepFailed("chroot", self._log("chroot"), "no package list from the new chroot")
            (partial / "packages.txt").write_text("".join(sorted(packages.splitlines(keepends=True))))
            if mounted_under(partial):
                raise StepFailed("chroot", self._log("chroot"), f"{mounted_under(partial)[0]} is still mounted")
            partial.rename(self.chroot)
        return listing.read_text()

    def chroot_condor(self, package_set):
        for line in package_set.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "condor":
                return parts[1]
        return None

    def work(self):
        """(host path, chroot path) of this recipe's build tree inside the chroot."""
        inside = f"/build/{self.recipe_hash}"
        return self.chroot / inside.lstrip("/"), inside

    def unpack_and_patch(self, tarball):
        host, inside = self.work()
        remove_tree(host.parent)   # this build's tree, and one a failed build of other patches left
        (host / "patches").mkdir(parents=True)
        self._sh("patch", ["tar", "-C", host, "--no-same-owner", "-xf", tarball])
        src = f"{inside}/{c.HTCONDOR_SOURCE_TOP}"
        for patch in self.patches:
            shutil.copyfile(patch.path, host / "patches" / f"{patch.name}.patch")
            self._sh("patch", self.in_chroot("patch", "-p1", "--forward", "--batch", "-i",
                                             f"{inside}/patches/{patch.name}.patch", cwd=src),
                     why=f"{patch.path} does not apply to {c.HTCONDOR_SOURCE_TOP}")
        return src

    def build_flags(self, src):
        """Debian's compiler and linker flags for the package (dpkg-buildflags, hardening=+all);
        debhelper's cmake build adds CPPFLAGS to CFLAGS and CXXFLAGS, and so does this."""
        flags = {}
        for name in ("CPPFLAGS", "CFLAGS", "CXXFLAGS", "LDFLAGS"):
            flags[name] = self._output("configure", ["env", f"DEB_BUILD_MAINT_OPTIONS={HARDENING}",
                                                     "dpkg-buildflags", "--get", name], cwd=src).strip()
        for name in ("CFLAGS", "CXXFLAGS"):
            flags[name] = f"{flags[name]} {flags['CPPFLAGS']}".strip()
        del flags["CPPFLAGS"]
        return flags

    def configure(self, src, package_id):
        host, inside = self.work()
        options = [line.strip() for line in (self.recipe_dir / "cmake-options.txt").read_text().splitlines()
                   if line.strip() and not line.lstrip().startswith("#")]
        flags = [f"{k}={v}" for k, v in self.build_flags(src).items()]
        self._sh("configure", self.in_chroot("env", *flags, "cmake", "-S", src, "-B", f"{inside}/obj", *options,
                                             f"-DPACKAGEID:STRING={package_id}"))
        return host / "obj"

    def compile(self, obj, src):
        """Each target's own sources, compiled with the commands cmake wrote for them."""
        commands = json.loads((obj / "compile_commands.json").read_text())
        todo = [e for e in commands for d in self.targets
                if e["file"].startswith(f"{src}/{d}") and f"/{self.targets[d][0]}.dir/" in e["command"]]
        if not todo:
            raise StepFailed("compile", self._log("compile"), "cmake wrote no compile command for "
                             + ", ".join(t for t, _ in self.targets.values()))
        lock = threading.Lock()

        def one(entry):
            proc = self.run(self.in_chroot("sh", "-c", entry["command"], cwd=entry["directory"]),
                            capture_output=True, text=True)
            with lock, open(self._log("compile"), "a") as out:
                out.write(f"$ {entry['command']}\n{proc.stdout}{proc.stderr}")
            return entry["file"], proc.returncode

        with ThreadPoolExecutor(self.jobs) as pool:
            failed = [f for f, rc in pool.map(one, todo) if rc != 0]
        if failed:
            raise StepFailed("compile", self._log("compile"), f"{Path(failed[0]).name} did not compile")
        return len(todo)

    def link(self, obj):
        """Link each target as cmake would, with the packaged shared libraries in place of the
        in-tree static ones (libcondor_utils, libclassad)."""
        built = {}
        for d, (target, _installed) in self.targets.items():
            link_dir = obj / d
            line = (link_dir / "CMakeFiles" / f"{target}.dir" / "link.txt").read_text().strip()
            argv = relink(shlex.split(line), self._log("link"))
            inside = "/" + str(link_dir.relative_to(self.chroot))
            self._sh("link", self.in_chroot(*argv, cwd=inside))
            # dh_strip's treatment of an executable
            self._sh("link", self.in_chroot("strip", "--remove-section=.comment", "--remove-section=.note",
                                            target, cwd=inside))
            built[target] = link_dir / target
        return built

    def check(self, built, condor_version):
        """The daemon runs in the chroot (`-version`) and every library it needs resolves to
        the packaged one."""
        report = {}
        for target, path in built.items():
            inside = "/" + str(path.relative_to(self.chroot))
            version = self._output("check", [inside, "-version"])
            upstream = condor_version.split("+")[0]
            if f"$CondorVersion: {upstream} " not in version:
                raise StepFailed("check", self._log("check"), f"{target} -version says {version.strip()[:80]!r}, "
                                 f"not {upstream}")
            ldd = self._output("check", ["ldd", inside])
            missing = [line.split()[0] for line in ldd.splitlines() if "not found" in line]
            resolved = {_merged(line.split("=>")[1].split()[0]) for line in ldd.splitlines()
                        if "=>" in line and line.split("=>")[1].split()}
            wanted = sorted({lib for lib in c.CONDOR_PACKAGED_LIBS.values() if _merged(lib) not in resolved})
            if missing or wanted:
                with open(self._log("check"), "a") as out:
                    out.write(ldd)
                raise StepFailed("check", self._log("check"), f"{target} does not resolve "
                                 f"{(missing or wanted)[0]} to the packaged library")
            report[target] = {"version": version.strip(),
                              "libraries": sorted(line.split()[0] for line in ldd.splitlines() if "=>" in line)}
        return report

    # -- the whole build ----------------------------------------------------------------
    def build(self, box_condor, apt_cache=None, force=False):
        """The rebuilt daemons (a dir with bin/<daemon> and build.json), from the cache when
        this recipe was built in this chroot before. `box_condor`: the box's condor version."""
        if not box_condor:
            raise TestbedError("box build --patch: the stock box records no condor version (versions.txt)")
        shutil.rmtree(self.logs, ignore_errors=True)   # the logs of this attempt only
        self.logs.mkdir(parents=True)
        tarball = self._timed("source", self.source)
        package_set = self._timed("chroot", self.ensure_chroot, apt_cache or self.root / "apt-cache")
        chroot_condor = self.chroot_condor(package_set)
        if chroot_condor != box_condor:
            raise StepFailed("chroot", self._log("chroot"), f"the chroot has condor {chroot_condor}, the box "
                             f"{box_condor}; rebuild the stock box (`testbed box build`) so both come from "
                             f"today's mirror, then remove {self.chroot}")
        key = self.key(package_set)
        out = self.out_dir(key)
        if (out / "build.json").exists() and not force:
            self.echo(f"rebuilt daemons {key} are cached ({out})")
            return out
        with chroot_mounts(self.chroot, self._sh):
            src = self._timed("patch", self.unpack_and_patch, tarball)
            self.echo(f"configuring HTCondor {c.HTCONDOR_SOURCE_TOP} in the chroot (log {self._log('configure')})")
            obj = self._timed("configure", self.configure, src, box_condor)
            self.echo(f"compiling {', '.join(t for t, _ in self.targets.values())} (log {self._log('compile')})")
            files = self._timed("compile", self.compile, obj, src)
            built = self._timed("link", self.link, obj)
            report = self._timed("check", self.check, built, box_condor)
        return self._keep(out, key, built, report, files, package_set, box_condor)

    def _keep(self, out, key, built, report, files, package_set, box_condor):
        partial = out.with_name(out.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        (partial / "bin").mkdir(parents=True)
        daemons = {}
        for target, path in built.items():
            dest = partial / "bin" / target
            shutil.copy2(path, dest)
            installed = next(i for t, i in self.targets.values() if t == target)
            daemons[target] = {"installs": installed, "size_bytes": dest.stat().st_size,
                               "sha256": hashlib.sha256(dest.read_bytes()).hexdigest(), **report[target]}
        shutil.copytree(self.logs, partial / "logs")
        manifest = {
            "key": key, "recipe": self.recipe_hash,
            "built": utc_iso(),
            "patches": [{"name": p.name, "file": str(p.path.resolve()), "sha256": p.sha256, "changes": list(p.files)}
                        for p in self.patches],
            "source": {"url": self.source_url, "sha256": c.HTCONDOR_SOURCE_SHA256},
            "chroot": {"suite": SUITE, "recipe": self.chroot_hash, "condor": box_condor,
                       "packages": len(package_set.splitlines()), "package_set_sha256": digest(package_set)},
            "compiled_files": files, "linked_against": sorted(set(c.CONDOR_PACKAGED_LIBS.values())),
            "daemons": daemons, "timings_s": dict(self.timings),
        }
        (partial / "build.json").write_text(json.dumps(manifest, indent=1) + "\n")
        shutil.rmtree(out, ignore_errors=True)
        partial.rename(out)
        remove_tree(self.work()[0])
        return out


def _merged(path):
    """/lib/x and /usr/lib/x are one file on Debian 13 (merged /usr)."""
    return path[len("/usr"):] if path.startswith("/usr/") else path


def relink(argv, log):
    """cmake's link line with each in-tree static library of CONDOR_PACKAGED_LIBS replaced by
    the packaged shared one; any other in-tree static library is an error (it is not packaged)."""
    out = []
    for arg in argv:
        if arg.endswith(".a") and not arg.startswith("-"):
            stem = Path(arg).name[:-2]
            lib = next((path for prefix, path in c.CONDOR_PACKAGED_LIBS.items() if stem.startswith(prefix)), None)
            if lib is None:
                raise StepFailed("link", log, f"the link needs the in-tree library {arg}, which condor does not package")
            if lib not in out:
                out.append(lib)
            continue
        out.append(arg)
    return out


class chroot_mounts:
    """/proc and /dev bound into the chroot for the build, unbound however it ends."""

    POINTS = ("proc", "dev")

    def __init__(self, root, sh):
        self.root, self.sh = Path(root), sh

    def __enter__(self):
        for p in self.POINTS:
            self.sh("mounts", ["mount", "--bind", f"/{p}", self.root / p])
        return self

    def __exit__(self, *exc):
        for p in reversed(self.POINTS):
            if mounted_under(self.root / p):
                subprocess.run(["umount", "-l", str(self.root / p)], check=False)
        return False


def _download(url, dest):
    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as resp, open(dest, "wb") as out:
        shutil.copyfileobj(resp, out)
