"""The generated `figures:<experiment>` sections: an experiment's headline figures, as its
registry entry declares them (Experiment.doc_figures), drawn from its kept reference at
`quick-default` (else its first kept reference) into docs/experiments/img/ as
`<experiment>-<what>.png`, each embedded with a caption naming the reference, its trials and
what a point is.

The PNGs are kept in git beside the pages, so the same inputs give the same bytes and
`testbed report docs --check` can tell a stale figure from an up-to-date one: figures are
drawn in matplotlib's default style (a matplotlibrc on the machine changes nothing), at a
fixed size and dpi, and every PNG is encoded once more here as a 256-colour palette image
with no metadata (no software version, no date), which also keeps each file a few tens of KB.
Pillow is matplotlib's own dependency.
"""
import fnmatch
import io
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from testbed.model.errors import ConfigError
from testbed.report.experiment_sections import main_reference
from testbed.results import compare
from testbed.results.runs import trials_text

IMG_DIR = Path("docs") / "experiments" / "img"
DPI = 100
COLOURS = 256


class Output:
    """Where the figures of one `testbed report docs` go: under `root`'s docs/experiments/img/,
    each written only when its bytes differ from the file there. With `check`, nothing is
    written: a figure whose bytes differ (or that is missing) is noted as stale, as a page is."""

    def __init__(self, root, check=False):
        self.root, self.check = Path(root), check
        self.made = {}       # {file name: bytes} of the figures the sections made
        self.changed = []    # figures written, or (checking) out of date

    @property
    def folder(self):
        return self.root / IMG_DIR

    def put(self, name, data):
        """Keep figure `name` with bytes `data`; returns its path."""
        path = self.folder / name
        self.made[name] = data
        if path in self.changed or (path.exists() and path.read_bytes() == data):
            return path
        self.changed.append(path)
        if not self.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return path

    def finish(self):
        """The figures written or stale, with the PNGs in the folder that no section made any
        more (a reference or a declared figure gone): removed, or noted when checking. The
        folder holds only generated figures."""
        if self.folder.is_dir():
            for path in sorted(self.folder.glob("*.png")):
                if path.name not in self.made and path not in self.changed:
                    self.changed.append(path)
                    if not self.check:
                        path.unlink()
        return self.changed


@contextmanager
def _default_style():
    """matplotlib's default style, whatever matplotlibrc this machine has."""
    from testbed.results import figures as fig_lib
    fig_lib.pyplot()
    import matplotlib.style
    with matplotlib.style.context("default"):
        yield


def encode(image):
    """PNG bytes of a PIL image: 256-colour palette (median cut, no dither: the same pixels give
    the same palette), compressed, no text chunks."""
    from PIL import Image
    out = io.BytesIO()
    image.convert("RGB").quantize(colors=COLOURS, method=Image.Quantize.MEDIANCUT,
                                  dither=Image.Dither.NONE).save(out, "PNG", optimize=True)
    return out.getvalue()


def figure_bytes(fig):
    """The PNG of a matplotlib figure at DPI (closed after)."""
    from PIL import Image
    from testbed.results import figures as fig_lib
    raw = io.BytesIO()
    fig.savefig(raw, format="png", dpi=DPI, metadata={"Software": None})
    fig_lib.pyplot().close(fig)
    raw.seek(0)
    return encode(Image.open(raw))


def file_bytes(path):
    from PIL import Image
    with Image.open(path) as image:
        return encode(image)


def trials_of(records):
    """How many trials the records hold (records without a trial are one trial's)."""
    return len({r.get("params", {}).get("trial", 1) for r in records}) or 1


def caption(fig, ref, trials):
    """The figure's caption, one line: what it shows, the reference and run it is drawn from,
    the trials, what a point is. A reference with points kept from other runs (`reference save
    --merge` or `--add-trials`) holds other trials than its manifest counts: both are said."""
    origin = ref.origin()
    counted = trials_text(ref.manifest())
    if counted != f"{trials} trial{'s' * (trials != 1)}":
        counted += f"; its records hold {trials} trials, some kept from other runs"
    points = fig.points if trials > 1 else "one trial: the points are its values"
    return (f"*{fig.caption} Drawn from the reference `{ref.experiment}/{ref.key}` (run "
            f"`{origin.get('run', ref.path.name)}`, {counted}); {points}.*")


def section(exp, source, out, reference_root=None):
    """The experiment's doc figures as Markdown (image, caption), each PNG kept by `out`; a
    plain line where the experiment declares none, has no reference, or the reference holds
    nothing for a figure."""
    if not exp.doc_figures:
        return f"`{exp.name}` declares no figures for its page (`doc_figures` in its registry entry)."
    ref = main_reference(exp, reference_root)
    if ref is None:
        return (f"No reference run kept yet for `{exp.name}`, so there are no figures: keep one with "
                f"`./tb reference save latest-{exp.name}`, then `./tb report docs` draws them here.")
    records = ref.metrics()
    trials = trials_of(records)
    link = Path(os.path.relpath(IMG_DIR, Path(source).parent)).as_posix()
    parts = []
    with _default_style(), tempfile.TemporaryDirectory(prefix="doc-figures-") as tmp:
        drawn = compare.experiment_figures([ref], tmp, {exp.name: exp.figures}) \
            if any(f.pick for f in exp.doc_figures) else []
        for fig in exp.doc_figures:
            name = f"{exp.name}-{fig.what}.png"
            try:
                if fig.pick:
                    found = sorted(p for p in drawn if fnmatch.fnmatch(p.name, fig.pick))
                    data = file_bytes(found[0]) if found else None
                else:
                    made = fig.draw(records)
                    data = figure_bytes(made) if made is not None else None
            except Exception as exc:  # noqa: BLE001 - named with the page and the figure, as any section's error
                raise ConfigError(source, f"figures:{exp.name}", f"{name}: {type(exc).__name__}: {exc}") from exc
            if data is None:
                parts += [f"The reference `{ref.experiment}/{ref.key}` holds no points for this figure "
                          f"({fig.alt}).", ""]
                continue
            out.put(name, data)
            parts += [f"![{fig.alt}]({link}/{name})", "", caption(fig, ref, trials), ""]
    return "\n".join(parts)
