"""The package's layers: a module imports only from its own layer or the layers above it."""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "testbed"
from testbed import LAYERS

ORDER = list(LAYERS)


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


def module_name(path):
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_imports(path, known):
    """The package's modules `path` imports anywhere in it, a function's body included (an
    import put inside a function still ties the two modules together)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                out.add(full if full in known else node.module)
    return {m for m in out if m in known} - {module_name(path)}


def import_cycles(graph):
    """The groups of modules that import one another, round or through others (strongly
    connected components of more than one module)."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while not group or group[-1] != node:
                group.append(stack.pop())
                on_stack.discard(group[-1])
            if len(group) > 1:
                groups.append(sorted(group))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def test_import_cycles_are_found_through_function_level_imports():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_no_two_modules_import_each_other():
    paths = {module_name(p): p for p in ROOT.rglob("*.py")}
    graph = {name: module_imports(path, paths) for name, path in paths.items()}
    cycles = import_cycles(graph)
    assert not cycles, "modules that import one another:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_no_two_modules_share_a_name():
    """A module's file name alone says which module it is: in a traceback, in a reader's
    head, and in an import that needs no `as` to tell two apart."""
    by_name = {}
    for path in sorted(ROOT.rglob("*.py")):
        if path.name != "__init__.py":
            by_name.setdefault(path.name, []).append(str(path.relative_to(ROOT.parent)))
    shared = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert not shared, "modules of one name:\n" + "\n".join(f"{n}: {', '.join(p)}" for n, p in shared.items())


def test_every_module_says_what_it_is_for():
    missing = [str(p.relative_to(ROOT.parent)) for p in ROOT.rglob("*.py")
               if p.name != "__main__.py" and not (ast.get_docstring(ast.parse(p.read_text())) or "").strip()]
    assert not missing, f"modules without a first-line docstring: {missing}"


def deadline_loops(path):
    """`while` loops of a module that test a clock (time.monotonic/time.time, a `deadline`,
    an `elapsed` or `started` variable) or loop for ever around a time.sleep: waits written
    by hand instead of through remote/poll.wait_for."""
    src = path.read_text()
    tree = ast.parse(src)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.While):
            continue
        test = ast.unparse(node.test)
        body = "\n".join(ast.unparse(s) for s in node.body)
        clocky = any(w in test for w in ("monotonic", "time.time", "deadline", "elapsed", "started"))
        forever_sleeping = test == "True" and "time.sleep" in body
        if clocky or forever_sleeping:
            found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} while {test}")
    return found


def test_every_wait_goes_through_wait_for():
    loops = [loop for path in sorted(ROOT.rglob("*.py")) if path.name != "poll.py" and "guest" not in path.parts
             for loop in deadline_loops(path)]
    robot_libs = Path(__file__).resolve().parents[1] / "robot" / "libraries"
    loops += [loop for path in sorted(robot_libs.glob("*.py")) for loop in deadline_loops(path)]
    assert not loops, f"{len(loops)} hand-written wait loops (use testbed.remote.poll.wait_for):\n" + "\n".join(loops)


MAX_MODULE_LINES = 520  # "about 500": one responsibility per module


def test_no_module_of_the_package_is_over_about_500_lines():
    big = [f"{p.relative_to(ROOT.parent)}: {n} lines" for p in sorted(ROOT.rglob("*.py"))
           if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES]
    assert not big, "split by responsibility:\n" + "\n".join(big)


CONDOR_COMMAND = re.compile(r"(^|[;&|`]\s*|\$\(\s*)(sudo -u \S+ )?condor_(q|rm|history|status|submit|off|on|restart|"
                            r"reconfig|config_val|drain|hold|release|vacate|advertise|ping|who|tail|ssh_to_job)\b")
# XRootD's clients, and systemd acting on an HTCondor, XRootD or cmsd unit named in the text
# (a tool followed by an option, a URL or a value; "xrdcp of FILE failed" is a message)
XROOTD_OR_UNIT_COMMAND = re.compile(r"(^|[;&|`]\s*|\$\(\s*|\})(xrdcp|xrdfs|xrdpfc_print)\s+(-|root://|\{|\$)"
                                    r"|systemctl (start|stop|restart|reload|kill)\b[^;&|]*\b(xrootd|cmsd|condor)\b")


def command_strings(path, command=CONDOR_COMMAND):
    """The string literals of a module that run a `command` (a docstring or a message that
    names one is not a command): (line, text)."""
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    docs |= {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}  # read whole
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            text = node.value
        else:
            continue
        if command.search(text):
            yield node.lineno, text


def test_the_command_finder_tells_a_command_from_a_message():
    assert CONDOR_COMMAND.search("condor_q -better-analyze -constraint x") and CONDOR_COMMAND.search("a; condor_rm 4")
    assert CONDOR_COMMAND.search("n=$(condor_config_val X)") and CONDOR_COMMAND.search("sudo -u u condor_q")
    assert not CONDOR_COMMAND.search("the schedd did not answer condor_q") and not CONDOR_COMMAND.search("condor_qx")


def test_only_the_gateway_runs_htcondors_tools():
    """HTCondor's command-line tools are run by services/ (the gateway) alone: an experiment,
    a fault or a Robot library asks it."""
    outside = [ROOT / "experiments", ROOT / "injectors", ROOT.parent / "robot" / "libraries"]
    found = [f"{path.relative_to(ROOT.parent)}:{line}: {text[:70]!r}" for folder in outside
             for path in sorted(folder.rglob("*.py")) for line, text in command_strings(path)]
    assert not found, "HTCondor commands outside the gateway:\n" + "\n".join(found)


def test_the_finder_tells_an_xrootd_or_unit_command_from_a_message():
    for command in ("xrdcp -f -s root://d//f /dev/null", "s=$(date); {}{}xrdcp -f x y", "a; xrdpfc_print -j f",
                    "systemctl stop xrootd@xcache.service; rm -rf x", "systemctl start condor.service",
                    "systemctl restart cmsd@redir.service"):
        assert XROOTD_OR_UNIT_COMMAND.search(command), command
    for message in ("xrdcp of f through dtn:1094 failed", "up to 4 xrdcp clients", "systemctl is-active condor",
                    "systemctl stop nfs-server"):
        assert not XROOTD_OR_UNIT_COMMAND.search(message), message


def test_only_the_gateway_runs_xrootds_tools_and_the_daemons_units():
    """XRootD's clients and the HTCondor/XRootD units are run by services/ alone (storage.py's
    XrootdUnits and xrdcp_command, gateway.Daemons): an experiment, a fault or a Robot
    library asks them."""
    outside = [ROOT / "experiments", ROOT / "injectors", ROOT.parent / "robot" / "libraries"]
    found = [f"{path.relative_to(ROOT.parent)}:{line}: {text[:70]!r}" for folder in outside
             for path in sorted(folder.rglob("*.py")) for line, text in command_strings(path, XROOTD_OR_UNIT_COMMAND)]
    assert not found, "XRootD or daemon unit commands outside the gateway:\n" + "\n".join(found)
