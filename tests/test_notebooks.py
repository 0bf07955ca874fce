"""Execute every notebook in notebooks/ so that none of them rots.

Each notebook runs top to bottom in a fresh ``python3`` kernel (nbclient +
ipykernel) with notebooks/ as its working directory; any cell error fails the
test. Notebooks that need the real data in ``../shared/data`` (metadata
``{"fastbias": {"requires_shared_data": true}}``, or a source that mentions
``shared/data`` or the ``madlibs`` files) are skipped when it is absent.
Notebooks assert their own claims in their cells, so a run is also a check.
"""
import json
from pathlib import Path

import pytest

from tests.conftest import SHARED_DATA_DIR

REPO_ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
CELL_TIMEOUT_S = 300

pytestmark = pytest.mark.jit_heavy  # far too slow with NUMBA_DISABLE_JIT=1


def needs_shared_data(path: Path) -> bool:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    declared = notebook.get("metadata", {}).get("fastbias", {}).get("requires_shared_data")
    if declared is not None:  # an explicit declaration wins over the text heuristic
        return bool(declared)
    source = "\n".join("".join(cell.get("source", "")) for cell in notebook.get("cells", [])
                       if cell.get("cell_type") == "code")
    return "shared/data" in source or "shared\" / \"data" in source or "madlibs" in source


# figures (PNG outputs) the notebooks of issue 6 must draw when they run
EXPECTED_FIGURES = {"metrics_tour.ipynb": 1, "perspective_models.ipynb": 4}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("matplotlib")
    if needs_shared_data(path) and not SHARED_DATA_DIR.is_dir():
        pytest.skip(f"{path.name} needs {SHARED_DATA_DIR}, which is absent")
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOKS_DIR)}})
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as exc:
        pytest.fail(f"{path.name} failed:\n{exc}", pytrace=False)
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert [o for o in outputs if o.get("output_type") == "error"] == []
    if path.name in EXPECTED_FIGURES:
        images = sum("image/png" in o.get("data", {}) for o in outputs)
        assert images >= EXPECTED_FIGURES[path.name]


@pytest.mark.parametrize("name", sorted(EXPECTED_FIGURES))
def test_issue_notebooks_are_committed_without_outputs(name):
    path = NOTEBOOKS_DIR / name
    notebook = json.loads(path.read_text(encoding="utf-8"))
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    assert code and all(not c.get("outputs") and c.get("execution_count") is None for c in code)
