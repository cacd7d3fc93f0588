"""Reading benchmark data files: one place every loader goes through, so that what reaches a
prompt, a tool output or a record is valid text and a bad file is an error that names the file,
the line and the field.

- Lone surrogates (`"\\ud800"`: a valid JSON escape that no UTF-8 file can store) are replaced by
  U+FFFD at load, and each replacement is noted (`noted()`): the run writes the notes into the
  cell's manifest (`input_hygiene`), so a run on such data says what was changed. Without this a
  single escape in a task text makes every episode of that task fail at record storage, on every
  resume (UTF-8 cannot encode it). Harness choice: replace and note, rather than refuse the file,
  because upstream data sets carry such escapes and the replacement changes one character.
- Bytes that are not UTF-8, a line that is not JSON, a row that is not an object, a row without a
  required field and a file without any row are `InputError`s naming the file and line (and field),
  in the project's `… Fix: …` style.

`sanitize` is also what the OpenAI-compatible backbone applies to replies (runners/backbones/openai.py).
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any, Iterable, Iterator

_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


class InputError(ValueError):
    """A data file the harness cannot use; the message names the file, line and field, and the fix."""


def sanitize(value: Any) -> tuple[Any, int]:
    """`value` (decoded JSON, or a string) with lone surrogates replaced by U+FFFD, and how many
    were replaced. Values without any are returned as they are (same objects)."""
    if isinstance(value, str):
        if not _SURROGATE.search(value):
            return value, 0
        return _SURROGATE.subn(REPLACEMENT, value)
    if isinstance(value, dict):
        total, out = 0, {}
        for k, v in value.items():
            k2, a = sanitize(k)
            v2, b = sanitize(v)
            out[k2] = v2
            total += a + b
        return (out, total) if total else (value, 0)
    if isinstance(value, (list, tuple)):
        items = [sanitize(v) for v in value]
        total = sum(n for _, n in items)
        if not total:
            return value, 0
        seq = [v for v, _ in items]
        return (tuple(seq) if isinstance(value, tuple) else seq), total
    return value, 0


# ------------------------------------------------------------------ notes for the manifest
_NOTES: dict[str, dict[str, Any]] = {}
_LOCK = threading.Lock()


def note(source: str | Path, replaced: int, lines: Iterable[int] = ()) -> None:
    """Record that `replaced` lone surrogates were replaced in `source` (at `lines`, if known)."""
    if not replaced:
        return
    with _LOCK:
        entry = _NOTES.setdefault(str(source), {"lone_surrogates_replaced": 0, "lines": []})
        entry["lone_surrogates_replaced"] += replaced
        for n in lines:
            if n not in entry["lines"] and len(entry["lines"]) < 20:
                entry["lines"].append(n)


def noted() -> dict[str, dict[str, Any]]:
    """Every replacement noted in this process so far: source → {lone_surrogates_replaced, lines}."""
    with _LOCK:
        return {k: {**v, "lines": list(v["lines"])} for k, v in _NOTES.items()}


def notes_since(before: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The notes added after the snapshot `before` (a `noted()` result), for one cell's manifest."""
    now = noted()
    out = {}
    for k, v in now.items():
        old = before.get(k, {}).get("lone_surrogates_replaced", 0)
        if v["lone_surrogates_replaced"] > old:
            out[k] = {**v, "lone_surrogates_replaced": v["lone_surrogates_replaced"] - old}
    return out


# ------------------------------------------------------------------ readers
def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def decode(data: bytes, source: str | Path) -> str:
    """`data` as UTF-8 text (a BOM dropped); bytes that are not UTF-8 are an InputError naming the
    file and line. Lone surrogates cannot occur in decoded UTF-8, so none are checked."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            f"{source}:{_line_of(data, e.start)}: not UTF-8 text (byte {data[e.start : e.start + 1]!r} at offset "
            f"{e.start}); the file is damaged or binary. Fix: restore or re-download it"
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


def read_text(path: str | Path) -> str:
    """A text file (UTF-8) read whole, with `decode`'s errors."""
    p = Path(path)
    return decode(p.read_bytes(), p)


def loads(data: bytes | str, source: str | Path, line: int | None = None) -> Any:
    """One JSON document (a whole file, or line `line` of one): parsed, lone surrogates replaced
    (and noted against `source`); any failure is an InputError naming the file (and line)."""
    where = f"{source}:{line}" if line is not None else str(source)
    text = decode(data, source) if isinstance(data, bytes) else data
    try:
        value = json.loads(text)
    except ValueError as e:
        at = f"{source}:{(line or 1) + getattr(e, 'lineno', 1) - 1}" if hasattr(e, "lineno") else where
        raise InputError(f"{at}: not valid JSON ({e}). Fix: restore or re-download the file") from None
    value, n = sanitize(value)
    note(source, n, [line] if line is not None else [])
    return value


def read_json(path: str | Path) -> Any:
    """A JSON file, with `loads`' hygiene and errors."""
    p = Path(path)
    return loads(p.read_bytes(), p)


def read_jsonl(path: str | Path, *, required: Iterable[str] = (), allow_empty: bool = False) -> list[dict[str, Any]]:
    """The rows (JSON objects, one a line; blank lines skipped) of a JSONL file. Errors name file
    and line: bytes that are not UTF-8, a line that is not JSON or not an object, a row missing a
    `required` field; a file without any row is an error too unless `allow_empty`."""
    return [row for _, _, _, row in iter_jsonl(path, required=required, allow_empty=allow_empty)]


def iter_jsonl(
    path: str | Path, *, required: Iterable[str] = (), allow_empty: bool = False
) -> Iterator[tuple[int, int, int, dict[str, Any]]]:
    """`read_jsonl` streamed: (line number, byte offset, byte length, row) of each row, the file
    read a line at a time (never whole), with `read_jsonl`'s checks and errors."""
    p = Path(path)
    need = tuple(required)
    any_row = False
    offset = 0
    with open(p, "rb") as f:
        for n, raw in enumerate(f, 1):
            start, offset = offset, offset + len(raw)
            if not raw.strip():
                continue
            body = raw[:-1] if raw.endswith(b"\n") else raw  # as `split(b"\n")` gave it: errors name this line
            yield n, start, len(body), parse_row(body, p, n, need)
            any_row = True
    if not any_row and not allow_empty:
        raise InputError(
            f"{p}: no rows (the file is empty). Fix: restore or re-download the file, or point the benchmark's "
            "data_dir at the right directory"
        )


def parse_row(raw: bytes, p: Path, n: int, need: tuple[str, ...] = (), *, noting: bool = True) -> dict[str, Any]:
    """Line `n` of the JSONL file `p` (its bytes `raw`) as a row, with `read_jsonl`'s checks and
    errors; `noting=False` parses a row read before (its replacements were noted then)."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            f"{p}:{n}: not UTF-8 text (byte {raw[e.start : e.start + 1]!r} at column {e.start + 1}); the line is "
            "damaged or binary. Fix: restore or re-download the file"
        ) from None
    if n == 1:
        line = line.removeprefix("\ufeff")  # a byte-order mark, as `decode` drops it for a whole file
    if noting:
        row = loads(line, p, n)
    else:
        try:
            row = sanitize(json.loads(line))[0]
        except ValueError as e:
            raise InputError(f"{p}:{n}: not valid JSON ({e}). Fix: restore or re-download the file") from None
    if not isinstance(row, dict):
        raise InputError(
            f"{p}:{n}: expected a JSON object per line, got {type(row).__name__}. Fix: restore or re-download the file"
        )
    missing = [f for f in need if f not in row]
    if missing:
        raise InputError(
            f"{p}:{n}: row has no field {', '.join(repr(f) for f in missing)} (fields: "
            f"{', '.join(sorted(row)) or 'none'}). Fix: restore or re-download the file"
        )
    return row
