"""The results store: `results/<experiment>/<cell>/`.

- `manifest.json`: resolved config (no secrets), package versions, git revision, seeds, notes.
- `episodes.jsonl`: one line per finished (task, trial), on disk (written, flushed, fsynced)
  before the append is acknowledged. Appends go through one writer thread per cell that writes
  every line queued meanwhile and fsyncs once for the batch (group commit), so the event loop
  never waits on the disk and concurrent episodes share fsyncs.
- `errors.jsonl`: episodes that ended in infra/harness errors (retried on resume, never scored).
- `DONE`: completion marker with the final counts. A finished cell's records are then compacted
  to `episodes.jsonl.xz` (xz of the same lines, written atomically before the plain file goes;
  `xzcat episodes.jsonl.xz | jq` reads it): the lines repeat their texts (a request quoted in a
  tool call, a tool result in the next memory) and their structure from episode to episode, which
  xz's 1 MiB window finds (~7.5× smaller at preset 1, the default, ~9× at 6; gzip's 32 KiB window
  sees about one record: ~6×). The lines are compressed while the cell runs (`compact_as_written`:
  a thread fed by the writer), so
  finishing only ends the stream; the plain file stays the records until the compressed one is
  whole. `episodes.index.json` (written with `DONE`) lets a resume with nothing to run skip the
  records (`open(expect=...)`, `idle`). Opening the cell again with work to do (a resume)
  restores the plain file first; readers (`read_jsonl`) read either,
  and a line present in both (a compaction or restore cut short) once. A damaged compressed file
  is kept aside (`episodes.damaged-<time>.jsonl.xz`), its lines before the damage kept, the rest
  re-run.

One writer per cell (an exclusive lock file). A torn last line (killed mid-write) is detected
and cut off on open; unparseable lines elsewhere are set aside in `episodes.corrupt.jsonl`.
Manifests, `DONE` and tables are written atomically (`atomic_write`: temp file, fsync, rename),
so a crash or a full disk leaves the previous version whole. A manifest that cannot be parsed
is kept as `manifest.damaged-<time>.json` and replaced loudly (`CellStore.warnings`), never
silently reset. Every episode carries the code fingerprint (`code_fingerprint`);
`open(fresh=True)` moves a cell's old results to `<experiment>/.superseded/<cell>/<time>/`."""

from __future__ import annotations

import asyncio
import fcntl
import gc
import hashlib
import json
import lzma
import os
import platform
import queue
import shutil
import subprocess
import sys
import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator, Literal

import orjson
from pydantic import BaseModel, Field, ValidationError

from runners.api import Usage
from runners.records.schema import EpisodeRecord

EPISODES = "episodes.jsonl"
COMPACTED = ".xz"  # suffix of a finished cell's compacted records: episodes.jsonl.xz
# xz's preset 1 with a 1 MiB window (preset 1's own): dozens of records in view. On 12-call
# episodes of 33 KB (scripts/perf/README.md, "Harness CPU per call") preset 1 costs ~0.8 ms of CPU
# per episode for files 7.5x smaller than the plain records; preset 6 (the former default) ~4 ms
# for 8.9x: in a running cell that was 0.3-0.5 ms of the harness's CPU per model call for ~16%
# smaller records. `runner.compact_level` chooses another preset.
XZ_LEVEL = 1
XZ_FILTERS = [{"id": lzma.FILTER_LZMA2, "preset": XZ_LEVEL, "dict_size": 1 << 20}]


def xz_filters(level: int = XZ_LEVEL) -> list[dict[str, Any]]:
    """`XZ_FILTERS` at another preset (`runner.compact_level`); the 1 MiB window stays."""
    return [{**XZ_FILTERS[0], "preset": level}]


ERRORS = "errors.jsonl"
MANIFEST = "manifest.json"
DONE = "DONE"
INDEX = "episodes.index.json"  # a finished cell's (task, trial) keys and codes, for a resume with nothing to run
SUPERSEDED = ".superseded"
# The project's packages: an uncommitted edit in any of them changes the code fingerprint.
CODE_PACKAGES = ("runners", "kit", "baselines", "flowstate", "pos", "benchmarks", "conf")
PACKAGES = (
    "hydra-core",
    "openai",
    "httpx",
    "pydantic",
    "datasets",
    "pandas",
    "rank-bm25",
    "bpe-openai",
    "alfworld",
    "textworld",
    "mem0ai",
)


def take_batch(q: "queue.Queue", first: Any, limit: int | None = None) -> tuple[list[Any], bool]:
    """`first` plus whatever else `q` holds now (at most `limit` items in all), for one batched
    write; `stop` is True when the writer's shutdown sentinel (None) was among them."""
    batch = [first]
    while limit is None or len(batch) < limit:
        try:
            nxt = q.get_nowait()
        except queue.Empty:
            break
        if nxt is None:
            return batch, True
        batch.append(nxt)
    return batch, False


def text_fingerprint(manifest: dict[str, Any]) -> dict[str, str]:
    """The model-facing texts a cell runs on, from the `text_sources` its benchmark and method
    record in the manifest: '<benchmark|method>:<text key>' → '<source>:<sha256 of the text>'
    (source: upstream, paraphrase or project). Every episode record carries it (`texts`)."""
    out: dict[str, str] = {}
    for part in ("benchmark_notes", "method_notes"):
        prompts = ((manifest.get(part) or {}).get("text_sources") or {}).get("prompts") or {}
        for key, v in prompts.items():
            if isinstance(v, dict):
                out[f"{part.split('_')[0]}:{key}"] = (
                    f"{v.get('source', '?')}:{v.get('text_sha256') or v.get('sha256') or ''}"
                )
    return dict(sorted(out.items()))


def text_differences(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """Readable differences between two text fingerprints (at most 6, then a count)."""
    keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    lines = [
        f"{k}: {old.get(k, 'absent').split(':')[0]} → {new.get(k, 'absent').split(':')[0]}"
        + (" (other text)" if old.get(k, ":").split(":")[0] == new.get(k, ":").split(":")[0] else "")
        for k in keys[:6]
    ]
    return lines + ([f"… {len(keys) - 6} more"] if len(keys) > 6 else [])


def text_mismatch(cell: str, records: list[dict[str, Any]], current: dict[str, str]) -> str | None:
    """Why the finished episodes of a cell cannot be resumed with `current` texts (None: they can).
    Records without a fingerprint (written before fingerprints existed) are not compared."""
    other = [r for r in records if r.get("status") == "ok" and r.get("texts") is not None and r["texts"] != current]
    if not other:
        return None
    diff = "; ".join(text_differences(other[0]["texts"], current))
    return (
        f"error: cell {cell}: {len(other)} finished episode(s) ran on other model-facing texts than this run "
        "would send "
        f"({diff}). Resuming would mix text sources in one cell. Fix: add runner.fresh=true to re-run the cell from "
        "scratch (earlier results are moved aside, not deleted), or restore the former text source (the same "
        "HARNESS_UPSTREAM_DIR / HARNESS_UPSTREAM_OFFLINE / download cache as the earlier run) and resume."
    )


def data_fingerprint(benchmark_notes: Any) -> dict[str, str]:
    """The data files a cell runs on, as its benchmark's notes record them: every `sha256` outside
    the notes' `text_sources` (a file's `{path, sha256}`, or a `{file: sha256}` map), keyed by the
    file's path when the notes give it, else by where the hash sits in the notes."""
    out: dict[str, str] = {}

    def walk(v: Any, where: str) -> None:
        if isinstance(v, dict):
            h = v.get("sha256")
            if isinstance(h, str):
                out[str(v.get("path") or where or "data")] = h
            elif isinstance(h, dict):
                out.update({f"{where}/{k}" if where else str(k): str(x) for k, x in h.items()})
            for k, x in v.items():
                if k not in ("sha256", "text_sources"):
                    walk(x, f"{where}.{k}" if where else str(k))
        elif isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, f"{where}[{i}]")

    walk(benchmark_notes, "")
    return dict(sorted(out.items()))


def data_mismatch(cell: str, store_dirs: list[Path], current: dict[str, str]) -> str | None:
    """Why a cell's finished episodes cannot be resumed on the data this run reads (None: they
    can): a data file whose sha256 differs from the one the stores' manifests recorded when those
    episodes ran. Stores without a manifest or without recorded hashes are not compared."""
    for d in store_dirs:
        try:
            before = data_fingerprint((json.loads((d / MANIFEST).read_bytes()) or {}).get("benchmark_notes"))
        except (OSError, ValueError, AttributeError):
            continue
        changed = [k for k in sorted(before) if k in current and before[k] != current[k]]
        gone = [k for k in sorted(before) if k not in current and current]
        if not (changed or gone):
            continue
        what = "; ".join(
            [f"{k}: sha256 {before[k][:12]}… then, {current[k][:12]}… now" for k in changed[:4]]
            + [f"{k}: read then, not now" for k in gone[:2]]
        )
        return (
            f"cell {cell}: its finished episodes ran on other data than this run would read ({what}): the file was "
            "edited or replaced since. Resuming would mix two versions of the data in one cell. Fix: restore the "
            "former file and resume; or add runner.fresh=true to re-run the cell on the new data (earlier results are "
            "moved aside, not deleted); or write this run to a new experiment folder (experiment.name=... or "
            "runner.output_dir=...)."
        )
    return None


class TextSourceMismatch(RuntimeError):
    """A resume whose texts differ from the cell's finished episodes (see `text_mismatch`)."""


class StoreError(RuntimeError):
    pass


def _record(raw: bytes) -> dict[str, Any]:
    """One line as a record: a JSON object with a task_id and a trial; ValueError otherwise."""
    try:
        r = orjson.loads(raw)  # ~3x the standard library's speed on records
    except orjson.JSONDecodeError:  # what orjson refuses and json reads (NaN, lone surrogates, ints beyond 64 bits)
        r = json.loads(raw)
    if not (isinstance(r, dict) and isinstance(r.get("task_id"), str) and isinstance(r.get("trial"), int)):
        raise ValueError("not an episode record")
    return r


def compacted(path: Path) -> Path:
    """Where a finished cell keeps `path` compacted (`episodes.jsonl` → `episodes.jsonl.xz`)."""
    return path.with_name(path.name + COMPACTED)


def uncompact(cell_dir: Path, warnings: list[str] | None = None) -> Path:
    """A finished cell's records back in the plain `episodes.jsonl` (what `unxz` does), merged with
    a plain file that a compaction cut short left; returns the plain file's path. Opening the cell
    (a resume) does this by itself; tools and tests that edit lines by hand call it. A damaged
    compressed file is kept aside as `episodes.damaged-<time>.jsonl.xz` (never deleted), the lines
    before the damage are kept and the episodes after it run again (noted in `warnings`)."""
    cell_dir = Path(cell_dir)
    path = cell_dir / EPISODES
    if not compacted(path).exists():
        return path
    repair_tail(path)
    damage: list[str] = []
    atomic_write(path, record_lines(path, damage))
    if damage:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        kept = cell_dir / f"episodes.damaged-{stamp}.jsonl.xz"
        compacted(path).rename(kept)
        if warnings is not None:
            warnings.append(
                f"{compacted(path)} was damaged ({damage[0]}); the records before the damage are kept, the "
                f"episodes after it run again; the damaged file is kept as {kept.name}"
            )
    else:
        compacted(path).unlink()
    fsync_dir(cell_dir)
    return path


def _digest(line: bytes) -> bytes:
    return hashlib.blake2b(line.rstrip(b"\n"), digest_size=16).digest()


def record_lines(path: Path, damage: list[str] | None = None) -> Iterator[bytes]:
    """The lines of `path` and of its compacted copy (`compacted(path)`): the compacted lines
    first, then the plain file's lines that are not among them (both exist only when a compaction
    or a restore was cut short, or a line was added by hand). The plain file is opened first, so
    a compaction running meanwhile (compacted copy written, then the plain file removed) is never
    missed. A damaged compacted copy yields its whole lines up to the damage; what went wrong is
    appended to `damage`."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        f = None
    try:
        if f is not None and not compacted(path).exists():
            yield from f  # the usual case: a live cell
            return
        live = f.readlines() if f is not None else []
    finally:
        if f is not None:
            f.close()
    seen: set[bytes] = set()
    try:
        with lzma.open(compacted(path), "rb") as z:
            cut = b""
            for line in z:
                if not line.endswith(b"\n"):  # only a last line can lack it
                    cut = line
                    continue
                if live:
                    seen.add(_digest(line))
                yield line
            if cut:
                yield cut + b"\n"  # the stream ended cleanly: a whole line
    except FileNotFoundError:
        pass
    except (OSError, EOFError, lzma.LZMAError) as e:  # truncated or overwritten: the lines before the damage stand
        if damage is not None:
            damage.append(f"{type(e).__name__}: {e}")
    for line in live:
        if _digest(line) not in seen:
            yield line


@contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector off while a block builds many objects that all stay alive
    (parsed records): otherwise each of its passes walks every record parsed so far, 90% of the
    time of reading 10,000 records. Records hold no reference cycles; it is back on after."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@contextmanager
def short_process_gc() -> Iterator[None]:
    """For the whole of a short command-line process whose parsed records stay alive to its end
    (`python -m runners.aggregate`, `runners.view`): the collector off throughout, and every object
    left frozen at the end (`gc.freeze`), so that neither the collector re-enabled after
    `paused_gc` nor the interpreter's own collections at exit walk the records (each pass over
    10,000 parsed records is ~0.8 s of CPU; exit runs several). Objects are still freed by their
    reference counts; only cycles would be kept, and the process is ending."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was:
            gc.enable()


def read_jsonl(path: Path) -> tuple[list[dict[str, Any]], int]:
    """Parse a JSON-lines file of episode records (or its compacted copy, `record_lines`); returns
    (records, number of bad lines: not JSON, or JSON that is no record; a damaged compacted copy
    counts one). Never raises on content."""
    good, bad = [], 0
    damage: list[str] = []
    with paused_gc():
        for raw in record_lines(path, damage):
            try:
                good.append(_record(raw))
            except ValueError:
                bad += 1
    return good, bad + len(damage)


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


def atomic_write(path: Path, data: bytes | str | Iterable[bytes], *, xz: bool = False, level: int = XZ_LEVEL) -> None:
    """Write `path` so that readers see the old or the new content, never a part: a temp file
    in the same directory, flushed and fsynced, renamed over `path`, then the directory fsynced.
    On any failure (a full disk) the temp file is removed and the old file is untouched.
    `data` may be an iterable of byte chunks (written as they come); `xz` compresses them
    (`xz_filters(level)`)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp.{os.getpid()}")
    chunks = [data.encode() if isinstance(data, str) else data] if isinstance(data, (str, bytes)) else data
    try:
        with open(tmp, "wb") as f:
            out = lzma.LZMAFile(f, "wb", format=lzma.FORMAT_XZ, filters=xz_filters(level)) if xz else f
            for chunk in chunks:
                out.write(chunk)
            if xz:
                out.close()
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:  # some filesystems refuse fsync on a directory; the rename itself is done
        pass


_FINGERPRINTS: dict[str, str] = {}
# The sweep this process runs (id, command-line overrides), recorded in each run of a manifest so
# that `runners.aggregate` can say which sweeps an experiment's cells came from (set by runners.sweep).
SWEEP: dict[str, Any] = {}


def code_fingerprint(root: Path | None = None, fresh: bool = False) -> str:
    """The code that produced an episode: `<git revision[:12]>` when the project's packages have
    no uncommitted change, else `<revision>+<sha256[:8] of the diff and untracked files>`. Outside
    a git checkout (an installed copy): `src:<sha256[:12] of the packages' files>`. Cached per
    process (`fresh=True` recomputes)."""
    root = Path(root) if root is not None else Path(__file__).resolve().parents[2]
    key = str(root)
    if not fresh and key in _FINGERPRINTS:
        return _FINGERPRINTS[key]
    pkgs = [p for p in CODE_PACKAGES if (root / p).exists()]

    def git(*args: str) -> bytes:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, timeout=20, check=True).stdout

    try:
        rev = git("rev-parse", "HEAD").decode().strip()[:12]
        h = hashlib.sha256(git("diff", "HEAD", "--binary", "--", *pkgs))
        for name in sorted(git("ls-files", "--others", "--exclude-standard", "-z", "--", *pkgs).split(b"\0")):
            if name and (root / name.decode()).is_file():
                h.update(name + b"\0" + (root / name.decode()).read_bytes())
        changed = h.hexdigest() != hashlib.sha256(b"").hexdigest()
        fp = f"{rev}+{h.hexdigest()[:8]}" if changed else rev
    except (OSError, subprocess.SubprocessError, UnicodeDecodeError):
        h = hashlib.sha256()
        for pkg in pkgs:
            for f in sorted((root / pkg).rglob("*")):
                if f.is_file() and f.suffix in (".py", ".yaml", ".json") and "__pycache__" not in f.parts:
                    h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes())
        fp = "src:" + h.hexdigest()[:12]
    _FINGERPRINTS[key] = fp
    return fp


def git_revision() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True, timeout=5
        )
        rev = out.stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain"], cwd=Path(__file__).parent, capture_output=True, text=True, timeout=5
        ).stdout.strip()
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

    def __init__(self, name: str, on_written: Any = None) -> None:
        self._on_written = on_written  # (fh, data) for each line on disk, in the order written
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
            batch, stop = take_batch(self._q, item)
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
            if self._on_written is not None:
                for fh, data, _ in batch:
                    if id(fh) not in errors:
                        self._on_written(fh, data)
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


class _StreamingXZ:
    """A cell's records compressed while the cell runs, so that finishing it only ends the
    stream: one thread (lzma releases the GIL, so it runs beside the event loop) compresses the
    plain file's first `start` bytes, then every line as the writer puts it on disk, into a
    hidden part file. `finish` completes the stream as `episodes.jsonl.xz` (synced, renamed) only
    when it holds exactly the plain file's bytes; the plain file stays the cell's records until
    then (a kill leaves it whole; the part file is removed on the next open)."""

    PART = ".episodes.jsonl.xz.part"

    def __init__(self, plain: Path, level: int = XZ_LEVEL) -> None:
        self.plain = plain
        self.part = plain.with_name(f"{self.PART}.{os.getpid()}")
        self.start = plain.stat().st_size if plain.exists() else 0
        self.fed = self.start
        self.error: BaseException | None = None
        self._f = open(self.part, "wb")
        self._c = lzma.LZMACompressor(format=lzma.FORMAT_XZ, filters=xz_filters(level))
        self._q: "queue.Queue[bytes | None]" = queue.Queue()
        self._t = threading.Thread(target=self._loop, name=f"compact-{plain.parent.name}", daemon=True)
        self._t.start()

    def feed(self, data: bytes) -> None:
        self.fed += len(data)
        self._q.put(data)

    def _compress(self, data: bytes) -> None:
        if self.error is None:
            try:
                out = self._c.compress(data)
                if out:
                    self._f.write(out)
            except BaseException as e:  # a full disk: finish() falls back to compacting the plain file
                self.error = e

    def _loop(self) -> None:
        if self.start:
            with open(self.plain, "rb") as f:
                left = self.start
                while left > 0 and (chunk := f.read(min(1 << 20, left))):
                    self._compress(chunk)
                    left -= len(chunk)
        while True:
            item = self._q.get()
            if item is None:
                return
            batch, stop = take_batch(self._q, item)
            self._compress(b"".join(batch))
            if stop:
                return

    def finish(self) -> bool:
        """The compacted file in place (True), or nothing changed and the part file gone (False)."""
        self._q.put(None)
        self._t.join()
        try:
            if self.error is not None or self.fed != self.plain.stat().st_size:
                raise OSError("the compressed stream does not hold the plain file's bytes")
            self._f.write(self._c.flush())
            self._f.flush()
            os.fsync(self._f.fileno())
            self._f.close()
            os.replace(self.part, compacted(self.plain))
            return True
        except OSError:
            self.abort()
            return False

    def abort(self) -> None:
        self._q.put(None)
        self._t.join()
        try:
            self._f.close()
        except OSError:
            pass
        self.part.unlink(missing_ok=True)

    @classmethod
    def remove_stale(cls, cell_dir: Path) -> None:
        for p in cell_dir.glob(f"{cls.PART}.*"):
            p.unlink(missing_ok=True)


class CellStore:
    def __init__(self, root: Path, cell_name: str) -> None:
        self.dir = Path(root) / cell_name
        self.done: set[tuple[str, int]] = set()
        self._lock_fd: int | None = None
        self._fh: BinaryIO | None = None
        self.repaired = False
        self.corrupt = 0
        self.duplicates = 0
        self.warnings: list[str] = []  # loud notes for the sweep to print (a damaged manifest was replaced)
        self.codes: dict[str, int] = {}  # code fingerprint -> finished episodes produced by it
        self.texts: dict[str, str] = {}  # the text fingerprint of this run (text_fingerprint of the manifest)
        self.text_counts: dict[str, int] = {}  # JSON of a finished record's `texts` -> how many (kept in the index)
        self.moved_to: Path | None = None  # where `fresh=True` moved the old results
        self.idle = False  # opened finished with nothing to run (`open(expect=...)`): records untouched, no appends
        self._xz: _StreamingXZ | None = None
        self.xz_level = XZ_LEVEL  # the preset `compact` writes (`compact_as_written` sets the run's)

    def open(
        self, manifest: dict[str, Any], fresh: bool = False, expect: Iterable[tuple[str, int]] | None = None
    ) -> "CellStore":
        """Lock and open the cell. `expect`: the (task id, trial) keys the run wants; when a finished
        cell already holds them all (its `episodes.index.json` matches its records file), the
        records are neither restored nor scanned (`idle`: nothing can be appended)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self._lock_fd = os.open(self.dir / ".lock", os.O_CREAT | os.O_RDWR)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            self._lock_fd = None
            raise StoreError(f"another sweep is writing {self.dir}; wait for it or stop it first") from None
        try:
            if not fresh and expect is not None and self._open_idle(manifest, set(expect)):
                return self
            return self._open_locked(manifest, fresh)
        except BaseException:
            self.close()
            raise

    def _records_signature(self) -> list[Any]:
        """What identifies the cell's records files on disk now (size and mtime of each)."""
        out: list[Any] = []
        for p in (self.dir / EPISODES, compacted(self.dir / EPISODES)):
            try:
                st = p.stat()
                out.append([p.name, st.st_size, st.st_mtime_ns])
            except FileNotFoundError:
                out.append([p.name, None, None])
        return out

    def _count_texts(self, texts: Any) -> None:
        key = json.dumps(texts, sort_keys=True)
        self.text_counts[key] = self.text_counts.get(key, 0) + 1

    def _write_index(self) -> None:
        """After DONE: the finished keys, codes and text fingerprints, tied to the records files as they are now."""
        data = {
            "records": self._records_signature(),
            "done": sorted([t, k] for t, k in self.done),
            "codes": self.codes,
            "texts": [[json.loads(k), n] for k, n in sorted(self.text_counts.items())],
        }
        atomic_write(self.dir / INDEX, json.dumps(data, separators=(",", ":")))

    def _open_idle(self, manifest: dict[str, Any], expect: set[tuple[str, int]]) -> bool:
        if not (self.dir / DONE).exists():
            return False
        try:
            idx = json.loads((self.dir / INDEX).read_bytes())
            done = {(str(t), int(k)) for t, k in idx["done"]}
            codes = {str(c): int(n) for c, n in idx["codes"].items()}
            texts = [(t, int(n)) for t, n in idx["texts"]]
            fresh_sig = idx["records"] == self._records_signature() and xz_whole(compacted(self.dir / EPISODES))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return False
        if not fresh_sig or not expect <= done:
            return False
        self.texts = text_fingerprint(manifest)
        why = text_mismatch(
            self.dir.name, [{"status": "ok", "texts": t} for t, n in texts for _ in range(n)], self.texts
        )
        if why:  # as when the records are read: the manifest never claims texts its episodes did not run on
            raise TextSourceMismatch(why)
        self.done, self.codes, self.idle = done, codes, True
        self.text_counts = {json.dumps(t, sort_keys=True): n for t, n in texts}
        self._write_manifest(manifest)
        return True

    def _move_aside(self) -> None:
        """`runner.fresh=true`: move every result file of the cell (not the lock) to
        `<experiment>/.superseded/<cell>/<time>/`; nothing is deleted."""
        names = [p for p in self.dir.iterdir() if p.name != ".lock"]
        if not names:
            return
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
        dest = self.dir.parent / SUPERSEDED / self.dir.name / stamp
        dest.mkdir(parents=True)
        for p in names:
            shutil.move(str(p), str(dest / p.name))
        self.moved_to = dest

    def _open_locked(self, manifest: dict[str, Any], fresh: bool) -> "CellStore":
        if fresh:
            self._move_aside()
        path = self.dir / EPISODES
        _StreamingXZ.remove_stale(self.dir)  # a run killed while compressing
        uncompact(self.dir, self.warnings)  # a finished cell opened again: its records become the live file
        self.repaired = repair_tail(path)
        records, keep, bad, dups = self._scan(path)
        self.corrupt, self.duplicates = len(bad), len(dups)
        if bad or dups:
            self._set_aside(path, keep, bad, dups)
        self.texts = text_fingerprint(manifest)
        why = text_mismatch(self.dir.name, records, self.texts)
        if why:  # before the manifest is rewritten: it never claims texts its counted episodes did not run on
            raise TextSourceMismatch(why)
        self.done = {(r["task_id"], int(r["trial"])) for r in records if r.get("status") == "ok"}
        for r in records:
            if r.get("status") == "ok":
                code = str(r.get("code") or "unrecorded")
                self.codes[code] = self.codes.get(code, 0) + 1
                self._count_texts(r.get("texts"))
        repair_tail(self.dir / ERRORS)
        self._write_manifest(manifest)
        self._fh = open(path, "ab")
        self._err: BinaryIO | None = open(self.dir / ERRORS, "ab")
        self._writer: _GroupWriter | None = _GroupWriter(self.dir.name, self._written)
        return self

    def _written(self, fh: Any, data: bytes) -> None:
        if self._xz is not None and fh is self._fh:
            self._xz.feed(data)

    def compact_as_written(self, level: int = XZ_LEVEL) -> None:
        """Compress the records while the cell runs (call before the first append): `mark_done`
        then only ends the stream instead of compressing the whole file after the last episode.
        `level`: the xz preset (`runner.compact_level`), also that of `compact` if the stream fails."""
        self.xz_level = level
        if self._fh is not None and self._xz is None:
            self._fh.flush()
            self._xz = _StreamingXZ(self.dir / EPISODES, level)

    @staticmethod
    def _scan(path: Path) -> tuple[list[dict[str, Any]], list[bytes], list[bytes], list[bytes]]:
        """(records kept, their lines, unusable lines: not JSON, no record, or wrong field types,
        duplicate lines of an already finished (task, trial))."""
        records: list[dict[str, Any]]
        keep: list[Any]
        bad: list[Any]
        dups: list[Any]
        records, keep, bad, dups = [], [], [], []
        if not path.exists():
            return records, keep, bad, dups
        seen: set[tuple[str, int]] = set()
        for raw in path.read_bytes().splitlines(keepends=True):
            line = raw if raw.endswith(b"\n") else raw + b"\n"
            try:
                r = _record(raw)
            except ValueError:
                bad.append(line)
                continue
            if _field_problem(r):
                bad.append(line)
                continue
            k = (r["task_id"], r["trial"])
            if r.get("status") == "ok" and k in seen:
                dups.append(line)
                continue
            if r.get("status") == "ok":
                seen.add(k)
            records.append(r)
            keep.append(line)
        return records, keep, bad, dups

    def _set_aside(self, path: Path, keep: list[bytes], bad: list[bytes], dups: list[bytes]) -> None:
        """Move unusable lines to `episodes.corrupt.jsonl` and duplicates to
        `episodes.duplicates.jsonl` (appended, fsynced), then rewrite the kept lines atomically."""
        for name, lines in (("episodes.corrupt.jsonl", bad), ("episodes.duplicates.jsonl", dups)):
            if lines:
                with open(self.dir / name, "ab") as f:
                    f.writelines(lines)
                    f.flush()
                    os.fsync(f.fileno())
        atomic_write(path, b"".join(keep))

    def _write_manifest(self, manifest: dict[str, Any]) -> None:
        path = self.dir / MANIFEST
        history: list[dict[str, Any]] | None = []
        if path.exists():
            try:
                old = json.loads(path.read_text())
                history = old.get("runs", []) if isinstance(old, dict) else None
                if not isinstance(history, list):
                    raise ValueError("no list of runs")
            except (ValueError, UnicodeDecodeError) as e:
                stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
                kept = self.dir / f"manifest.damaged-{stamp}.json"
                shutil.copyfile(path, kept)
                history = [{"history_lost": f"manifest.json was damaged ({e}); the original is kept as {kept.name}"}]
                self.warnings.append(
                    f"{path}: manifest.json was damaged ({e}); the earlier run history is lost from it, "
                    f"the damaged file is kept as {kept.name} and a new manifest is written. "
                    "The finished episodes are intact and are kept."
                )
        run = {
            "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "git": git_revision(),
            "code": code_fingerprint(),
            "versions": versions(),
            "endpoints": manifest.get("endpoints", {}),  # per run: a base_url_env override may differ
            **({"sweep": dict(SWEEP)} if SWEEP else {}),
        }
        data = {**manifest, "runs": (history or []) + [run]}
        atomic_write(path, json.dumps(data, indent=2, sort_keys=True, default=str))
        (self.dir / DONE).unlink(missing_ok=True)

    def _line(self, rec: EpisodeRecord) -> tuple[Any, bytes] | None:
        if self._fh is None:
            raise StoreError(
                f"{self.dir}: the cell's store is closed (marked done or closed); open it again to add records"
            )
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

        assert self._writer is not None  # _line raised on a closed store
        self._writer.submit(*line, done)
        finished.wait()
        if err[0] is not None:
            raise err[0]
        if rec.status == "ok":
            self.done.add((rec.task_id, rec.trial))
            self._count_texts(rec.texts)
            self.codes[rec.code or "unrecorded"] = self.codes.get(rec.code or "unrecorded", 0) + 1

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

        assert self._writer is not None  # _line raised on a closed store
        self._writer.submit(*line, lambda e: loop.call_soon_threadsafe(settle, e))
        await fut
        if rec.status == "ok":
            self.done.add((rec.task_id, rec.trial))
            self._count_texts(rec.texts)
            self.codes[rec.code or "unrecorded"] = self.codes.get(rec.code or "unrecorded", 0) + 1

    def mark_done(self, counts: dict[str, int], *, compact: bool = True) -> None:
        """The cell is finished: close its files, compact its records (`compact`; off with
        `runner.compact_records=false`, which leaves the plain `episodes.jsonl`), write `DONE`.
        No record can be added afterwards without opening the cell again."""
        self._close_files()
        xz, self._xz = self._xz, None
        try:
            if compact and xz is not None and xz.finish():  # compressed while the cell ran
                (self.dir / EPISODES).unlink()
                fsync_dir(self.dir)
            elif compact:
                self.compact()
            elif xz is not None:
                xz.abort()
        except OSError as e:  # a full disk: the plain file is whole and stays the cell's records
            self.warnings.append(
                f"{self.dir / EPISODES} was left uncompacted ({e}); nothing is lost, it is read as it is"
            )
        atomic_write(
            self.dir / DONE, json.dumps({**counts, "at": datetime.now(timezone.utc).isoformat(timespec="seconds")})
        )
        try:
            self._write_index()
        except OSError:  # a full disk: the next resume scans the records instead
            (self.dir / INDEX).unlink(missing_ok=True)

    def compact(self) -> None:
        """`episodes.jsonl` → `episodes.jsonl.xz` (the same lines, xz-compressed), written and synced
        before the plain file is removed; a crash in between leaves both, read as one."""
        path = self.dir / EPISODES
        if not path.exists():
            return
        with open(path, "rb") as f:
            atomic_write(compacted(path), iter(lambda: f.read(1 << 20), b""), xz=True, level=self.xz_level)
        path.unlink()
        fsync_dir(self.dir)

    def _close_files(self) -> None:
        if getattr(self, "_writer", None) is not None:
            self._writer.close()  # type: ignore[union-attr]  # checked on the line above (getattr: __init__ may not have set it)  # every acknowledged line is already on disk; this drains the rest
            self._writer = None
        for fh in (self._fh, getattr(self, "_err", None)):
            if fh:
                try:
                    fh.close()
                except OSError:  # a full disk: the buffered tail is the torn line repair_tail cuts on resume
                    pass
        self._fh = self._err = None

    def close(self) -> None:
        self._close_files()
        if self._xz is not None:  # not finished: the plain file stays the records
            self._xz.abort()
            self._xz = None
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None


def _current_index(cell_dir: Path) -> dict[str, Any] | None:
    """A DONE store's `episodes.index.json` when it still matches its records files, else None."""
    if not (cell_dir / DONE).exists():
        return None
    try:
        idx = json.loads((cell_dir / INDEX).read_bytes())
        if idx["records"] == CellStore(cell_dir.parent, cell_dir.name)._records_signature() and xz_whole(
            compacted(cell_dir / EPISODES)
        ):
            return idx
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return None


def xz_whole(path: Path) -> bool:
    """Whether a compacted records file ends in an xz stream footer (its last two bytes are the
    footer's magic `YZ`): a file cut short (a copy interrupted, a disk filled) does not, whatever
    its size and time say. True when there is no such file."""
    try:
        with open(path, "rb") as f:
            f.seek(-2, os.SEEK_END)
            return f.read(2) == b"YZ"
    except FileNotFoundError:
        return True
    except OSError:  # shorter than two bytes
        return False


def utf8_name(p: Path) -> bool:
    """Whether `p`'s name is valid UTF-8 (a name that is not arrives with surrogate escapes and
    cannot be printed, hashed or written into a table)."""
    try:
        p.name.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def cell_dirs(root: Path, notes: list[str] | None = None, every: bool = False) -> list[Path]:
    """The cell folders of an experiment (a manifest, or shards), sorted: hidden names, names
    that are not UTF-8 and second names of one folder (a symlinked copy: counted once, under
    its real name when that is listed) are left out, each with a line in `notes`. `every`: every
    folder of those names, cell or not (the tables' fingerprint, orphan checks)."""
    found: dict[tuple[int, int], Path] = {}
    out: list[Path] = []
    try:
        entries = sorted(Path(root).iterdir(), key=lambda p: (p.is_symlink(), p.name))  # real names first
    except OSError:
        return []
    for p in entries:
        if p.name.startswith(".") or p.name in ("tables", "paper") or not p.is_dir():
            continue
        if not utf8_name(p):
            if notes is not None:
                shown = p.name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
                notes.append(f"'{shown}' is not a UTF-8 name: ignored (rename or move it out of the experiment)")
            continue
        if not every and not ((p / MANIFEST).exists() or shard_dirs(p)):
            continue
        try:
            st = p.stat()
        except OSError:
            continue
        ident = (st.st_dev, st.st_ino)
        if ident in found:
            if notes is not None:
                notes.append(f"{p.name} is another name of {found[ident].name} (a symlink): counted once")
            continue
        found[ident] = p
        out.append(p)
    return sorted(out)


def damaged_records_note(store_dir: Path, read_back: list[dict[str, Any]], damage: str, where: str = "") -> str:
    """What a reader says of a store whose compacted records file is damaged: the file, what went
    wrong, how many finished episodes were read back and how many its index listed."""
    ok = {(r.get("task_id"), r.get("trial")) for r in read_back if r.get("status", "ok") == "ok"}
    try:
        listed: int | None = len(json.loads((store_dir / INDEX).read_bytes())["done"])
    except (OSError, ValueError, KeyError, TypeError):
        listed = None
    held = (
        f"its index lists {listed} finished episodes, {len(ok)} could be read back "
        f"({max(0, listed - len(ok))} cannot be)"
        if listed is not None
        else f"{len(ok)} finished episodes could be read back before the damage"
    )
    return (
        f"{where}{compacted(Path(EPISODES)).name} is damaged ({damage}): {held}. Fix: run the same sweep "
        "command again: the episodes that cannot be read back run again, the damaged file is kept aside"
    )


def read_store(store_dir: Path, where: str = "") -> tuple[list[dict[str, Any]], list[str]]:
    """(the records of one store, a note when its compacted records file is damaged; `where`: the
    store's folder as the note names it, e.g. `shard-1-of-2/`)."""
    damage: list[str] = []
    good = []
    with paused_gc():
        for raw in record_lines(Path(store_dir) / EPISODES, damage):
            try:
                good.append(_record(raw))
            except ValueError:
                pass
    return good, ([damaged_records_note(Path(store_dir), good, damage[0], where)] if damage else [])


def finished_texts(cell_dir: Path) -> list[dict[str, Any]]:
    """The finished records of one cell store as far as a text check needs them (`status`,
    `texts`): from its index when the cell is DONE and the index matches its records files
    (nothing parsed), else from the records."""
    idx = _current_index(Path(cell_dir))
    try:
        if idx is not None:
            return [{"status": "ok", "texts": t} for t, n in idx["texts"] for _ in range(int(n))]
    except (KeyError, TypeError, ValueError):
        pass
    return read_jsonl(Path(cell_dir) / EPISODES)[0]


def shard_dirs(cell_dir: Path) -> list[Path]:
    """The `shard-<i>-of-<n>/` stores of a cell run with `runner.shard=i/n` (each its own records)."""
    return sorted(d for d in Path(cell_dir).glob("shard-*-of-*") if (d / MANIFEST).exists())


def cell_errors(cell_dir: Path) -> list[dict[str, Any]]:
    """The failed episodes' records of a cell (`errors.jsonl`), from its folder and every shard."""
    cell_dir = Path(cell_dir)
    return [r for d in [cell_dir, *shard_dirs(cell_dir)] for r in read_jsonl(d / ERRORS)[0]]


def finished_keys(cell_dir: Path) -> set[tuple[str, int]]:
    """The (task id, trial) of every finished (`ok`) episode of one store (a cell's folder or one of
    its shards): from its index when it is DONE and the index matches its records files (nothing
    parsed), else from its records."""
    idx = _current_index(Path(cell_dir))
    try:
        if idx is not None:
            return {(str(t), int(k)) for t, k in idx["done"]}
    except (KeyError, TypeError, ValueError):
        pass
    records, _ = read_jsonl(Path(cell_dir) / EPISODES)
    return {(str(r.get("task_id")), int(r.get("trial") or 0)) for r in records if r.get("status") == "ok"}


def finished_elsewhere(cell_dir: Path, own: Path) -> set[tuple[str, int]]:
    """The episodes of a cell finished in its other stores than `own`: the cell's folder itself and
    its `shard-*` stores. A store opened for a resume skips them, so a cell run before as one
    process, in shards or with another `runner.processes`, never runs an episode twice."""
    cell_dir, own = Path(cell_dir), Path(own)
    out: set[tuple[str, int]] = set()
    for d in [cell_dir, *shard_dirs(cell_dir)]:
        if d == own or not ((d / EPISODES).exists() or compacted(d / EPISODES).exists()):
            continue
        out |= finished_keys(d)
    return out


def _merge_shards(
    cell_dir: Path, manifest: dict[str, Any] | None, notes: list[str] | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A sharded cell as one: the shards' records together; n_tasks is the whole benchmark's."""
    records: list[dict[str, Any]] = []
    total = None
    ids: list[str] | None = []
    for d in shard_dirs(cell_dir):
        try:
            m = json.loads((d / MANIFEST).read_text())
        except (OSError, ValueError) as e:
            raise StoreError(f"{d / MANIFEST}: unreadable manifest ({e}); re-run that shard to rewrite it") from None
        manifest = manifest or {k: v for k, v in m.items() if k != "shard"}
        total = (m.get("shard") or {}).get("n_tasks_total", total)
        if ids is not None and isinstance(m.get("task_ids"), list):
            ids += [t for t in m["task_ids"] if t not in ids]
        else:
            ids = None  # a shard without recorded task ids: count whatever the shards hold
        got, damaged = read_store(d, f"{d.name}/")
        records += got
        if notes is not None:
            notes += damaged
    if manifest is None:
        raise StoreError(f"{cell_dir}: no manifest.json")
    manifest = {**manifest, "shards": [d.name for d in shard_dirs(cell_dir)]}
    if total is not None:
        manifest["n_tasks"] = total
    manifest["task_ids"] = ids  # every shard's tasks (the tables count these × trials)
    return manifest, records


def load_cell(cell_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(manifest, finished episode records deduplicated by (task, trial)) for aggregation.
    A cell run in shards (`runner.shard=i/n`) is read as one: every shard's records."""
    manifest, out, _ = load_cell_checked(cell_dir)
    return manifest, out


class _AggregatedFields(BaseModel):
    """The fields of a record that aggregation reads, with their types (other fields may come
    and go between versions of the record; they are not checked here)."""

    task_id: str
    trial: int
    status: Literal["ok", "infra_error", "harness_error"] = "ok"
    scores: dict[str, Any] = Field(default_factory=dict)
    usage_by_role: dict[str, Usage] = Field(default_factory=dict)
    requests: list[dict[str, Any]] = Field(default_factory=list)
    code: str | None = None


def _field_problem(r: dict[str, Any]) -> str | None:
    """Why a well-shaped record line cannot be aggregated (a field of the wrong type), or None."""
    try:
        _AggregatedFields.model_validate(r)
    except ValidationError as e:
        err = e.errors()[0]
        return f"{'.'.join(str(x) for x in err['loc'])}: {err['msg']}"
    return None


def load_cell_checked(cell_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    """(manifest, finished records deduplicated by (task, trial), notes on lines set aside).
    A line whose fields have the wrong types (a hand edit, a foreign tool) is set aside with a
    note naming the field, never a crash of the aggregator."""
    mpath = cell_dir / MANIFEST
    if shard_dirs(cell_dir):  # runner.shard=i/n: the shards' records together (and any unsharded ones)
        top = None
        if mpath.exists():
            try:
                top = json.loads(mpath.read_text())
            except ValueError:
                top = None
        damaged: list[str] = []
        manifest, records = _merge_shards(cell_dir, top if isinstance(top, dict) else None, damaged)
        got, more = read_store(cell_dir)
        records += got
        damaged += more
    else:
        try:
            manifest = json.loads(mpath.read_text())
            if not isinstance(manifest, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as e:
            raise StoreError(f"{mpath}: unreadable manifest ({e}); re-run the sweep to rewrite it") from None
        records, damaged = read_store(cell_dir)
    seen, out, notes = set(), [], list(damaged)
    for n, r in enumerate(records, 1):
        problem = _field_problem(r)
        if problem:
            notes.append(
                f"{EPISODES} record {n} ({r.get('task_id')}#{r.get('trial')}) set aside: wrong field types ({problem})"
            )
            continue
        k = (r.get("task_id"), r.get("trial"))
        if r.get("status") == "ok" and k not in seen:
            seen.add(k)
            out.append(r)
    return manifest, out, notes
