"""The results store: `results/<experiment>/<cell>/`.

- `manifest.json`: resolved config (no secrets), package versions, git revision, seeds, notes.
- `episodes.jsonl`: one line per finished (task, trial), on disk (written, flushed, fsynced)
  before the append is acknowledged. Appends go through one writer thread per cell that writes
  every line queued meanwhile and fsyncs once for the batch (group commit), so the event loop
  never waits on the disk and concurrent episodes share fsyncs.
- `errors.jsonl`: episodes that ended in infra/harness errors (retried on resume, never scored).
- `DONE`: completion marker with the final counts.
- `episodes.jsonl.zst`: the records compressed a chunk at a time while the cell runs (`compact_as_written`):
  when the plain file holds `chunk_limit` bytes (a third of what is compressed so far, 64 KiB to
  8 MiB), the writer thread appends them to the `.zst` file as one zstd frame (synced), then empties
  the plain file, so the disk holds at most ~1.4x the final records (plus the lines of one write
  batch, which a few hundred episodes ending at once can make large) and finishing a cell
  compresses only its last chunk. `zstdcat episodes.jsonl.zst | jq` reads it (frames concatenate).
  zstd level 3 makes 33 KB records ~7.5x smaller, as xz's preset 1 did, at a fourteenth of its CPU.
  A kill between appending a frame and emptying the plain file leaves the chunk in both: readers
  (`read_jsonl`, `record_lines`) read each line once and the next open settles it; a frame cut short
  (killed while appending) is cut off on open (its lines are still in the plain file). A damaged
  compressed file is kept aside (`episodes.damaged-<time>.jsonl.zst`), its lines before the damage
  kept, the rest re-run. A cell finished before zstd keeps its `episodes.jsonl.xz`, read as it is and
  restored to the plain file when the cell is opened to run again.
- `episodes.index.json` (written with `DONE`) lets a resume with nothing to run skip the records
  (`open(expect=...)`, `idle`).

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
import io
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
COMPACTED = ".zst"  # suffix of the compressed records: episodes.jsonl.zst (zstd frames, `zstdcat` reads them)
LEGACY_COMPACTED = ".xz"  # a cell finished before zstd: episodes.jsonl.xz, read as it is, restored on a resume
# zstd level 3 (`runner.compact_level`): on 12-call episodes of 33 KB (scripts/perf/README.md) the
# records' chunks of up to 8 MiB come out 7.5x smaller, as xz's preset 1 did with its 1 MiB window,
# for ~0.1 ms of CPU per episode instead of ~1.4 ms (and a tenth of xz's time to read back).
ZSTD_LEVEL = 3
# The plain file is compressed a chunk at a time (one zstd frame each, appended to the .zst file)
# and emptied as each chunk is on disk, so a running cell holds at most one chunk of plain records:
# a third of what is compressed so far (the disk never holds more than ~1.4x the final records),
# at least CHUNK_MIN (a cell's first records), at most CHUNK_MAX.
CHUNK_MIN = 64 << 10
CHUNK_MAX = 8 << 20


def chunk_limit(compressed_bytes: int) -> int:
    """The plain bytes a running cell keeps before compressing them as one frame."""
    return max(CHUNK_MIN, min(CHUNK_MAX, compressed_bytes // 3))


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
        "HARNESS_UPSTREAM_DIR / HARNESS_UPSTREAM_OFFLINE / download cache, and for FlowState App. B.3 the same "
        "HARNESS_FLOWSTATE_B3 / HARNESS_FLOWSTATE_B3_FENCE as the earlier run) and resume."
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
        gone = [k for k in sorted(before) if k not in current] if current else []  # no hashes now: none compared
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


def _read(raw: bytes) -> tuple[dict[str, Any], bool]:
    """One line as (a record, whether orjson read it): a JSON object with a task_id and a trial;
    ValueError otherwise. A line orjson reads is standard JSON (no NaN, no lone surrogate), so a
    reader may embed it as it is (the report's payloads: `stream_cell_lines`)."""
    standard = True
    try:
        r = orjson.loads(raw)  # ~3x the standard library's speed on records
    except orjson.JSONDecodeError:  # what orjson refuses and json reads (NaN, lone surrogates, ints beyond 64 bits)
        r, standard = json.loads(raw), False
    if not (isinstance(r, dict) and isinstance(r.get("task_id"), str) and isinstance(r.get("trial"), int)):
        raise ValueError("not an episode record")
    return r, standard


def _record(raw: bytes) -> dict[str, Any]:
    """One line as a record (`_read`'s record)."""
    return _read(raw)[0]


def compacted(path: Path) -> Path:
    """Where a cell keeps `path` compressed (`episodes.jsonl` → `episodes.jsonl.zst`)."""
    return path.with_name(path.name + COMPACTED)


def legacy_compacted(path: Path) -> Path:
    """Where a cell finished before zstd keeps `path` compressed (`episodes.jsonl.xz`)."""
    return path.with_name(path.name + LEGACY_COMPACTED)


def compressed_files(path: Path) -> list[Path]:
    """The compressed copies of `path` that exist, in the order their lines were written."""
    return [p for p in (legacy_compacted(path), compacted(path)) if p.exists()]


def has_records(path: Path) -> bool:
    """`path` (a cell's `episodes.jsonl`) or a compressed copy of it exists."""
    return path.exists() or bool(compressed_files(path))


def uncompact(cell_dir: Path, warnings: list[str] | None = None) -> Path:
    """A cell's records back in the plain `episodes.jsonl` alone (what `zstd -d` / `unxz` does),
    merged with whatever plain lines are left; returns the plain file's path. Opening a cell finished
    before zstd (`.xz`) does this by itself, and so does opening a cell whose compressed lines need
    setting aside; tools and tests that edit lines by hand call it. A damaged compressed file is
    kept aside as `episodes.damaged-<time>.jsonl.<xz|zst>` (never deleted), the lines before the
    damage are kept and the episodes after it run again (noted in `warnings`)."""
    cell_dir = Path(cell_dir)
    path = cell_dir / EPISODES
    files = compressed_files(path)
    if not files:
        return path
    repair_tail(path)
    damage: list[str] = []
    atomic_write(path, record_lines(path, damage))
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    for f in files:
        if damage and any(d.startswith(f.name + ":") for d in damage):
            kept = cell_dir / f"episodes.damaged-{stamp}.jsonl{f.suffix}"
            f.rename(kept)
            if warnings is not None:
                warnings.append(
                    f"{f} was damaged ({damage[0].split(': ', 1)[1]}); the records before the damage are kept, the "
                    f"episodes after it run again; the damaged file is kept as {kept.name}"
                )
        else:
            f.unlink()
    fsync_dir(cell_dir)
    return path


def _digest(line: bytes) -> bytes:
    return hashlib.blake2b(line.rstrip(b"\n"), digest_size=16).digest()


class Frames:
    """The state of reading a `.zst` records file frame by frame (`zst_lines`): `complete` is the
    offset after its last whole frame, `torn` whether bytes follow it that end inside a frame (a
    write cut short: those lines are still in the plain file, which is emptied only after a frame is
    on disk)."""

    def __init__(self) -> None:
        self.complete = 0
        self.torn = False


def zst_lines(path: Path, frames: Frames | None = None) -> Iterator[bytes]:
    """The whole lines of a `.zst` file of concatenated zstd frames, as they are decompressed (a
    line may span frames). The lines of a last frame cut short are yielded up to its last whole
    line (`frames.torn`); damaged data raises `zstandard.ZstdError`."""
    import zstandard

    frames = frames if frames is not None else Frames()
    d = zstandard.ZstdDecompressor()
    pending = b""
    with open(path, "rb") as f:
        obj: Any = None
        offset = 0  # file offset where `buf` starts
        while buf := f.read(1 << 20):
            while buf:
                if obj is None:
                    obj = d.decompressobj()
                out = obj.decompress(buf)
                nl = out.find(b"\n")
                if nl < 0:
                    pending += out
                else:  # each line copied once, with its newline (half the CPU of splitting and re-joining)
                    yield pending + out[: nl + 1]
                    rest = io.BytesIO(out)
                    rest.seek(nl + 1)
                    lines = rest.readlines()
                    pending = lines.pop() if lines and not lines[-1].endswith(b"\n") else b""
                    yield from lines
                if obj.eof:
                    used = len(buf) - len(obj.unused_data)
                    offset += used
                    frames.complete = offset
                    buf, obj = obj.unused_data, None
                else:
                    offset += len(buf)
                    buf = b""
        frames.torn = obj is not None
    if pending and not frames.torn:
        yield pending + b"\n"  # a last line without its newline in a whole frame: whole


def _compressed_lines(p: Path, damage: list[str] | None, plain_lines: bool) -> Iterator[bytes]:
    """The lines of one compressed copy (`.xz` or `.zst`); damage (and a torn `.zst` frame when no
    plain lines can hold its lines) is noted in `damage` as '<file name>: <what>'."""
    import zstandard

    try:
        if p.suffix == LEGACY_COMPACTED:
            with lzma.open(p, "rb") as z:
                cut = b""
                for line in z:
                    if not line.endswith(b"\n"):  # only a last line can lack it
                        cut = line
                        continue
                    yield line
                if cut:
                    yield cut + b"\n"  # the stream ended cleanly: a whole line
        else:
            frames = Frames()
            yield from zst_lines(p, frames)
            if frames.torn and not plain_lines and damage is not None:
                damage.append(f"{p.name}: its last frame is cut short")
    except FileNotFoundError:
        pass
    except (OSError, EOFError, lzma.LZMAError, zstandard.ZstdError) as e:  # the lines before the damage stand
        if damage is not None:
            damage.append(f"{p.name}: {type(e).__name__}: {e}")


def record_lines(path: Path, damage: list[str] | None = None) -> Iterator[bytes]:
    """The lines of `path` and of its compressed copies (`compressed_files`): the compressed lines
    first, then the plain file's lines that are not among them (a running cell compresses its
    plain lines a chunk at a time and empties the plain file after; a kill in between leaves a
    chunk in both). The plain file is read first, so a chunk compressed meanwhile is never missed.
    A damaged compressed copy yields its whole lines up to the damage; what went wrong is
    appended to `damage`. Lines stream: nothing but the plain lines (at most a chunk) is held."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        f = None
    try:
        if f is not None and not compressed_files(path):
            yield from f  # a live cell before its first chunk, or records kept plain
            return
        live = f.readlines() if f is not None else []
    finally:
        if f is not None:
            f.close()
    wanted = {_digest(line) for line in live}
    sizes = {len(line.rstrip(b"\n")) for line in live}  # most compressed lines are told apart by size alone
    seen: set[bytes] = set()
    for p in (legacy_compacted(path), compacted(path)):
        for line in _compressed_lines(p, damage, bool(live)):
            if len(line) - 1 in sizes:
                d = _digest(line)
                if d in wanted:
                    seen.add(d)
            yield line
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


def atomic_write(path: Path, data: bytes | str | Iterable[bytes]) -> None:
    """Write `path` so that readers see the old or the new content, never a part: a temp file
    in the same directory, flushed and fsynced, renamed over `path`, then the directory fsynced.
    On any failure (a full disk) the temp file is removed and the old file is untouched.
    `data` may be an iterable of byte chunks (written as they come)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp.{os.getpid()}")
    chunks = [data.encode() if isinstance(data, str) else data] if isinstance(data, (str, bytes)) else data
    try:
        with open(tmp, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
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
    (error None) or failed to get there. `submit(..., loop=L)`: `done` is called on the event loop
    `L` instead, and the lines of one batch waited for on the same loop are answered with one
    wake-up of it (one `call_soon_threadsafe`, not one per line)."""

    def __init__(self, name: str, on_written: Any = None, after_batch: Any = None) -> None:
        self._on_written = on_written  # (fh, data) for each line on disk, in the order written
        self._after_batch = after_batch  # called once a batch's callers are answered (the chunk compression)
        self._q: "queue.Queue[tuple[Any, bytes, Any, Any] | None]" = queue.Queue()
        self._t = threading.Thread(target=self._loop, name=f"store-writer-{name}", daemon=True)
        self._t.start()

    def submit(self, fh: Any, data: bytes, done: Any, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._q.put((fh, data, done, loop))

    def _loop(self) -> None:
        while True:
            item = self._q.get()
            if item is None:
                return
            batch, stop = take_batch(self._q, item)
            files: dict[int, Any] = {}
            errors: dict[int, BaseException] = {}
            for fh, data, _, _ in batch:
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
                for fh, data, _, _ in batch:
                    if id(fh) not in errors:
                        self._on_written(fh, data)
            on_loop: dict[asyncio.AbstractEventLoop, list[tuple[Any, BaseException | None]]] = {}
            for fh, _, done, loop in batch:
                if loop is not None:
                    on_loop.setdefault(loop, []).append((done, errors.get(id(fh))))
                    continue
                try:
                    done(errors.get(id(fh)))
                except RuntimeError:  # the waiting loop is gone (interrupted): the line is written anyway
                    pass
            for loop, answers in on_loop.items():
                try:
                    loop.call_soon_threadsafe(_answer, answers)
                except RuntimeError:  # the waiting loop is gone (interrupted): the lines are written anyway
                    pass
            if self._after_batch is not None:
                self._after_batch()
            if stop:
                return

    def close(self) -> None:
        self._q.put(None)
        self._t.join()


def _answer(answers: list[tuple[Any, BaseException | None]]) -> None:
    """On the waiting loop: each `done(error)` of a batch, every one even when one raises."""
    failed: BaseException | None = None
    for done, error in answers:
        try:
            done(error)
        except Exception as e:
            failed = failed or e
    if failed is not None:
        raise failed


def remove_stale_parts(cell_dir: Path) -> None:
    """Part files an earlier version left when killed while compressing (`.episodes.jsonl.xz.part.<pid>`)."""
    for p in Path(cell_dir).glob(".episodes.jsonl.xz.part.*"):
        p.unlink(missing_ok=True)


def append_frame(zst: Path, data: bytes, level: int) -> int:
    """`data` (whole lines) compressed as one zstd frame at the end of `zst`, written and synced;
    returns the frame's size. On failure (a full disk) `zst` is cut back to what it was."""
    import zstandard

    frame = zstandard.ZstdCompressor(level=level).compress(data)
    new = not zst.exists()
    with open(zst, "ab") as f:
        size = f.tell()
        try:
            f.write(frame)
            f.flush()
            os.fsync(f.fileno())
        except BaseException:
            try:
                f.truncate(size)
            except OSError:
                pass
            raise
    if new:
        fsync_dir(zst.parent)
    return len(frame)


def settle_frames(path: Path) -> None:
    """Before a cell is written again: a `.zst` frame cut short (killed while appending it) is cut
    off. Its lines are still in the plain file, which is emptied only after a frame is on disk; with
    no plain lines the cut is damage, left to `uncompact` (kept aside, noted)."""
    zst = compacted(path)
    if not zst.exists() or not path.exists() or path.stat().st_size == 0:
        return
    import zstandard

    frames = Frames()
    try:
        for _ in zst_lines(zst, frames):
            pass
    except zstandard.ZstdError:  # damaged, not cut short: kept aside when the lines are read
        return
    if frames.torn:
        with open(zst, "r+b") as f:
            f.truncate(frames.complete)
            f.flush()
            os.fsync(f.fileno())


def move_aside(cell_dir: Path) -> Path | None:
    """Move every result file of a cell (not the lock) to `<experiment>/.superseded/<cell>/<time>/`
    (runner.fresh=true, runners.prune); nothing is deleted. Returns where they went (None: no file)."""
    names = [p for p in cell_dir.iterdir() if p.name != ".lock"]
    if not names:
        return None
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    dest = cell_dir.parent / SUPERSEDED / cell_dir.name / stamp
    dest.mkdir(parents=True)
    for p in names:
        shutil.move(str(p), str(dest / p.name))
    return dest


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
        self._chunking = False  # the plain records compressed a chunk at a time (`compact_as_written`)
        self._plain_bytes = 0  # bytes in the plain file now
        self._zst_bytes = 0  # bytes of the .zst file
        self.compact_level = ZSTD_LEVEL  # the zstd level of the chunks (`compact_as_written` sets the run's)

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
        """What identifies the cell's records files on disk now (size and mtime of each; of a `.zst`
        file also a digest of its last 4 KiB, which has no footer to check: a tail lost to zeros
        keeps the size and time, not the digest)."""
        out: list[Any] = []
        path = self.dir / EPISODES  # a cell finished before zstd: the same signature as then
        for p in (path, legacy_compacted(path) if legacy_compacted(path).exists() else compacted(path)):
            try:
                st = p.stat()
                out.append([p.name, st.st_size, st.st_mtime_ns])
                if p.suffix == COMPACTED:
                    with open(p, "rb") as f:
                        f.seek(max(0, st.st_size - 4096))
                        out[-1].append(hashlib.blake2b(f.read(), digest_size=16).hexdigest())
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
            fresh_sig = idx["records"] == self._records_signature() and records_whole(self.dir / EPISODES)
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
        """`runner.fresh=true`: the cell's results go aside (`move_aside`)."""
        self.moved_to = move_aside(self.dir)

    def _open_locked(self, manifest: dict[str, Any], fresh: bool) -> "CellStore":
        if fresh:
            self._move_aside()
        path = self.dir / EPISODES
        remove_stale_parts(self.dir)  # an earlier version killed while compressing
        if legacy_compacted(path).exists():  # finished before zstd: its records become the live file
            uncompact(self.dir, self.warnings)
        settle_frames(path)  # a kill while a chunk was appended
        self.repaired = repair_tail(path)
        seen: set[tuple[str, int]] = set()
        plain = path.read_bytes().splitlines(keepends=True) if path.exists() else []
        rewrite = False
        if compacted(path).exists():  # the compressed chunks stay as they are unless a line must go aside
            damage: list[str] = []
            wanted = {_digest(line): line for line in plain}
            sizes = {len(line.rstrip(b"\n")) for line in plain}
            in_both: set[bytes] = set()
            live = bool(plain)

            def compressed() -> Iterator[bytes]:
                for line in _compressed_lines(compacted(path), damage, live):
                    if len(line) - 1 in sizes and (d := _digest(line)) in wanted:
                        in_both.add(d)  # killed between compressing a chunk and emptying the plain file
                    yield line

            _, zbad, zdups = self._scan(compressed(), seen, keep_lines=False)
            if zbad or zdups or damage:  # rare (a hand edit, a damaged file): all records back in the plain file
                self.done, self.codes, self.text_counts, seen = set(), {}, {}, set()
                uncompact(self.dir, self.warnings)
                plain = path.read_bytes().splitlines(keepends=True)
            elif in_both:
                plain, rewrite = [line for line in plain if _digest(line) not in in_both], True
        keep, bad, dups = self._scan(plain, seen, keep_lines=True)
        self.corrupt, self.duplicates = len(bad), len(dups)
        if bad or dups or rewrite:
            self._set_aside(path, keep, bad, dups)
        del plain, keep
        self.texts = text_fingerprint(manifest)
        counted = [{"status": "ok", "texts": json.loads(t)} for t, n in self.text_counts.items() for _ in range(n)]
        why = text_mismatch(self.dir.name, counted, self.texts)
        if why:  # before the manifest is rewritten: it never claims texts its counted episodes did not run on
            raise TextSourceMismatch(why)
        repair_tail(self.dir / ERRORS)
        self._write_manifest(manifest)
        self._fh = open(path, "ab")
        self._plain_bytes = path.stat().st_size
        self._zst_bytes = compacted(path).stat().st_size if compacted(path).exists() else 0
        self._err: BinaryIO | None = open(self.dir / ERRORS, "ab")
        self._writer: _GroupWriter | None = _GroupWriter(self.dir.name, self._written, self._cut_chunk)
        return self

    @property
    def records_bytes(self) -> int:
        """Bytes of records in the cell's own files (plain and compressed): as opened, plus those written since."""
        return self._plain_bytes + self._zst_bytes

    def _written(self, fh: Any, data: bytes) -> None:
        if fh is self._fh:
            self._plain_bytes += len(data)

    def compact_as_written(self, level: int = ZSTD_LEVEL) -> None:
        """Compress the records while the cell runs (call before the first append): whenever the
        plain file holds `chunk_limit` bytes, the writer compresses them as one zstd frame at the end
        of `episodes.jsonl.zst` and empties the plain file, so the disk holds at most one chunk of
        plain records and `mark_done` compresses only the last one. `level`: the zstd level
        (`runner.compact_level`), also that of `compact`."""
        self.compact_level = level
        if self._fh is not None and not self._chunking:
            self._chunking = True
            self._cut_chunk()  # plain lines left by an earlier run

    def _cut_chunk(self, final: bool = False) -> None:
        """In the writer's thread between batches (or after it stopped: `final`): the plain lines
        as one frame at the end of the `.zst` file once they reach `chunk_limit` (any amount when
        `final`), then the plain file emptied. The frame is on disk before the plain file is cut;
        a kill in between leaves the lines in both (`settle_frames`). A failure (a full disk) keeps
        the plain file as the records and stops compressing (noted in `warnings`)."""
        if not self._chunking or self._plain_bytes == 0 or self._fh is None:
            return
        if not final and self._plain_bytes < chunk_limit(self._zst_bytes):
            return
        path = self.dir / EPISODES
        try:
            self._fh.flush()
            data = path.read_bytes()
            self._zst_bytes += append_frame(compacted(path), data, self.compact_level)
            os.ftruncate(self._fh.fileno(), 0)  # appends (O_APPEND) go on at the new end
            os.fsync(self._fh.fileno())
            self._plain_bytes = 0
        except OSError as e:
            self._chunking = False
            self.warnings.append(f"{path} is no longer compressed as the cell runs ({e}); nothing is lost")

    def _scan(
        self, lines: Iterable[bytes], seen: set[tuple[str, int]], keep_lines: bool
    ) -> tuple[list[bytes], list[bytes], list[bytes]]:
        """Count `lines` into the store (`done`, `codes`, `text_counts`; `seen`: the finished keys
        so far) and return (their usable lines when `keep_lines`, unusable lines: not JSON, no
        record, or wrong field types, duplicate lines of an already finished (task, trial)).
        Records are parsed one at a time and never kept."""
        keep: list[bytes] = []
        bad: list[bytes] = []
        dups: list[bytes] = []
        for raw in lines:
            line = raw if raw.endswith(b"\n") else raw + b"\n"
            try:
                r = _record(raw)
            except ValueError:
                bad.append(line)
                continue
            if _field_problem(r):
                bad.append(line)
                continue
            k = (r["task_id"], int(r["trial"]))
            if r.get("status") == "ok":
                if k in seen:
                    dups.append(line)
                    continue
                seen.add(k)
                self.done.add(k)
                code = str(r.get("code") or "unrecorded")
                self.codes[code] = self.codes.get(code, 0) + 1
                self._count_texts(r.get("texts"))
            if keep_lines:
                keep.append(line)
        return keep, bad, dups

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

    async def append_async(self, rec: EpisodeRecord) -> bytes | None:
        """`append` without blocking the event loop: returns once the record is on disk, with the
        line written (None: a finished episode already stored, not written again); lines of
        concurrent episodes share one fsync."""
        line = self._line(rec)
        if line is None:
            return None
        loop = asyncio.get_running_loop()
        fut: asyncio.Future = loop.create_future()

        def settle(e: BaseException | None) -> None:
            if not fut.done():
                fut.set_exception(e) if e is not None else fut.set_result(None)

        assert self._writer is not None  # _line raised on a closed store
        self._writer.submit(*line, settle, loop)  # answered on this loop, with the batch's other lines
        await fut
        if rec.status == "ok":
            self.done.add((rec.task_id, rec.trial))
            self._count_texts(rec.texts)
            self.codes[rec.code or "unrecorded"] = self.codes.get(rec.code or "unrecorded", 0) + 1
        return line[1]

    def mark_done(self, counts: dict[str, int], *, compact: bool = True) -> None:
        """The cell is finished: close its files, compress what is left of its plain records
        (`compact`; off with `runner.compact_records=false`, which leaves the plain `episodes.jsonl`),
        write `DONE`. No record can be added afterwards without opening the cell again."""
        self._close_files()
        self._chunking = False
        try:
            if compact:
                self.compact()
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
        """What is left of `episodes.jsonl` appended to `episodes.jsonl.zst` (zstd frames of at most
        `CHUNK_MAX` bytes of whole lines, each synced), then the plain file removed; a kill in
        between leaves lines in both, read once and settled on the next open."""
        path = self.dir / EPISODES
        if not path.exists():
            return
        with open(path, "rb") as f:
            while chunk := f.read(CHUNK_MAX):
                chunk += f.readline()  # whole lines in each frame
                self._zst_bytes += append_frame(compacted(path), chunk, self.compact_level)
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
        self._chunking = False
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
        if idx["records"] == CellStore(cell_dir.parent, cell_dir.name)._records_signature() and records_whole(
            cell_dir / EPISODES
        ):
            return idx
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return None


def records_whole(path: Path) -> bool:
    """Whether a cell's compressed records can be vouched for by its index: an `.xz` file (a cell
    finished before zstd) must end in an xz stream footer (`xz_whole`); a `.zst` file of frames
    has no footer to check: the digest of its tail in the index's signature stands for it
    (`CellStore._records_signature`)."""
    return xz_whole(legacy_compacted(path))


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


def damaged_records_note(store_dir: Path, read_back: list[dict[str, Any]] | int, damage: str, where: str = "") -> str:
    """What a reader says of a store whose compacted records file is damaged: the file, what went
    wrong, how many finished episodes were read back (the records, or their count) and how many its
    index listed. `damage` as `record_lines` notes it: '<file name>: <what went wrong>'."""
    ok = (
        read_back
        if isinstance(read_back, int)
        else len({(r.get("task_id"), r.get("trial")) for r in read_back if r.get("status", "ok") == "ok"})
    )
    name, what = compacted(Path(EPISODES)).name, damage
    if damage.startswith(EPISODES):
        name, _, what = damage.partition(": ")
    try:
        listed: int | None = len(json.loads((store_dir / INDEX).read_bytes())["done"])
    except (OSError, ValueError, KeyError, TypeError):
        listed = None
    held = (
        f"its index lists {listed} finished episodes, {ok} could be read back ({max(0, listed - ok)} cannot be)"
        if listed is not None
        else f"{ok} finished episodes could be read back before the damage"
    )
    return (
        f"{where}{name} is damaged ({what}): {held}. Fix: run the same sweep "
        "command again: the episodes that cannot be read back run again, the damaged file is kept aside"
    )


def finished_texts(cell_dir: Path) -> list[dict[str, Any]]:
    """The finished records of one cell store as far as a text check needs them (`status`,
    `texts`): from its index when the cell is DONE and the index matches its records files
    (nothing parsed), else from the records, one at a time (equal fingerprints share one object)."""
    idx = _current_index(Path(cell_dir))
    try:
        if idx is not None:
            return [{"status": "ok", "texts": t} for t, n in idx["texts"] for _ in range(int(n))]
    except (KeyError, TypeError, ValueError):
        pass
    out: list[dict[str, Any]] = []
    shared: dict[str, Any] = {}
    for raw in record_lines(Path(cell_dir) / EPISODES):
        try:
            r = _record(raw)
        except ValueError:
            continue
        t = r.get("texts")
        out.append({"status": r.get("status"), "texts": shared.setdefault(json.dumps(t, sort_keys=True), t)})
    return out


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
        if d == own or not has_records(d / EPISODES):
            continue
        out |= finished_keys(d)
    return out


def _merge_shards(cell_dir: Path, manifest: dict[str, Any] | None) -> dict[str, Any]:
    """A sharded cell's manifest as one: n_tasks is the whole benchmark's, task_ids every shard's."""
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
    if manifest is None:
        raise StoreError(f"{cell_dir}: no manifest.json")
    manifest = {**manifest, "shards": [d.name for d in shard_dirs(cell_dir)]}
    if total is not None:
        manifest["n_tasks"] = total
    manifest["task_ids"] = ids  # every shard's tasks (the tables count these × trials)
    return manifest


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
    reqs = r.get("requests")
    if isinstance(reqs, list) and all(isinstance(x, dict) for x in reqs):
        r = {**r, "requests": []}  # its type checked here: pydantic would copy every step of the trajectory
    try:
        _AggregatedFields.model_validate(r)
    except ValidationError as e:
        err = e.errors()[0]
        return f"{'.'.join(str(x) for x in err['loc'])}: {err['msg']}"
    return None


def read_back(line: bytes) -> dict[str, Any] | None:
    """A record line just written, as `stream_cell` reads it back: the record, or None where a
    reader would skip it or set it aside (the sweep's fold of the tables, runners.run.TableFold)."""
    try:
        r = _record(line)
    except ValueError:
        return None
    return None if _field_problem(r) else r


def load_cell_checked(cell_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    """(manifest, finished records deduplicated by (task, trial), notes on lines set aside).
    A line whose fields have the wrong types (a hand edit, a foreign tool) is set aside with a
    note naming the field, never a crash of the aggregator."""
    manifest, records, notes = stream_cell(cell_dir)
    with paused_gc():
        out = list(records)
    return manifest, out, notes


def cell_manifest(cell_dir: Path) -> dict[str, Any]:
    """The cell's manifest as the readers see it: a cell run in shards (`runner.shard=i/n`) as one
    (`_merge_shards`). A missing or unreadable manifest is a `StoreError` naming the fix."""
    mpath = Path(cell_dir) / MANIFEST
    if shard_dirs(cell_dir):  # runner.shard=i/n: the shards' records together (and any unsharded ones)
        top = None
        if mpath.exists():
            try:
                top = json.loads(mpath.read_text())
            except ValueError:
                top = None
        return _merge_shards(cell_dir, top if isinstance(top, dict) else None)
    try:
        manifest = json.loads(mpath.read_text())
        if not isinstance(manifest, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as e:
        raise StoreError(f"{mpath}: unreadable manifest ({e}); re-run the sweep to rewrite it") from None
    return manifest


def stream_cell_lines(
    cell_dir: Path,
) -> tuple[dict[str, Any], Iterator[tuple[dict[str, Any], bytes | None]], list[str]]:
    """`load_cell_checked` as a stream, each record with its line: (manifest, the finished records
    deduplicated by (task, trial), one at a time as they are read, notes on lines set aside, filled
    as they are met). A cell run in shards (`runner.shard=i/n`) is read as one: every shard's
    records, then its own. Only the keys seen are held, never the records. Each record comes with
    its line as stored (without its newline) where that is standard JSON (`_read`), else None: what
    a reader may embed as is."""
    cell_dir = Path(cell_dir)
    manifest = cell_manifest(cell_dir)
    paths = [d / EPISODES for d in shard_dirs(cell_dir)] + [cell_dir / EPISODES]
    notes: list[str] = []

    def records() -> Iterator[tuple[dict[str, Any], bytes | None]]:
        seen: set[tuple[Any, Any]] = set()
        n = 0
        for path in paths:
            damage: list[str] = []
            read_back: set[tuple[Any, Any]] = set()  # this store's finished episodes read (for a damage note)
            for raw in record_lines(path, damage):
                try:
                    r, standard = _read(raw)
                except ValueError:  # not a record (read_jsonl's bad lines): skipped as before
                    continue
                n += 1
                if r.get("status", "ok") == "ok":
                    read_back.add((r.get("task_id"), r.get("trial")))
                problem = _field_problem(r)
                if problem:
                    notes.append(
                        f"{EPISODES} record {n} ({r.get('task_id')}#{r.get('trial')}) set aside: wrong field types "
                        f"({problem})"
                    )
                    continue
                k = (r.get("task_id"), r.get("trial"))
                if r.get("status") == "ok" and k not in seen:
                    seen.add(k)
                    yield r, raw.rstrip() if standard else None
            if damage:
                where = "" if path.parent == cell_dir else f"{path.parent.name}/"
                notes.append(damaged_records_note(path.parent, len(read_back), damage[0], where))

    return manifest, records(), notes


def stream_cell(cell_dir: Path) -> tuple[dict[str, Any], Iterator[dict[str, Any]], list[str]]:
    """`load_cell_checked` as a stream (`stream_cell_lines` without the lines)."""
    manifest, pairs, notes = stream_cell_lines(cell_dir)
    return manifest, (r for r, _ in pairs), notes
