"""Two cells with the same method, backbone and benchmark that differ only in a param (a param
override, as an ablation is) are two cells: their own directories and records, and their own
table rows named by the value that differs. Running one of them again resumes that one only."""

import asyncio

from runners.analysis.cells import collect
from runners.analysis.tables import build_tables
from runners.config import validate
from runners.progress import Progress
from runners.pool import BackbonePool
from runners.prepare import prepare_cell
from runners.run import run_cell
from tests.runners.test_config import base


def cell(max_resamples: int):
    raw = base()
    raw["method"]["params"]["max_resamples"] = max_resamples
    raw["benchmark"]["params"]["data_dir"] = "fixtures"
    raw["runner"].update(limit=2, concurrency=2)
    return validate(raw)


def run(cfg, root):
    return asyncio.run(run_cell(prepare_cell(cfg), root, BackbonePool(None), Progress("none")))


def test_cells_that_differ_only_in_params_stay_apart(tmp_path):
    a, b = cell(0), cell(1)
    assert (a.method.name, a.backbone.name, a.benchmark.name) == (b.method.name, b.backbone.name, b.benchmark.name)
    assert a.cell_name != b.cell_name
    first, second = run(a, tmp_path), run(b, tmp_path)
    assert (first.ok, first.skipped) == (2, 0) and (second.ok, second.skipped) == (2, 0)  # b did not resume a's records
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == sorted(
        [a.cell_name, b.cell_name]
    )

    cells = collect(tmp_path)
    assert sorted((c.method, c.n_episodes) for c in cells) == [
        ("full_context[max_resamples=0]", 2),
        ("full_context[max_resamples=1]", 2),
    ]
    _, rows, _ = build_tables(cells, "full_context", with_paper=False)
    labels = sorted(r[0].replace(" [paraphrased]", "") for r in rows)  # [paraphrased] where upstream-src is absent
    assert labels == ["full_context[max_resamples=0] [scripted]", "full_context[max_resamples=1] [scripted]"]

    again = run(cell(0), tmp_path)  # the same config again is the same cell: everything already finished
    assert (again.ok, again.skipped) == (0, 2)
