"""Which box a topology's VMs boot: a kind and, for the Debian box, HTCondor patches built into it.

`box: debian13` is the stock box, `box: el9` the AlmaLinux box from Vagrant Cloud,
`box: debian13+patch:NAME[+patch:NAME...]` the stock Debian box with the HTCondor daemons
that provision/patches/NAME.patch changes rebuilt from Debian's source and installed over
the packaged ones (`testbed box build --patch`, testbed/machines/patched_box.py), and
`box: debian13+release:NAME` the Debian box with another middleware release, the HTCondor
and XRootD versions provision/box/releases/NAME.txt pins (e.g. `sid`: HTCondor 25, XRootD 6).
`testbed up --box SPEC` takes the same words for one bring-up."""
import re
from dataclasses import dataclass
from pathlib import Path

from testbed import PROJECT_ROOT
from testbed.model.errors import ConfigError

BOXES = ("debian13", "el9")
PATCHABLE = ("debian13",)   # built from Debian's source in a Debian chroot
PATCH_DIR = PROJECT_ROOT / "provision" / "patches"
PATCH_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")   # no '+': it separates the parts
RELEASE_DIR = PROJECT_ROOT / "provision" / "box" / "releases"


@dataclass(frozen=True)
class BoxSpec:
    kind: str
    patches: tuple = ()   # Paths of the patch files, in the order they apply
    release: Path = None  # the release file of another middleware release, or None: the kind's own

    def __str__(self):
        return (self.kind + (f"+release:{Path(self.release).stem}" if self.release else "")
                + "".join(f"+patch:{patch_name(p)}" for p in self.patches))


def patch_name(path):
    """A patch's name: its file name without `.patch`."""
    name = Path(path).name
    return name[:-len(".patch")] if name.endswith(".patch") else name


def known_patches(patch_dir=PATCH_DIR):
    return sorted(p.stem for p in Path(patch_dir).glob("*.patch"))


def known_releases(release_dir=RELEASE_DIR):
    return sorted(p.stem for p in Path(release_dir).glob("*.txt"))


def parse(text, source="<box>", field="box", patch_dir=PATCH_DIR, release_dir=RELEASE_DIR):
    """`debian13[+release:NAME][+patch:NAME...]` -> BoxSpec; a bad word raises ConfigError
    naming source and field."""
    if not isinstance(text, str) or not text:
        raise ConfigError(source, field, f"must be a string like debian13 or debian13+patch:NAME, got {text!r}")
    kind, *parts = text.split("+")
    if kind not in BOXES:
        raise ConfigError(source, field, f"must be one of {', '.join(BOXES)} (debian13 optionally followed by "
                                         f"+patch:NAME), got {text!r}")
    patches, release = [], None
    for part in parts:
        prefix, _, name = part.partition(":")
        if prefix == "release":
            path = Path(release_dir) / f"{name}.txt"
            if kind not in PATCHABLE or not PATCH_NAME.match(name) or not path.is_file() or release:
                raise ConfigError(source, field, f"{part!r} in {text!r}: one release of the {', '.join(PATCHABLE)} "
                                                 f"box, a file NAME.txt in {release_dir} (known: "
                                                 f"{', '.join(known_releases(release_dir)) or 'none'})")
            release = path
            continue
        if prefix != "patch" or not PATCH_NAME.match(name):
            raise ConfigError(source, field, f"{part!r} in {text!r} is not patch:NAME (a file NAME.patch "
                                             f"in {patch_dir})")
        if kind not in PATCHABLE:
            raise ConfigError(source, field, f"patches apply to the {', '.join(PATCHABLE)} box only, got {text!r}")
        path = Path(patch_dir) / f"{name}.patch"
        if not path.is_file():
            raise ConfigError(source, field, f"no patch {path} (known: {', '.join(known_patches(patch_dir)) or 'none'})")
        if path in patches:
            raise ConfigError(source, field, f"patch {name} is named twice in {text!r}")
        patches.append(path)
    if release and patches:
        raise ConfigError(source, field, f"patches are built against the stock release; {text!r} names both")
    return BoxSpec(kind, tuple(patches), release)

