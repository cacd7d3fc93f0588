"""One record per cell (`CellReport`): the scheduler counts into it, the live display shows it
(plain lines and the rich table) and the completeness report sums it; its per-call counts agree
with the stored episode records."""
import asyncio
import io

from rich.console import Console

from runners.config import validate
from runners.progress import Progress
from runners.run import BackbonePool, prepare_cell, run_cell
from runners.records.store import read_jsonl
from runners.sweep import print_report
from tests.runners.test_config import base


def test_one_record_feeds_the_display_and_the_completeness_report(tmp_path, capsys, monkeypatch):
    raw = base()
    raw["benchmark"]["params"]["data_dir"] = "fixtures"
    raw["runner"].update(limit=3, concurrency=1)
    prep = prepare_cell(validate(raw))
    bad = prep.tasks[0].task_id
    make_env = prep.bench.make_env
    prep.bench.make_env = lambda task, ctx: (_ for _ in ()).throw(RuntimeError("adapter bug")) if task.task_id == bad else make_env(task, ctx)
    progress = Progress("plain")
    report = asyncio.run(run_cell(prep, tmp_path, BackbonePool(None), progress))
    name = prep.cfg.cell_name

    assert progress.cells == [report]  # the display's row is the report itself
    assert (report.total, report.skipped, report.ok, report.infra_error, report.harness_error) == (3, 0, 2, 0, 1)
    recs, _ = read_jsonl(tmp_path / name / "episodes.jsonl")
    assert report.calls == sum(sum(r["calls_by_role"].values()) for r in recs) > 0  # counted per call = the records' count
    assert report.cache_hits == sum(r["cache_hits"] for r in recs) == 0 and report.tokens > 0
    assert report.errors == [f"{bad}#0: setting up the episode failed: RuntimeError: adapter bug"]
    assert report.finished is not None

    plain = capsys.readouterr().out.splitlines()
    assert plain[0] == f"[cell] {name}: 3 episodes, 0 already finished, 3 to run"
    assert f"  {name}: 1/3 episodes (harness_error {bad}), 0 calls, 0 tokens, 0 retries" in plain[1]
    assert plain[-1].startswith(f"[cell done 1/1] {name}: 3/3 run in ")

    out = io.StringIO()
    print_report([report], 1.5, out=out)
    lines = out.getvalue().splitlines()
    assert lines[1:3] == ["Completeness (1.5s): 2/3 episodes done (0 from earlier runs, 2 now), 0 infra errors, 1 harness errors.",
                          f"Model calls: {report.calls} made, 0 served from the response cache."]
    assert f"  ! {name}: {bad}#0: setting up the episode failed: RuntimeError: adapter bug" in lines
    assert lines[-1] == "Re-run the same command to retry the failed episodes."

    monkeypatch.setenv("COLUMNS", "300")  # wide enough that the cell name is not shortened
    console = Console(file=io.StringIO(), record=True, width=300)
    console.print(progress._render())
    row = next(line for line in console.export_text().splitlines() if name in line)
    assert f"✓ {name}" in row and [c.strip() for c in row.split("│")[2:7]] == ["3/3", "0+1h", str(report.calls), "0", "0"]
