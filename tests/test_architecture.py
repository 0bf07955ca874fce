"""The package is a pipeline: a stage imports only from earlier stages, and nothing imports in a
circle (every ``import`` counted, those inside functions too).

Stages, in order (docs/architecture.md)::

    validate -> prepare -> sort -> sweep -> metrics -> intervals -> tables -> reports

then the entry points (arrays, frame, evaluator, streaming, dask, compat, sklearn, boosting,
cli, ...), which compose the stages.
"""
import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "fastbias"
STAGES = ["validate", "prepare", "sort", "sweep", "metrics", "intervals", "tables", "reports"]
# modules below every stage: imported at start-up by the package itself
FOUNDATION = {"fastbias._numba_cache", "fastbias._threads", "fastbias._native",
              "fastbias._version", "fastbias.progress"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports_of(name: str, path: Path, known: set) -> set:
    """fastbias modules that ``name`` imports anywhere in its source."""
    is_package = path.name == "__init__.py"
    base = name.split(".") if is_package else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                target = ".".join(base[:len(base) - node.level + 1] + ([node.module] if node.module
                                                                        else []))
            else:
                target = node.module or ""
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                found.add(candidate if candidate in known else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m in known and m != name}


def stage_of(name: str) -> int:
    """Position in the pipeline; entry points come after every stage."""
    if name in FOUNDATION:
        return -1
    parts = name.split(".")
    if len(parts) > 1 and parts[1] in STAGES:
        return STAGES.index(parts[1])
    return len(STAGES)


@pytest.fixture(scope="module")
def graph():
    known = modules()
    return {name: imports_of(name, path, set(known)) for name, path in known.items()}


def test_every_stage_has_its_folder():
    for stage in STAGES:
        assert (PACKAGE / stage / "__init__.py").is_file(), stage


def test_a_stage_imports_only_earlier_stages(graph):
    wrong = [f"{name} -> {target}" for name, targets in graph.items() for target in targets
             if stage_of(target) > stage_of(name)]
    assert not wrong, "imports against the pipeline order:\n" + "\n".join(sorted(wrong))


def test_no_import_cycles(graph):
    visiting, done, cycles = [], set(), []

    def visit(node):
        if node in done:
            return
        if node in visiting:
            cycles.append(visiting[visiting.index(node):] + [node])
            return
        visiting.append(node)
        for target in sorted(graph[node]):
            visit(target)
        visiting.pop()
        done.add(node)

    for node in sorted(graph):
        visit(node)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_kernels_live_with_their_stage(graph):
    # numba's cache does not see a change in a kernel's callee in another file: a module of
    # compiled kernels calls only its own functions, so it imports no other fastbias module
    for name, path in modules().items():
        if "@njit" in path.read_text():
            assert not graph[name], f"{name} (compiled kernels) imports {sorted(graph[name])}"
