"""PACE: relevance maths, per-step summaries, level selection, budget step-down and glimpse."""

import json

import numpy as np
import pytest

from baselines.pos_baselines import relevance
from baselines.pos_baselines.pace import Pace
from tests.pos_baselines.helpers import FnBackbone, act, drive, tool


def test_weights_thresholds_pressure_and_levels():
    q = np.array([1.0, 0.0])
    keys = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    w = relevance.relative_weights(q, keys, tau=0.3)
    assert w.sum() == pytest.approx(3.0) and w[0] > 1.5 > w[1] == pytest.approx(w[2])
    assert relevance.pressure(25, 50, 64000, 128000) == pytest.approx(0.5)
    assert relevance.pressure(10, 50, 100000, 128000) == pytest.approx(100000 / 128000)
    th = relevance.thresholds((0.4, 0.8, 1.5), 0.5, 1.0)
    assert th == pytest.approx((0.6, 1.2, 2.25))
    assert [relevance.level(x, (0.4, 0.8, 1.5)) for x in (2.0, 1.5, 1.0, 0.8, 0.5, 0.4, 0.1)] == [
        "full",
        "detailed",
        "detailed",
        "brief",
        "brief",
        "placeholder",
        "placeholder",
    ]
    levels = ["full", "brief", "detailed"]
    assert relevance.step_down(levels, [0.5, 0.1, 0.3]) == 1 and levels == ["full", "placeholder", "detailed"]
    assert relevance.step_down(levels, [0.5, 0.1, 0.3]) == 1 and levels == ["full", "omit", "detailed"]
    assert relevance.step_down(["omit"], [1.0]) is None


def test_tfidf_prefers_shared_rare_terms():
    v = relevance.TfidfEncoder().encode(
        ["golden key drawer", "the golden key is in drawer 3", "you see a sofa and a lamp"]
    )
    assert v[0] @ v[1] > v[0] @ v[2] >= 0


def summarizer(role, messages):
    if role == "agent":
        return act("look")
    step = messages[-1]["content"].split("<step>")[1]
    sid = step.split("Step ")[1].split(" ")[0]
    return json.dumps({"detailed": f"DETAILED-{sid}", "brief": f"BRIEF-{sid}"})


def filler(i):
    return " ".join(f"thing{i}n{j}" for j in range(15))


OBS = [filler(1), "the golden key is in the drawer; golden key, drawer 3", *(filler(i) for i in range(3, 8))]


def test_each_step_is_summarised_and_older_chunks_shown_by_relevance():
    bb = FnBackbone(summarizer)
    m = Pace(bb)
    drive(m, ["", *OBS], query="Your task is to: find the golden key in the drawer.")
    assert len(bb.of("memory")) == len(OBS)  # one synchronous summary per completed step
    log = m.step_log()
    older = list(log["levels"])
    assert older == list(range(1, len(OBS) - 1))  # all but the N=2 most recent chunks
    assert max(log["weights"], key=log["weights"].get) == 2  # the golden-key step
    assert log["levels"][2] == "full" and {log["levels"][i] for i in (1, 3, 4, 5)} == {"brief"}
    p = bb.prompt()
    history = p.split("<history>")[1].split("</history>")[0]
    assert "[Step 1 | brief] BRIEF-1" in history and "golden key is in the drawer" in history
    recent = p.split("<recent_steps>")[1].split("</recent_steps>")[0]
    assert "Step 6 action" in recent and "Step 7 action" in recent and "Step 5 action" not in recent
    assert '"name": "glimpse"' in bb.of("agent")[-1]["messages"][0]["content"]


def test_budget_steps_chunks_down():
    bb = FnBackbone(summarizer)
    m = Pace(bb, b_max=780, reserve_tokens=0)
    drive(m, ["", *OBS], query="Your task is to: find the golden key in the drawer.")
    log = m.step_log()
    assert log["budget_step_downs"] > 0 and log["context_tokens"] <= 780
    order = ["full", "detailed", "brief", "placeholder", "omit"]
    top = min(log["levels"].values(), key=order.index)
    assert log["levels"][2] == top != "omit"  # the most relevant chunk is stepped down last
    assert {"placeholder", "omit"} & set(log["levels"].values())


def test_glimpse_is_answered_in_the_same_step_without_an_env_action():
    script = iter([act("look"), act("look"), tool("glimpse", step_id=1), act("open drawer 3")])
    bb = FnBackbone(lambda role, msgs: next(script) if role == "agent" else json.dumps({"detailed": "d", "brief": "b"}))
    m = Pace(bb, recent_full=1)
    decisions = drive(m, ["", "the golden key is in drawer 3", "a sofa"])
    assert [c.name for c in decisions[-1].tool_calls] == ["act"]  # glimpse never reaches the environment
    assert m.step_log()["policy_calls"] == 2 and m.step_log()["lookups"] == [{"step_id": 1}]
    assert "Full record of step 1:" in bb.prompt() and "golden key is in drawer 3" in bb.prompt()


def test_pressure_override_per_benchmark():
    m = Pace(FnBackbone(summarizer), kind_overrides={"loca": {"t_max": 100}})
    drive(m, [""], benchmark="loca_128k", kind="loca")
    assert m.cfg.t_max == 100
    with pytest.raises(ValueError, match="conf/method/pace.yaml"):
        Pace(FnBackbone(summarizer), tmax=3)
