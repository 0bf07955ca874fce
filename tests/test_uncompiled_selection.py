"""The uncompiled run's selection (tests/uncompiled_selection.py): every test it keeps exists,
and :func:`select` keeps each line reached by min(cover, units reaching it) kept units."""
import ast
from pathlib import Path

import numpy as np
import pytest

from tests.uncompiled_selection import KERNEL_LINE_TESTS, select, unit_of

TESTS_DIR = Path(__file__).resolve().parent


def test_every_kept_test_exists():
    # a renamed or removed test would silently leave the uncompiled run's lines unreached
    functions = {}
    for unit in KERNEL_LINE_TESTS:
        module, function = unit.split("::")
        if module not in functions:
            tree = ast.parse((TESTS_DIR / f"{module}.py").read_text(encoding="utf-8"))
            functions[module] = {node.name for node in tree.body
                                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
        assert function in functions[module], unit


def test_unit_of_drops_the_parameters_only():
    assert unit_of("tests/test_a.py::test_b[x-y[1]]") == "test_a::test_b"
    assert unit_of("tests/test_a.py::test_b") == "test_a::test_b"


@pytest.mark.parametrize("seed", range(30))
def test_select_covers_each_line_as_often_as_asked(seed):
    rng = np.random.default_rng(seed)
    n_units, n_lines = int(rng.integers(1, 7)), int(rng.integers(1, 12))
    lines_of = {f"u{u}": {int(x) for x in np.flatnonzero(rng.random(n_lines) < 0.4)}
                for u in range(n_units)}
    seconds = {u: float(rng.choice([0.0, 0.5, 2.0])) for u in lines_of}
    cover = int(rng.integers(1, 4))

    def enough(units):
        return all(sum(line in lines_of[u] for u in units)
                   >= min(cover, sum(line in lines for lines in lines_of.values()))
                   for line in set().union(*lines_of.values()))

    kept = select(lines_of, seconds, cover)
    assert enough(kept) and len(set(kept)) == len(kept) and set(kept) <= set(lines_of)
    # greedy, not optimal: but a kept unit reaches a line, and no more units than lines x cover
    assert all(lines_of[u] for u in kept)
    assert len(kept) <= cover * len(set().union(*lines_of.values()))
    # a line reached by fewer units than asked is reached by all of them
    for line in set().union(*lines_of.values()):
        reaching = {u for u in lines_of if line in lines_of[u]}
        if len(reaching) <= cover:
            assert reaching <= set(kept)
