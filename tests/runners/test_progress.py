"""One record per cell (`CellReport`): the scheduler counts into it, the live display shows it
(plain lines and the rich table) and the completeness report sums it; its per-call counts agree
with the stored episode records."""

import asyncio
import io
import time

from rich.console import Console

from runners.config import validate
from runners.progress import Progress
from runners.pool import BackbonePool
from runners.prepare import prepare_cell
from runners.run import run_cell
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
    prep.bench.make_env = lambda task, ctx: (
        (_ for _ in ()).throw(RuntimeError("adapter bug")) if task.task_id == bad else make_env(task, ctx)
    )
    progress = Progress("plain")
    report = asyncio.run(run_cell(prep, tmp_path, BackbonePool(None), progress))
    name = prep.cfg.cell_name

    assert progress.cells == [report]  # the display's row is the report itself
    assert (report.total, report.skipped, report.ok, report.infra_error, report.harness_error) == (3, 0, 2, 0, 1)
    recs, _ = read_jsonl(tmp_path / name / "episodes.jsonl")
    assert (
        report.calls == sum(sum(r["calls_by_role"].values()) for r in recs) > 0
    )  # counted per call = the records' count
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
    assert lines[1:3] == [
        "Completeness (1.5s): 2/3 episodes done (0 from earlier runs, 2 now), 0 infra errors, 1 harness errors.",
        f"Model calls: {report.calls} made, 0 served from the response cache.",
    ]
    assert f"  ! {name}: {bad}#0: setting up the episode failed: RuntimeError: adapter bug" in lines
    assert lines[-1] == "Re-run the same command to retry the failed episodes."

    monkeypatch.setenv("COLUMNS", "300")  # wide enough that the cell name is not shortened
    console = Console(file=io.StringIO(), record=True, width=300)
    console.print(progress._render())
    row = next(line for line in console.export_text().splitlines() if name in line)
    assert f"✓ {name}" in row and [c.strip() for c in row.split("│")[2:7]] == [
        "3/3",
        "0+1h",
        str(report.calls),
        "0",
        "0",
    ]


def _cells(progress, backbone="openai_compatible"):
    from runners.progress import CellReport

    for m in ("full_context", "flowstate"):
        for b in ("memoryarena_math", "memoryarena_phys", "tau_airline"):
            c = CellReport(
                cell=f"{m}__{backbone}__{b}__00d7e1234a",
                total=30,
                skipped=3,
                ok=12,
                calls=1234,
                tokens=1234567,
                retries=5,
            )
            progress.start_cell(c)
    progress.expect_cells(6)


def test_the_live_table_fits_an_80_column_terminal():
    progress = Progress("none")
    _cells(progress)
    console = Console(file=io.StringIO(), record=True, width=80)
    console.print(progress._render(width=80))
    lines = console.export_text().splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80
    header = next(line for line in lines if "cell" in line and "calls" in line)
    assert "…" not in header and header.split() == ["cell", "episodes", "err", "calls", "tokens", "time"]
    rows = [line for line in lines if "·" in line and "cells" not in line]
    labels = [r.split()[0] for r in rows]
    assert labels == [
        "full_context·memoryarena_math",
        "full_context·memoryarena_phys",
        "full_context·tau_airline",
        "flowstate·memoryarena_math",
        "flowstate·memoryarena_phys",
        "flowstate·tau_airline",
    ]  # whole, short, distinct
    assert all("12/27" in r and "1.23M" in r for r in rows)
    title = next(line for line in lines if "cells 0/6 done" in line)
    assert "30 retries" in title  # the columns left out move to the title


def test_short_labels_keep_only_what_differs():
    from runners.progress import short_labels

    a, b = "bm25__scripted__memoryarena_math__aaaaaaaaaa", "bm25__scripted__memoryarena_math__bbbbbbbbbb"
    assert short_labels([a, b]) == {
        a: "bm25 #aaaaaa",
        b: "bm25 #bbbbbb",
    }  # same names, other config: the hash tells them apart
    c = "bm25__gpt_4o__memoryarena_math__cccccccccc"
    assert short_labels([a, c]) == {a: "bm25·scripted", c: "bm25·gpt_4o"}
    assert short_labels([a + " [shard 0/2]"]) == {a + " [shard 0/2]": "bm25 [shard 0/2]"}


def test_plain_mode_prints_a_heartbeat_at_a_steady_interval(capsys):
    """At least 3 beats, never more than the interval allows in the time it took (a loaded
    machine delays a beat, it never bunches them), none after the display closed."""
    beats: list[str] = []

    def read() -> None:
        beats.extend(line for line in capsys.readouterr().out.splitlines() if " alive: " in line)

    async def main() -> float:
        t0 = time.monotonic()
        with Progress("plain", heartbeat_s=0.05) as progress:
            _cells(progress)
            progress.in_flight, progress.calls_in_flight = 3, 2
            while len(beats) < 3 and time.monotonic() - t0 < 10:
                await asyncio.sleep(0.05)
                read()
        elapsed = time.monotonic() - t0
        read()
        closed = len(beats)
        await asyncio.sleep(0.15)  # after the display closed: no more heartbeats
        read()
        assert len(beats) == closed, beats[closed:]
        return elapsed

    elapsed = asyncio.run(main())
    assert 3 <= len(beats) <= elapsed / 0.05 + 1, (len(beats), elapsed)
    assert (
        "2 calls in flight (3 episodes), 72/162 episodes done, cells 0/6, 7404 calls, 30 retries, 7.41M tokens"
        in beats[-1]
        and "ETA " in beats[-1]
    )


def test_a_plain_sweep_beats_before_its_first_episode_ends(tmp_path):
    from tests.runners.sweep_helpers import run_sweep

    p = run_sweep(
        tmp_path,
        "runner.limit=1",
        "method=full_context",
        "benchmark=memoryarena_math",
        "runner.heartbeat_s=0.2",
        "backbone.scripted.latency_s=0.15",
        "runner.concurrency=1",
    )
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    first_done = next(i for i, line in enumerate(lines) if "1/1 episodes" in line)
    assert any(" alive: 1 calls in flight (1 episodes), 0/1 episodes done" in line for line in lines[:first_done])


def test_count_call_adds_what_the_general_formula_adds():
    """`CellReport.count_call`'s shortcut for the usual call (a `Usage` of a method role) adds the
    same as `method_tokens` and the other counters' general rules, for every role, cached or not,
    with retries and hygiene notes, a usage given as a dict; a role outside `Role` still raises."""
    import itertools
    from types import SimpleNamespace

    import pytest

    from runners.api import Usage, method_tokens
    from runners.progress import CellReport
    from runners.records.schema import CallLog, RetryEvent

    def former(rep, log, usd):  # the rules as written before the shortcut
        rep.calls += 1
        rep.cache_hits += int(bool(getattr(log, "cached", False)))
        rep.tokens += method_tokens({log.role: log.usage})
        rep.retries += len(getattr(log, "retries", ()) or ())
        rep.usd += usd
        hygiene = getattr(log, "hygiene", None) or ()
        rep.usage_estimated += int(any(h.startswith("usage:") for h in hygiene))
        rep.redacted += int(any(h.startswith("redacted:") for h in hygiene))

    roles = ("agent", "tool", "state", "memory", "sentinel", "user_sim", "judge")
    usages = (Usage(prompt_tokens=900, completion_tokens=9, reasoning_tokens=3), Usage(source="estimated"))
    hygienes = ([], ["usage: garbage; tokens estimated"], ["redacted: 1", "sanitized: 2"])
    retries = ([], [RetryEvent(attempt=0, error="HTTP 500", wait_s=0.1)] * 2)
    logs = [
        CallLog(role=r, model="m", usage=u, cached=c, hygiene=h, retries=x)
        for r, u, c, h, x in itertools.product(roles, usages, (False, True), hygienes, retries)
    ]
    logs += [SimpleNamespace(role="agent", usage={"prompt_tokens": 5, "completion_tokens": 2})]  # a dict usage
    logs += [SimpleNamespace(role="judge", usage=7, retries=None, hygiene=None, cached=1)]
    got = CellReport(cell="c")
    want = CellReport(cell="c", started=got.started)
    for i, log in enumerate(logs):
        got.count_call(log, 0.25 * i)
        former(want, log, 0.25 * i)
        assert got == want, log
    with pytest.raises(ValueError, match="unknown call role"):
        got.count_call(SimpleNamespace(role="planner", usage=usages[0]), 0.0)
