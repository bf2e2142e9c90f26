"""The packages depend one way, hf_vaswani <- vaswani_inspect <- vaswani_demo, with no import cycles.

Every import statement of our modules counts, those inside functions too: a cycle that only closes at run time is
still a cycle for a reader. The graph is read from the source with `ast` (no import-linter dependency needed for
three packages), and a fresh interpreter checks what `import hf_vaswani` actually loads.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import PROCESS_TIMEOUT, ROOT

PACKAGES = ("hf_vaswani", "vaswani_inspect", "vaswani_demo")

#: What each package must never import (its own upper layers and the libraries that belong to them).
FORBIDDEN = {
    "hf_vaswani": {"vaswani_inspect", "vaswani_demo", "gradio", "matplotlib", "bertviz", "mpld3"},
    "vaswani_inspect": {"vaswani_demo", "gradio"},
    "vaswani_demo": set(),
}


def module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every module of our packages (a package is its __init__.py)."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def imported_names(module: str, path: Path) -> set[str]:
    """The dotted names `module` imports anywhere in its file, relative imports resolved; for `from X import n`,
    X.n when that is a module of ours and X otherwise."""
    is_package = path.name == "__init__.py"
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            names.update(f"{base}.{alias.name}" for alias in node.names)
            names.add(base)
    return names


def import_graph() -> dict[str, set[str]]:
    """Our module -> the modules of ours it imports."""
    files = module_files()
    graph = {}
    for module, path in files.items():
        edges = set()
        for name in imported_names(module, path):
            if name in files:
                edges.add(name)
            elif name.rsplit(".", 1)[0] in files and name.split(".")[0] in PACKAGES:
                edges.add(name.rsplit(".", 1)[0])  # `from package import attribute`
        edges.discard(module)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]

    def visit(root: str) -> None:
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter[0]
                counter[0] += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_package_imports_an_upper_layer():
    files = module_files()
    offences = []
    for module, path in files.items():
        forbidden = FORBIDDEN[module.split(".")[0]]
        for name in imported_names(module, path):
            if name.split(".")[0] in forbidden:
                offences.append(f"{module} imports {name}")
    assert not offences, "\n".join(sorted(offences))


def test_no_import_cycles():
    graph = import_graph()
    assert len(graph) > 40 and "hf_vaswani.modeling_vaswani" in graph["hf_vaswani"]  # the walk sees the code
    assert not cycles(graph), cycles(graph)


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import(tmp_path):
    """The checker itself: a cycle that closes only through an import inside a function is reported."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from .other import thing\n")
    assert imported_names("pkg.m", module) == {"pkg.other", "pkg.other.thing"}


@pytest.fixture(scope="module")
def loaded_by_import() -> dict[str, set[str]]:
    """Package -> the top-level names in `sys.modules` once a fresh interpreter has imported it, for hf_vaswani
    and then vaswani_inspect, in one process (each process spends seconds importing torch). Importing
    vaswani_inspect second adds to what hf_vaswani loaded, and hf_vaswani is checked to load nothing that
    vaswani_inspect must not: so vaswani_inspect's list holds a forbidden name exactly when its own import would."""
    assert FORBIDDEN["vaswani_inspect"] <= FORBIDDEN["hf_vaswani"], "one process per package is needed now"
    script = (
        "import json, sys; loaded = {}\n"
        "import hf_vaswani; loaded['hf_vaswani'] = sorted(sys.modules)\n"
        "import vaswani_inspect; loaded['vaswani_inspect'] = sorted(sys.modules)\n"
        "print(json.dumps(loaded))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=PROCESS_TIMEOUT, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr[-2000:]
    modules = json.loads(result.stdout.strip().splitlines()[-1])
    return {package: {name.split(".")[0] for name in names} for package, names in modules.items()}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("package", "absent"),
    [("hf_vaswani", FORBIDDEN["hf_vaswani"]), ("vaswani_inspect", FORBIDDEN["vaswani_inspect"])],
)
def test_importing_a_package_loads_no_upper_layer(loaded_by_import, package, absent):
    loaded = loaded_by_import[package]
    assert package in loaded
    assert not loaded & absent


#: A module longer than this says why in its docstring, in a sentence that starts with `LONG_REASON`.
MAX_MODULE_LINES = 500
LONG_REASON = "Long because"


def long_modules_without_a_reason(files: dict[str, Path]) -> list[str]:
    """Modules over `MAX_MODULE_LINES` lines whose docstring gives no reason (a sentence "Long because ...")."""
    offences = []
    for module, path in files.items():
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        docstring = ast.get_docstring(ast.parse(text)) or ""
        if lines > MAX_MODULE_LINES and LONG_REASON not in docstring:
            offences.append(f"{module}: {lines} lines, and its docstring says not why")
    return offences


def test_no_module_is_long_without_a_reason_in_its_docstring():
    files = module_files()
    assert len(files) > 40
    offences = long_modules_without_a_reason(files)
    assert not offences, "\n".join(sorted(offences))


def test_the_length_rule_reports_a_long_module_and_accepts_a_reason(tmp_path):
    body = "x = 1\n" * (MAX_MODULE_LINES + 1)
    (tmp_path / "long.py").write_text('"""A module."""\n' + body)
    (tmp_path / "reasoned.py").write_text(f'"""A module. {LONG_REASON} it is one table."""\n' + body)
    (tmp_path / "short.py").write_text('"""A module."""\nx = 1\n')
    files = {path.stem: path for path in tmp_path.glob("*.py")}
    assert long_modules_without_a_reason(files) == [
        f"long: {MAX_MODULE_LINES + 2} lines, and its docstring says not why"
    ]
