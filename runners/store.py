"""The results store: `results/<experiment>/<cell>/`.

- `manifest.json`: resolved config (no secrets), package versions, git revision, seeds, notes.
- `episodes.jsonl`: one line per finished (task, trial), on disk (written, flushed, fsynced)
  before the append is acknowledged. Appends go through one writer thread per cell that writes
  every line queued meanwhile and fsyncs once for the batch (group commit), so the event loop
  never waits on the disk and concurrent episodes share fsyncs.
- `errors.jsonl`: episodes that ended in infra/harness errors (retried on resume, never scored).
- `DONE`: completion marker with the final counts.

One writer per cell (an exclusive lock file). A torn last line (killed mid-write) is detected
and cut off on open; unparseable lines elsewhere are set aside in `episodes.corrupt.jsonl`."""
from __future__ import annotations

import asyncio
import fcntl
import json
import os
import platform
import queue
import subprocess
import sys
import threading
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from runners.episode import EpisodeRecord

EPISODES = "episodes.jsonl"
ERRORS = "errors.jsonl"
MANIFEST = "manifest.json"
DONE = "DONE"
PACKAGES = ("hydra-core", "openai", "httpx", "pydantic", "datasets", "pandas", "rank-bm25", "bpe-openai", "alfworld", "textworld", "mem0ai")


class StoreError(RuntimeError):
    pass


def _record(raw: bytes) -> dict[str, Any]:
    """One line as a record: a JSON object with a task_id and a trial; ValueError otherwise."""
    r = json.loads(raw)
    if not (isinstance(r, dict) and isinstance(r.get("task_id"), str) and isinstance(r.get("trial"), int)):
        raise ValueError("not an episode record")
    return r


def read_jsonl(path: Path) -> tuple[list[dict[str, Any]], int]:
    """Parse a JSON-lines file of episode records; returns (records, number of bad lines: not
    JSON, or JSON that is no record). Never raises on content."""
    if not path.exists():
        return [], 0
    good, bad = [], 0
    with open(path, "rb") as f:
        for raw in f:
            try:
                good.append(_record(raw))
            except ValueError:
                bad += 1
    return good, bad


def repair_tail(path: Path) -> bool:
    """Cut an unterminated or unparseable last line (a write killed halfway). True if cut."""
    if not path.exists() or path.stat().st_size == 0:
        return False
    data = path.read_bytes()
    end = len(data)
    if data.endswith(b"\n"):
        last_start = data.rfind(b"\n", 0, end - 1) + 1
        try:
            json.loads(data[last_start:end])
            return False
        except ValueError:
            cut = last_start
    else:
        cut = data.rfind(b"\n") + 1
    with open(path, "r+b") as f:
        f.truncate(cut)
        f.flush()
        os.fsync(f.fileno())
    return True


def git_revision() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True, timeout=5)
        rev = out.stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=Path(__file__).parent, capture_output=True, text=True, timeout=5).stdout.strip()
        return (rev + ("+dirty" if dirty else "")) if rev else None
    except (OSError, subprocess.SubprocessError):
        return None


def versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for p in PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            pass
    return out


class _GroupWriter:
    """One thread that appends lines to files and fsyncs once per batch. `submit(fh, data, done)`
    queues a line; `done(error)` is called from the writer thread after the line is on disk
    (error None) or failed to get there."""

    def __init__(self, name: str) -> None:
        self._q: "queue.Queue[tuple[Any, bytes, Any] | None]" = queue.Queue()
        self._t = threading.Thread(target=self._loop, name=f"store-writer-{name}", daemon=True)
        self._t.start()

    def submit(self, fh: Any, data: bytes, done: Any) -> None:
        self._q.put((fh, data, done))

    def _loop(self) -> None:
        while True:
            item = self._q.get()
            if item is None:
                return
            batch = [item]
            stop = False
            while True:
                try:
                    nxt = self._q.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            files: dict[int, Any] = {}
            errors: dict[int, BaseException] = {}
            for fh, data, _ in batch:
                if id(fh) in errors:
                    continue
                try:
                    fh.write(data)
                    files[id(fh)] = fh
                except BaseException as e:  # disk full, read-only: the caller gets the error
                    errors[id(fh)] = e
            for key, fh in files.items():
                try:
                    fh.flush()
                    os.fsync(fh.fileno())
                except BaseException as e:
                    errors[key] = e
            for fh, _, done in batch:
                try:
                    done(errors.get(id(fh)))
                except RuntimeError:  # the waiting loop is gone (interrupted): the line is written anyway
                    pass
            if stop:
                return

    def close(self) -> None:
        self._q.put(None)
        self._t.join()


class CellStore:
    def __init__(self, root: Path, cell_name: str) -> None:
        self.dir = Path(root) / cell_name
        self.done: set[tuple[str, int]] = set()
        self._lock_fd: int | None = None
        self._fh = None
        self.repaired = False
        self.corrupt = 0

    def open(self, manifest: dict[str, Any]) -> "CellStore":
        self.dir.mkdir(parents=True, exist_ok=True)
        self._lock_fd = os.open(self.dir / ".lock", os.O_CREAT | os.O_RDWR)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StoreError(f"another sweep is writing {self.dir}; wait for it or stop it first") from None
        path = self.dir / EPISODES
        self.repaired = repair_tail(path)
        records, self.corrupt = read_jsonl(path)
        if self.corrupt:
            self._set_aside_corrupt(path)
        self.done = {(r["task_id"], int(r["trial"])) for r in records if r.get("status") == "ok"}
        repair_tail(self.dir / ERRORS)
        self._write_manifest(manifest)
        self._fh = open(path, "ab")
        self._err = open(self.dir / ERRORS, "ab")
        self._writer = _GroupWriter(self.dir.name)
        return self

    def _set_aside_corrupt(self, path: Path) -> None:
        keep, bad = [], []
        for raw in path.read_bytes().splitlines(keepends=True):
            try:
                _record(raw)
                keep.append(raw)
            except ValueError:
                bad.append(raw if raw.endswith(b"\n") else raw + b"\n")
        with open(self.dir / "episodes.corrupt.jsonl", "ab") as f:
            f.writelines(bad)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(b"".join(keep))
        os.replace(tmp, path)

    def _write_manifest(self, manifest: dict[str, Any]) -> None:
        path = self.dir / MANIFEST
        history: list[dict[str, Any]] = []
        if path.exists():
            try:
                history = json.loads(path.read_text()).get("runs", [])
            except ValueError:
                history = []
        run = {"started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "git": git_revision(), "versions": versions(),
               "endpoints": manifest.get("endpoints", {})}  # per run: a base_url_env override may differ between runs
        data = {**manifest, "runs": history + [run]}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str))
        os.replace(tmp, path)
        (self.dir / DONE).unlink(missing_ok=True)

    def _line(self, rec: EpisodeRecord) -> tuple[Any, bytes] | None:
        if rec.status == "ok" and (rec.task_id, rec.trial) in self.done:
            return None  # never duplicate
        return (self._fh if rec.status == "ok" else self._err), rec.model_dump_json().encode() + b"\n"

    def append(self, rec: EpisodeRecord) -> None:
        """Append one record and make it durable (written, fsynced) before returning."""
        line = self._line(rec)
        if line is None:
            return
        finished = threading.Event()
        err: list[BaseException | None] = [None]

        def done(e: BaseException | None) -> None:
            err[0] = e
            finished.set()

        self._writer.submit(*line, done)
        finished.wait()
        if err[0] is not None:
            raise err[0]
        if rec.status == "ok":
            self.done.add((rec.task_id, rec.trial))

    async def append_async(self, rec: EpisodeRecord) -> None:
        """`append` without blocking the event loop: returns once the record is on disk; lines
        of concurrent episodes share one fsync."""
        line = self._line(rec)
        if line is None:
            return
        loop = asyncio.get_running_loop()
        fut: asyncio.Future = loop.create_future()

        def settle(e: BaseException | None) -> None:
            if not fut.done():
                fut.set_exception(e) if e is not None else fut.set_result(None)

        self._writer.submit(*line, lambda e: loop.call_soon_threadsafe(settle, e))
        await fut
        if rec.status == "ok":
            self.done.add((rec.task_id, rec.trial))

    def mark_done(self, counts: dict[str, int]) -> None:
        (self.dir / DONE).write_text(json.dumps({**counts, "at": datetime.now(timezone.utc).isoformat(timespec="seconds")}))

    def close(self) -> None:
        if getattr(self, "_writer", None) is not None:
            self._writer.close()  # every acknowledged line is already on disk; this drains the rest
            self._writer = None
        for fh in (self._fh, getattr(self, "_err", None)):
            if fh:
                fh.close()
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None


def shard_dirs(cell_dir: Path) -> list[Path]:
    """The `shard-<i>-of-<n>/` stores of a cell run with `runner.shard=i/n` (each its own records)."""
    return sorted(d for d in Path(cell_dir).glob("shard-*-of-*") if (d / MANIFEST).exists())


def _merge_shards(cell_dir: Path, manifest: dict[str, Any] | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A sharded cell as one: the shards' records together; n_tasks is the whole benchmark's."""
    records: list[dict[str, Any]] = []
    total = None
    for d in shard_dirs(cell_dir):
        try:
            m = json.loads((d / MANIFEST).read_text())
        except (OSError, ValueError) as e:
            raise StoreError(f"{d / MANIFEST}: unreadable manifest ({e}); re-run that shard to rewrite it") from None
        manifest = manifest or {k: v for k, v in m.items() if k != "shard"}
        total = (m.get("shard") or {}).get("n_tasks_total", total)
        records += read_jsonl(d / EPISODES)[0]
    if manifest is None:
        raise StoreError(f"{cell_dir}: no manifest.json")
    manifest = {**manifest, "shards": [d.name for d in shard_dirs(cell_dir)]}
    if total is not None:
        manifest["n_tasks"] = total
    return manifest, records


def load_cell(cell_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(manifest, finished episode records deduplicated by (task, trial)) for aggregation.
    A cell run in shards (`runner.shard=i/n`) is read as one: every shard's records."""
    mpath = cell_dir / MANIFEST
    if shard_dirs(cell_dir):
        top = None
        if mpath.exists():
            try:
                top = json.loads(mpath.read_text())
            except ValueError:
                top = None
        manifest, records = _merge_shards(cell_dir, top)
        records += read_jsonl(cell_dir / EPISODES)[0]
        return manifest, _dedupe_ok(records)
    try:
        manifest = json.loads(mpath.read_text())
    except (OSError, ValueError) as e:
        raise StoreError(f"{mpath}: unreadable manifest ({e}); re-run the sweep to rewrite it") from None
    records, _ = read_jsonl(cell_dir / EPISODES)
    return manifest, _dedupe_ok(records)


def _dedupe_ok(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen, out = set(), []
    for r in records:
        k = (r.get("task_id"), r.get("trial"))
        if r.get("status") == "ok" and k not in seen:
            seen.add(k)
            out.append(r)
    return out
