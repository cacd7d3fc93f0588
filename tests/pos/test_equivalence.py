"""`python -m pos.equivalence`: our PoS arithmetic against upstream's own formulas (the pinned
belief/trappingDetection.py and progressScoring.py, executed at run time) on the windows of
recorded episodes: a trapped looping room (health windows) and RCA-100 fixture cases (diagnostic
labels), with the scripted backbone."""

from __future__ import annotations

import asyncio
import json
import lzma

import pytest

import pos.equivalence as eq
from benchmarks.rca100.benchmark import Rca100
from benchmarks.rca100.synth import write_fixture
from pos.method import PoS
from runners.backbones.scripted import ScriptedBackbone
from runners.episode import Episode
from tests.pos.helpers import LoopEnv
from tests.pos.test_episode import params
from tests.conftest import upstream_src


def recorded(tmp_path):
    out = tmp_path / "episodes.jsonl"
    recs = []
    ep = Episode(ScriptedBackbone(), cell="pos", task_id="loop")
    recs.append(asyncio.run(ep.run(LoopEnv(budget=16), PoS(ep.agent, **params("pos")))))
    bench = Rca100(name="rca100", data_dir=str(write_fixture(tmp_path / "rca")), max_steps=6)
    for task in bench.load_tasks()[:2]:
        ep = Episode(ScriptedBackbone(malformed_rate=0.0), cell="pos", task_id=task.task_id)
        recs.append(
            asyncio.run(ep.run(ep.make_env(bench, task), PoS(ep.agent, **params("pos") | {"task_mode": "diagnostic"})))
        )
    assert all(r.status == "ok" for r in recs), [r.error for r in recs]
    out.write_text("".join(r.model_dump_json() + "\n" for r in recs))
    return out


@pytest.mark.parametrize("given", ["file", "finished cell"])
def test_recorded_windows_match_upstream(tmp_path, capsys, given):
    upstream_src()  # runs upstream's belief/trappingDetection.py
    path = recorded(tmp_path)
    if given == "finished cell":  # its records compacted to episodes.jsonl.xz; the cell directory is given
        path.with_name(path.name + ".xz").write_bytes(lzma.compress(path.read_bytes()))
        path.unlink()
        path = path.parent
    assert eq.main([str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["windows"] >= 8 and report["diagnostic_labels"] >= 1 and report["mismatches"] == 0
    assert report["upstream"][0]["path"] == "belief/trappingDetection.py"


def test_a_changed_formula_is_caught(tmp_path, monkeypatch):
    upstream_src()  # runs upstream's belief/trappingDetection.py
    path = recorded(tmp_path)
    real = eq.detect

    def off_by_a_bit(snaps, cfg):
        rep = real(snaps, cfg)
        return rep.model_copy(update={"health_score": rep.health_score - 0.01}) if rep.window_ready else rep

    monkeypatch.setattr(eq, "detect", off_by_a_bit)
    report = eq.check([path])
    assert report["mismatches"] > 0 and report["examples"][0]["field"] == "health_score"
