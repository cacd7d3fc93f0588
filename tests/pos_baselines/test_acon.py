"""ACON context construction: what the policy sees after N steps and what triggers compression."""

import json

from baselines.pos_baselines.acon import Acon
from tests.pos_baselines.helpers import FnBackbone, act, drive


def answer(summary="SUMMARY-{n}"):
    n = {"i": 0}

    def fn(role, messages):
        if role == "agent":
            return act("go to drawer 1")
        n["i"] += 1
        return json.dumps({"summary": summary.format(n=n["i"])})

    return fn


def obs(i, words=5):
    return f"obs{i} " + " ".join(f"w{i}x{j}" for j in range(words))


def test_below_thresholds_prompt_holds_every_raw_step_and_no_compressor_call():
    bb = FnBackbone(answer())
    drive(Acon(bb), ["", *(obs(i) for i in range(1, 5))])
    assert bb.of("memory") == []
    p = bb.prompt()
    assert "<summary_of_earlier_steps>\n(none yet)" in p
    for i in range(1, 4):
        assert f"Observation: obs{i} " in p  # earlier observations in the recent steps
    assert "<latest_observation>\nobs4 " in p and "Observation: obs4" not in p  # the latest is shown once
    assert p.count("Step 4 action") == 1 and "its result is the latest observation" in p


def test_history_over_threshold_folds_all_but_last_turn_into_a_rolling_summary():
    bb = FnBackbone(answer())
    m = Acon(bb, history_threshold_tokens=120, obs_threshold_tokens=10_000)
    drive(m, ["", *(obs(i, 20) for i in range(1, 9))])
    calls = bb.of("memory")
    assert len(calls) >= 2
    assert "<previous_summary>\nSUMMARY-1" in calls[1]["messages"][-1]["content"]  # rolling: the old summary is merged
    p = bb.prompt()
    assert f"<summary_of_earlier_steps>\nSUMMARY-{len(calls)}" in p
    recent = p.split("<recent_steps>")[1].split("</recent_steps>")[0]
    assert recent.count("action:") == 1 and "Step 8 action" in recent  # keep_last_turns = 1
    assert "obs1 " not in p  # folded away
    assert m.step_log()["summary_tokens"] > 0


def test_long_observation_is_compressed_before_it_enters_the_context():
    bb = FnBackbone(answer("SHORT-{n}"))
    long = "drawer 3 holds " + " ".join(f"item{j}" for j in range(600))
    drive(Acon(bb), ["", long])
    (call,) = bb.of("memory")
    assert "<new_observation>" in call["messages"][-1]["content"] and "item599" in call["messages"][-1]["content"]
    p = bb.prompt()
    assert "[compressed observation] SHORT-1" in p and "item599" not in p


def test_failed_compressor_keeps_raw_text():
    bb = FnBackbone(lambda role, m: act("look") if role == "agent" else "no json here")
    m = Acon(bb, obs_threshold_tokens=5, aux_max_json_retries=1)
    drive(m, ["", "a fairly long observation with many words in it"])
    assert len(bb.of("memory")) == 2  # one re-ask
    assert m.step_log()["obs_compression"]["failed"] and "many words in it" in bb.prompt()
