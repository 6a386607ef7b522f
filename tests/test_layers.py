"""The package's layers: a module imports only from its own layer or the layers above it."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "testbed"
ORDER = ["model", "remote", "network", "machines", "services", "faults", "results", "experiments", "cli"]


def imported_layers(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("testbed."):
            yield node.module.split(".")[1], node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module == "testbed":
            for alias in node.names:
                if alias.name in ORDER:
                    yield alias.name, node.lineno


def test_no_module_imports_a_layer_below_its_own():
    wrong = []
    for layer in ORDER:
        for path in sorted((ROOT / layer).rglob("*.py")):
            for other, line in imported_layers(path):
                if other in ORDER and ORDER.index(other) > ORDER.index(layer):
                    wrong.append(f"{path.relative_to(ROOT.parent)}:{line} imports testbed.{other}")
    assert not wrong, "upward imports:\n" + "\n".join(wrong)


def test_every_module_says_what_it_is_for():
    missing = [str(p.relative_to(ROOT.parent)) for p in ROOT.rglob("*.py")
               if p.name != "__main__.py" and not (ast.get_docstring(ast.parse(p.read_text())) or "").strip()]
    assert not missing, f"modules without a first-line docstring: {missing}"
