"""The architecture page's generated table of the package's layers: each layer's own words
and modules, and an experiment's package as a folder with its modules."""
from testbed import LAYERS
from testbed.report import site_sections


def test_each_layer_with_its_words_and_modules(tmp_path):
    for layer in LAYERS:
        (tmp_path / layer).mkdir()
        (tmp_path / layer / "__init__.py").write_text(f'"""The {layer}\n   layer."""\n')
    (tmp_path / "model" / "topology.py").write_text("")
    (tmp_path / "experiments" / "e9").mkdir()
    (tmp_path / "experiments" / "e9" / "__init__.py").write_text("")
    (tmp_path / "experiments" / "e9" / "points.py").write_text("")
    rows = [line for line in site_sections.package_layers_section(tmp_path).splitlines() if line.startswith("| ")][1:]
    assert [r.split(" | ")[1] for r in rows] == [f"`testbed/{layer}/`" for layer in LAYERS]
    assert rows[0] == "| 1 | `testbed/model/` | The model layer. | `topology` |"
    assert "`e9/` (points)" in rows[LAYERS.index("experiments")]
