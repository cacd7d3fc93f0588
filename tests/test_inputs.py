"""The shared data-file reader (runners/inputs.py) and the loaders that use it: lone surrogates
replaced at load and noted for the manifest; an empty file, a missing field and binary garbage are
errors that name the file, the line and the field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from runners import inputs
from runners.inputs import InputError, read_json, read_jsonl, sanitize

FIXTURES = Path(__file__).resolve().parents[1] / "benchmarks" / "memoryarena" / "fixtures"


def test_sanitize_replaces_lone_surrogates_everywhere():
    value = {"k\ud800": ["a\udfffb", {"x": "\ud83d"}], "ok": "😀 fine", "n": 3}
    out, n = sanitize(value)
    assert n == 3 and out == {"k\ufffd": ["a\ufffdb", {"x": "\ufffd"}], "ok": "😀 fine", "n": 3}
    json.dumps(out).encode("utf-8")  # storable
    clean = {"a": ["b"]}
    assert sanitize(clean) == (clean, 0) and sanitize(clean)[0] is clean


def test_read_jsonl_notes_replacements_with_file_and_line(tmp_path):
    f = tmp_path / "data.jsonl"
    f.write_text('{"id": 0, "q": "fine"}\n\n{"id": 1, "q": "bad \\ud800 here"}\n')
    before = inputs.noted()
    rows = read_jsonl(f, required=("id", "q"))
    assert rows[1]["q"] == "bad \ufffd here"
    assert inputs.notes_since(before) == {str(f): {"lone_surrogates_replaced": 1, "lines": [3]}}


@pytest.mark.parametrize(
    "content, says",
    [
        (b"", "no rows (the file is empty)"),
        (b"\n  \n", "no rows (the file is empty)"),
        (b'{"id": 0, "q": "x"}\n{"id": 1}\n', ":2: row has no field 'q'"),
        (b'{"id": 0, "q": "x"}\n\x89PNG\r\n\x1a\n\x00\x00\xff\xfe\n', ":2: not UTF-8 text"),
        (b'{"id": 0, "q": "x"}\n{"id": 1, "q": "trunc\n', ":2: not valid JSON"),
        (b"[1, 2]\n", ":1: expected a JSON object per line"),
    ],
)
def test_read_jsonl_errors_name_file_line_and_field(tmp_path, content, says):
    f = tmp_path / "data.jsonl"
    f.write_bytes(content)
    with pytest.raises(InputError) as e:
        read_jsonl(f, required=("id", "q"))
    assert str(f) in str(e.value) and says in str(e.value) and "Fix:" in str(e.value)


def test_read_json_names_line_of_bad_json_and_garbage(tmp_path):
    f = tmp_path / "x.json"
    f.write_bytes(b'{\n "a": 1,\n "b": \n}')
    with pytest.raises(InputError, match=r"x\.json:4: not valid JSON"):
        read_json(f)
    f.write_bytes(b'{"a": "\xff\xfe"}')
    with pytest.raises(InputError, match=r"x\.json:1: not UTF-8"):
        read_json(f)
    f.write_text('{"a": "\\udc00"}')
    assert read_json(f) == {"a": "\ufffd"}


def _arena(tmp_path: Path, text: bytes | None = None, edit=None) -> Path:
    d = tmp_path / "arena"
    shutil.copytree(FIXTURES, d)
    f = d / "formal_reasoning_math" / "data.jsonl"
    if text is not None:
        f.write_bytes(text)
    if edit is not None:
        rows = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
        edit(rows)
        f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return d


@pytest.mark.parametrize(
    "make, says",
    [
        (lambda t: _arena(t, b""), "data.jsonl: no rows"),
        (lambda t: _arena(t, edit=lambda rows: rows[1].pop("questions")), "data.jsonl:2: row has no field 'questions'"),
        (lambda t: _arena(t, b"\x00\x01\xff\xfe garbage \x89\n"), "data.jsonl:1: not UTF-8 text"),
    ],
)
def test_memoryarena_loader_names_file_line_and_field(tmp_path, make, says):
    from benchmarks.memoryarena.formal import FormalReasoning
    from benchmarks.memoryarena.loader import DataError

    d = make(tmp_path)
    with pytest.raises(DataError) as e:
        FormalReasoning(name="memoryarena_math", config="formal_reasoning_math", data_dir=str(d)).load_tasks()
    assert says in str(e.value) and str(d) in str(e.value)


def test_tau_and_clindiag_readers_sanitise_and_name_files(tmp_path):
    """τ² DB strings (tool outputs) and ClinDiag case files go through the same reader."""
    from benchmarks.clindiag.data import ClinDiagDataError
    from benchmarks.clindiag.data import read_json as clin_read
    from runners.inputs import loads

    case = tmp_path / "initial_information.json"
    case.write_text('{"history": "cough \\ud800 for 3 days"}')
    before = inputs.noted()
    assert clin_read(case) == {"history": "cough \ufffd for 3 days"}
    assert inputs.notes_since(before)[str(case)]["lone_surrogates_replaced"] == 1
    case.write_bytes(b"\xff\xd8\xff\xe0 jpeg")
    with pytest.raises(ClinDiagDataError, match="initial_information.json:1: not UTF-8"):
        clin_read(case)
    db = loads(b'{"users": {"u1": {"name": "Ann \\udfff"}}}', "db.json")
    assert db["users"]["u1"]["name"] == "Ann \ufffd"


def test_byte_order_mark_is_dropped_in_every_reader(tmp_path):
    # editors on Windows write a BOM first; it is not part of the data (a JSON parser refuses it)
    bom = b"\xef\xbb\xbf"
    (tmp_path / "x.json").write_bytes(bom + b'{"q": "caf\xc3\xa9"}')
    (tmp_path / "x.jsonl").write_bytes(bom + b'{"id": 0, "q": "a"}\n{"id": 1, "q": "b"}\n')
    (tmp_path / "x.txt").write_bytes(bom + b"first line\n")
    assert read_json(tmp_path / "x.json") == {"q": "café"}
    assert read_jsonl(tmp_path / "x.jsonl", required=("id", "q")) == [{"id": 0, "q": "a"}, {"id": 1, "q": "b"}]
    assert inputs.read_text(tmp_path / "x.txt") == "first line\n"


def test_replacement_counts_add_up_per_file_and_per_snapshot(tmp_path):
    # two lone surrogates on one line count as two; a second load of the same file adds to its note,
    # and a cell's manifest (notes_since) gets only what its own loads replaced
    f = tmp_path / "data.jsonl"
    f.write_text('{"id": 0, "q": "\\ud800 and \\udfff"}\n{"id": 1, "q": "fine"}\n{"id": 2, "q": "\\ud83d"}\n')
    start = inputs.noted()
    read_jsonl(f)
    assert inputs.notes_since(start) == {str(f): {"lone_surrogates_replaced": 3, "lines": [1, 3]}}
    second = inputs.noted()
    read_jsonl(f)
    assert inputs.noted()[str(f)]["lone_surrogates_replaced"] == 6
    assert inputs.notes_since(second) == {str(f): {"lone_surrogates_replaced": 3, "lines": [1, 3]}}
