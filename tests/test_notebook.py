"""notebooks/analysis.ipynb executes top to bottom (nbclient, a real kernel) on a real offline
experiment and shows the table, the Acc_k curves, the token bars and the paired comparison."""

import re
from pathlib import Path

import pytest

from tests.runners.sweep_helpers import run_sweep

REPO = Path(__file__).resolve().parents[1]
for mod in ("nbclient", "nbformat", "matplotlib", "ipykernel"):
    pytest.importorskip(mod, reason=f"{mod} missing: install the `analysis` extra to execute the notebook")


def test_analysis_notebook_executes(tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    p = run_sweep(tmp_path, "runner.trials=2")
    assert p.returncode == 0, p.stderr[-2000:]
    monkeypatch.setenv("ANALYSIS_RESULTS", str(tmp_path / "offline_demo"))
    nb = nbformat.read(REPO / "notebooks" / "analysis.ipynb", as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(REPO)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "\n".join(str(o.get("data", {}).get("text/plain", "")) + str(o.get("text", "")) for o in outputs)
    html = "\n".join(str(o.get("data", {}).get("text/html", "")) for o in outputs)
    assert "flowstate" in text and "full_context" in text
    # the table shows intervals, and a rate at 100 % keeps a width (Wilson, not a collapsed bootstrap)
    los = [float(x) for x in re.findall(r"100\.00 \[(\d+\.\d\d), 100\.00\]", html + text)]
    assert los and all(lo < 100.0 for lo in los) and "[100.00, 100.00]" not in html + text
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 2  # Acc_k curves and token bars
    assert "p (sign test)" in html + text  # the paired comparison
