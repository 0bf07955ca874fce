"""Run the Examples sections of every public module's docstrings (numpydoc examples must stay true)."""
import doctest
import importlib
import pkgutil
import warnings

import pytest

import fastbias

# modules whose optional dependencies may be absent: skipped (not failed) when the import fails
OPTIONAL = {"fastbias.dask", "fastbias.boosting", "fastbias.sklearn", "fastbias.report",
            "fastbias.plotting", "fastbias.streaming"}

# every module of every stage package too (the examples live where the code lives)
MODULES = sorted(m.name for m in pkgutil.walk_packages(fastbias.__path__, "fastbias.")
                 if m.name != "fastbias.__main__")


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples(module_name):
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        if module_name in OPTIONAL:
            pytest.skip(f"optional dependency missing: {exc}")
        raise
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = [t for t in finder.find(module, module_name) if t.examples]
    if not tests:
        pytest.skip("no examples in this module")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for test in tests:
            runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {module_name}"


def test_public_functions_have_examples():
    missing = []
    for name in fastbias.__all__:
        obj = getattr(fastbias, name)
        if callable(obj) and not isinstance(obj, type) and name != "UndefinedMetricWarning":
            doc = obj.__doc__ or ""
            if "Examples" not in doc or "Parameters" not in doc:
                missing.append(name)
    assert not missing, f"public functions without numpydoc Parameters/Examples: {missing}"
