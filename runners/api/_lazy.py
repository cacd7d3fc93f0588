"""Tasks loaded lazily: `JsonlTasks`, the tasks of a JSONL file indexed once and parsed one at a
time, so a sweep's memory does not grow with its data set's text (docs/contracts.md, "Tasks
loaded lazily"); `task_ids` and `tasks_by_id`, which read a task list of either kind without
parsing every task."""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

from runners.api._benchmark import TaskSpec


class JsonlTasks(Sequence[TaskSpec]):
    """The tasks of a JSONL file (one JSON object a line, blank lines skipped), for
    `Benchmark.load_tasks`. Made, the file is read once, a line at a time: every row parsed and
    checked as `runners.inputs.read_jsonl` checks it (same errors, same notes for the manifest),
    then `check(row)` (a benchmark's own rule; it raises with its message), and only the row's
    task id, byte offset and length kept. `tasks[i]` reads and parses row `i` again (a `TaskSpec`
    with that row as its payload, nothing cached); iterating reads the file once more, in order.
    So a sweep holds ~100 bytes per task, not the task's text, and parses a task when its episode
    starts. A slice (`tasks[:limit]`, a shard's range) is a `JsonlTasks` over the same file.

    The file must not change while its tasks are in use: every read checks its size and
    modification time against those indexed and raises a ValueError naming the fix if they differ
    (an episode never runs on another row than the one checked and counted)."""

    def __init__(
        self,
        path: str | Path,
        task_id: Callable[[dict[str, Any]], str],
        *,
        required: tuple[str, ...] = (),
        check: Callable[[dict[str, Any]], None] | None = None,
        limit: int | None = None,
    ) -> None:
        from runners.inputs import iter_jsonl

        self.path = Path(path)
        st = self.path.stat()
        self._stamp = (st.st_size, st.st_mtime_ns)
        self._ids: list[str] = []
        self._lines = array("q")  # line number of each row (errors name it)
        self._starts = array("q")  # byte offset of each row
        self._lens = array("q")  # byte length of each row (its newline excluded)
        for n, start, length, row in iter_jsonl(self.path, required=required):
            if check is not None:
                check(row)
            self._ids.append(task_id(row))
            self._lines.append(n)
            self._starts.append(start)
            self._lens.append(length)
        if limit is not None:  # every row checked first, as a loader reading the whole file does
            del self._ids[limit:], self._lines[limit:], self._starts[limit:], self._lens[limit:]

    @property
    def task_ids(self) -> list[str]:
        """The tasks' ids, in order, without reading any row."""
        return list(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    @overload
    def __getitem__(self, i: int) -> TaskSpec: ...

    @overload
    def __getitem__(self, i: slice) -> JsonlTasks: ...

    def __getitem__(self, i: int | slice) -> TaskSpec | JsonlTasks:
        if isinstance(i, slice):
            out = object.__new__(JsonlTasks)
            out.path, out._stamp, out._ids = self.path, self._stamp, self._ids[i]
            out._lines, out._starts, out._lens = self._lines[i], self._starts[i], self._lens[i]
            return out
        if i < 0:
            i += len(self._ids)
        if not 0 <= i < len(self._ids):
            raise IndexError(f"task index {i} out of range ({len(self._ids)} tasks)")
        with open(self.path, "rb") as f:
            self._same(f)
            f.seek(self._starts[i])
            raw = f.read(self._lens[i])
        return self._task(i, raw)

    def __iter__(self) -> Iterator[TaskSpec]:
        with open(self.path, "rb") as f:
            self._same(f)
            for i in range(len(self._ids)):
                f.seek(self._starts[i])
                yield self._task(i, f.read(self._lens[i]))

    def __repr__(self) -> str:
        return f"JsonlTasks({str(self.path)!r}, {len(self)} tasks)"

    def _task(self, i: int, raw: bytes) -> TaskSpec:
        from runners.inputs import parse_row

        row = parse_row(raw, self.path, self._lines[i], noting=False)  # noted when indexed
        return TaskSpec(task_id=self._ids[i], payload=row)

    def _same(self, f: Any) -> None:
        st = os.fstat(f.fileno())
        if (st.st_size, st.st_mtime_ns) != self._stamp:
            raise ValueError(
                f"{self.path} changed after its tasks were loaded (size {self._stamp[0]} → {st.st_size} bytes); "
                "its tasks are read from it as episodes start. Fix: leave the data file as it is while a run "
                "uses it (copy it to change it) and start the run again"
            )


def task_ids(tasks: Sequence[Any]) -> list[str]:
    """The ids of `tasks` in order: a lazy sequence's own (`JsonlTasks.task_ids`: no row parsed),
    else each task's `task_id`."""
    ids = getattr(tasks, "task_ids", None)
    return list(ids) if ids is not None else [t.task_id for t in tasks]


class _ById(Mapping[str, TaskSpec]):
    def __init__(self, tasks: Sequence[TaskSpec]) -> None:
        self._tasks = tasks
        self._at = {tid: i for i, tid in enumerate(task_ids(tasks))}

    def __getitem__(self, key: str) -> TaskSpec:
        return self._tasks[self._at[key]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)


def tasks_by_id(tasks: Sequence[TaskSpec]) -> Mapping[str, TaskSpec]:
    """`tasks` by id; a task is read (a lazy sequence's row parsed) only when looked up."""
    return _ById(tasks)
