"""Tasks loaded lazily (`runners.api.JsonlTasks`): a JSONL file indexed once, each task parsed when
it is taken; a sweep on it leaves the same records as on the same tasks loaded whole, and bad data
still fails before any work with the loader's message."""

from __future__ import annotations

import json
from array import array
from pathlib import Path

import pytest

from benchmarks.memoryarena.formal import FormalReasoning
from benchmarks.memoryarena.loader import DataError
from runners.api import JsonlTasks, TaskSpec, task_ids, tasks_by_id
from runners.inputs import InputError, read_jsonl
from tests.runners.sweep_helpers import metrics_csv, records_under, run_sweep

FIXTURE = Path(__file__).resolve().parents[2] / "benchmarks/memoryarena/fixtures/formal_reasoning_math/data.jsonl"


class EagerFormal(FormalReasoning):
    """The same benchmark returning a plain list (as every benchmark did before, and a third-party one may)."""

    def load_tasks(self) -> list[TaskSpec]:  # type: ignore[override]
        return list(super().load_tasks())


def data_dir(tmp_path: Path, n: int = 5, bad: str | None = None, at: int = 3) -> Path:
    """A `formal_reasoning_math/data.jsonl` of `n` distinct tasks (the fixture's rows under new ids),
    a blank line among them, and `bad` as line `at` when given."""
    rows = [json.loads(x) for x in FIXTURE.read_text().splitlines() if x.strip()]
    lines = [json.dumps({**rows[i % len(rows)], "id": 100 + i}) for i in range(n)]
    lines.insert(2, "")
    if bad is not None:
        lines.insert(at - 1, bad)
    d = tmp_path / "data"
    (d / "formal_reasoning_math").mkdir(parents=True)
    (d / "formal_reasoning_math" / "data.jsonl").write_text("\n".join(lines) + "\n")
    return d


def bench(d: Path, **kw) -> FormalReasoning:
    return FormalReasoning(name="memoryarena_math", config="formal_reasoning_math", data_dir=str(d), **kw)


def test_lazy_tasks_are_the_rows_and_hold_no_payload(tmp_path):
    d = data_dir(tmp_path, n=5)
    path = d / "formal_reasoning_math" / "data.jsonl"
    tasks = bench(d).load_tasks()
    assert isinstance(tasks, JsonlTasks)
    rows = read_jsonl(path)
    assert [t.payload for t in tasks] == rows  # iterating
    assert [tasks[i].payload for i in range(len(tasks))] == rows  # indexing, row by row
    assert tasks[-1].task_id == "formal_reasoning_math-104" and tasks[-1].payload == rows[-1]
    assert task_ids(tasks) == [f"formal_reasoning_math-{100 + i}" for i in range(5)]
    # indexed, it keeps ids and offsets only: no row, no payload, no file handle
    for name, value in vars(tasks).items():
        assert isinstance(value, (str, Path, tuple, array)) or (
            isinstance(value, list) and all(isinstance(x, str) for x in value)
        ), (name, type(value))
    assert tasks[2] is not tasks[2]  # nothing cached: each take parses its row again
    with pytest.raises(IndexError):
        tasks[5]
    part = tasks[1:3]  # a shard's range, and runner.limit
    assert isinstance(part, JsonlTasks) and [t.payload for t in part] == rows[1:3]
    assert [t.payload for t in bench(d, limit=2).load_tasks()] == rows[:2]
    assert tasks_by_id(tasks)["formal_reasoning_math-103"].payload == rows[3]


def test_a_changed_file_is_refused_when_a_task_is_read(tmp_path):
    d = data_dir(tmp_path, n=3)
    tasks = bench(d).load_tasks()
    path = d / "formal_reasoning_math" / "data.jsonl"
    path.write_text(path.read_text().replace('"id": 101', '"id": 9101'))
    with pytest.raises(ValueError, match="changed after its tasks were loaded.*Fix: leave the data file"):
        tasks[0]


@pytest.mark.parametrize(
    "bad, expect",
    [
        ('{"id": 7, "backgrounds": [""], "questions": ["q"', "not valid JSON"),
        ('{"id": 7, "questions": ["q"], "answers": ["a"]}', "row has no field 'backgrounds'"),
        ('{"id": 7, "backgrounds": ["", ""], "questions": ["q"], "answers": ["a"]}', "unaligned"),
    ],
)
def test_bad_rows_fail_at_load_with_the_eager_loaders_message(tmp_path, bad, expect):
    d = data_dir(tmp_path, n=5, bad=bad, at=4)
    path = d / "formal_reasoning_math" / "data.jsonl"
    with pytest.raises((DataError, ValueError), match=expect) as lazy:  # the loader's own types, as before
        bench(d).load_tasks()
    if "unaligned" not in expect:  # the shared reader's text, file and line, as read_jsonl gives it
        with pytest.raises(InputError) as eager:
            read_jsonl(path, required=("id", "backgrounds", "questions", "answers"))
        assert str(lazy.value) == str(eager.value) and f"{path}:4:" in str(lazy.value)


def _episodes(root: Path) -> list[tuple]:
    return sorted(
        (r["task_id"], r["trial"], r["status"], json.dumps(r["scores"], sort_keys=True)) for r in records_under(root)
    )


def test_a_sweep_on_lazy_tasks_leaves_what_loading_them_whole_leaves(tmp_path):
    d = data_dir(tmp_path, n=5)
    common = ("method=full_context", "benchmark=memoryarena_math", f"benchmark.params.data_dir={d}")
    common += ("runner.trials=2", "runner.limit=4", "runner.concurrency=3")
    lazy = run_sweep(tmp_path / "lazy", *common)
    assert lazy.returncode == 0, lazy.stderr[-2000:]
    eager = run_sweep(tmp_path / "eager", *common, f"benchmark._target_={EagerFormal.__module__}.EagerFormal")
    assert eager.returncode == 0, eager.stderr[-2000:]
    eager_manifest = next((tmp_path / "eager").glob("*/*/manifest.json")).read_text()
    assert "EagerFormal" in eager_manifest  # the list-returning class ran there
    got, want = _episodes(tmp_path / "lazy"), _episodes(tmp_path / "eager")
    assert len(got) == 8 and all(e[2] == "ok" for e in got)
    assert [e[:2] for e in got] == [(f"formal_reasoning_math-{100 + i}", k) for i in range(4) for k in range(2)]
    assert got == want
    csv = lambda root: metrics_csv(next(root.glob("*/tables/metrics.csv")))  # noqa: E731
    assert csv(tmp_path / "lazy") == csv(tmp_path / "eager") and csv(tmp_path / "lazy")
    manifest = json.loads(next((tmp_path / "lazy").glob("*/*/manifest.json")).read_text())
    assert manifest["task_ids"] == [f"formal_reasoning_math-{100 + i}" for i in range(4)]
    # a shard reads its own range of the file (runner.shard, as each of runner.processes' workers)
    shard = run_sweep(tmp_path / "shard", *common, "runner.shard=1/2")
    assert shard.returncode == 0, shard.stderr[-2000:]
    assert _episodes(tmp_path / "shard") == [
        e for e in want if e[0] in ("formal_reasoning_math-102", "formal_reasoning_math-103")
    ]


def test_a_bad_row_fails_the_sweep_before_any_work(tmp_path):
    d = data_dir(tmp_path, n=5, bad='{"id": 7, "questions": ["q"], "answers": ["a"]}', at=6)
    p = run_sweep(
        tmp_path / "out", "method=full_context", "benchmark=memoryarena_math", f"benchmark.params.data_dir={d}"
    )
    assert p.returncode != 0
    assert f"{d / 'formal_reasoning_math' / 'data.jsonl'}:6: row has no field 'backgrounds'" in p.stderr
    assert not records_under(tmp_path / "out") and not any((tmp_path / "out").rglob("manifest.json"))


def test_a_benchmark_returning_a_list_still_runs_and_its_ids_are_read_from_the_tasks():
    tasks = [TaskSpec(task_id="a"), TaskSpec(task_id="b")]
    assert task_ids(tasks) == ["a", "b"] and tasks_by_id(tasks)["b"] is tasks[1]


def test_duplicate_ids_in_a_lazily_read_file_fail_before_any_work(tmp_path):
    d = data_dir(tmp_path, n=4, bad=json.dumps({"id": 101, "backgrounds": [""], "questions": ["q"], "answers": ["a"]}))
    p = run_sweep(
        tmp_path / "out", "method=full_context", "benchmark=memoryarena_math", f"benchmark.params.data_dir={d}"
    )
    assert p.returncode != 0 and "duplicate task ids ['formal_reasoning_math-101']" in p.stderr, p.stderr[-2000:]
    assert not records_under(tmp_path / "out")


class EditsItsData(FormalReasoning):
    """Appends a line to its own data file when its first episode starts (a file changed under a run)."""

    def make_env(self, task, ctx):
        path = Path(self.data_dir) / self.config / "data.jsonl"
        if not (path.parent / "edited").exists():
            (path.parent / "edited").touch()
            with open(path, "a") as f:
                f.write("\n")
        return super().make_env(task, ctx)


def test_a_data_file_changed_under_the_run_stops_it_with_the_fix(tmp_path):
    d = data_dir(tmp_path, n=4)
    p = run_sweep(
        tmp_path / "out",
        "method=full_context",
        "benchmark=memoryarena_math",
        f"benchmark.params.data_dir={d}",
        f"benchmark._target_={EditsItsData.__module__}.EditsItsData",
        "runner.concurrency=1",
    )
    assert p.returncode != 0
    assert "changed after its tasks were loaded" in p.stderr and "Fix: leave the data file" in p.stderr, p.stderr[
        -2000:
    ]
    done = _episodes(tmp_path / "out")  # the episode that ran before is kept; no other task ran
    assert [e[0] for e in done] == ["formal_reasoning_math-100"] and done[0][2] == "ok"
