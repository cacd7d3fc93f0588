"""A local server moved to another port is the same cell: the endpoint address (`base_url`) is
not part of the cell's identity, so a resume against the new address runs only the missing
episodes, and a cell stored while the address was still in its name is adopted, not run again."""

import json

from runners.config import validate
from runners.records.store import EPISODES, read_jsonl
from tests.fake_openai import FakeOpenAI, react_responder
from tests.runners.sweep_helpers import fake_endpoint, run_sweep
from tests.runners.test_config import base


def args(srv, limit):
    return (
        *fake_endpoint(srv),
        "benchmark=memoryarena_math",
        "benchmark.params.data_dir=fixtures",
        "method=full_context",
        "runner.cache=false",  # every episode that runs reaches the server
        f"runner.limit={limit}",
        "experiment.name=moved",
    )


def cells(root):
    return sorted(p for p in (root / "moved").iterdir() if (p / "manifest.json").exists())


def test_key_leaves_out_the_address_keeps_the_model_and_sampling():
    raw = base()
    raw["backbone"] = {**raw["backbone"], "kind": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1"}
    a = validate(raw)
    moved = validate({**raw, "backbone": {**raw["backbone"], "base_url": "http://127.0.0.1:2/v1"}})
    other_model = validate({**raw, "backbone": {**raw["backbone"], "model": "n"}})
    hotter = validate({**raw, "backbone": {**raw["backbone"], "sampling": {"temperature": 0.7}}})
    assert a.key() == moved.key()
    assert len({a.key(), other_model.key(), hotter.key()}) == 3


def test_resume_on_another_port_runs_no_episode_again(tmp_path):
    with FakeOpenAI(react_responder) as a, FakeOpenAI(react_responder) as b:  # b: the server on another port
        p = run_sweep(tmp_path, *args(a, 1))
        assert p.returncode == 0, p.stderr[-3000:]
        first = a.requests
        assert first > 0
        (cell,) = cells(tmp_path)
        urls = (a.base_url, b.base_url)
        assert urls[0] != urls[1]
        p = run_sweep(tmp_path, *args(b, 1))
        assert p.returncode == 0, p.stderr[-3000:]
        assert b.requests == 0 and a.requests == first, p.stdout  # nothing ran again
        p = run_sweep(tmp_path, *args(b, 2))  # one more task: only that one runs
        assert p.returncode == 0, p.stderr[-3000:]
        assert b.requests > 0
    assert cells(tmp_path) == [cell]
    recs = read_jsonl(cell / EPISODES)[0]
    assert len(recs) == 2 and len({r["task_id"] for r in recs}) == 2
    runs = json.loads((cell / "manifest.json").read_text())["runs"]
    assert [r["endpoints"]["agent"] for r in runs] == [urls[0], urls[1], urls[1]]


def test_cell_stored_under_its_former_name_is_adopted(tmp_path):
    with FakeOpenAI(react_responder) as a:
        assert run_sweep(tmp_path, *args(a, 1)).returncode == 0
    (cell,) = cells(tmp_path)
    former = cell.with_name(cell.name.rsplit("__", 1)[0] + "__0123456789")  # a key that held the address
    cell.rename(former)
    with FakeOpenAI(react_responder) as b:
        p = run_sweep(tmp_path, *args(b, 1), "runner.plan=true")  # the plan counts the stored episode as done
        assert p.returncode == 0 and b.requests == 0, p.stderr[-3000:]
        assert former.exists()  # the plan writes nothing
        p = run_sweep(tmp_path, *args(b, 1))
        assert p.returncode == 0, p.stderr[-3000:]
        assert b.requests == 0, p.stdout
    assert "resumed from " + former.name in p.stdout
    assert cells(tmp_path) == [cell] and not former.exists()
    assert len(read_jsonl(cell / EPISODES)[0]) == 1
