"""The ClinDiag protocol (docs/pos-benchmarks.md §3.5, §3.6): tools and provider on the fixture and on
the real shared cases, bad inputs as error observations, submission, judge and metrics."""

from __future__ import annotations

import asyncio

from benchmarks.clindiag.benchmark import ClinDiag
from benchmarks.clindiag.provider import NOT_SPECIFIED, keyword_answer
from runners.api import Decision, EpisodeContext, ToolCall
from tests.clindiag.helpers import ListBackbone
from tests.conftest import shared_path, upstream_src


def make_env(case: str, data_dir: str = "fixtures", backbones: dict | None = None, **settings):
    b = ClinDiag(name="clindiag", data_dir=data_dir, **settings)
    task = next(t for t in b.load_tasks() if t.task_id == case)
    env = b.make_env(task, EpisodeContext(backbones=backbones or {}))
    req = asyncio.run(env.next_request())
    return env, req


def ask(env, name: str, **args):
    r = asyncio.run(env.act(Decision(tool_calls=[ToolCall(name=name, arguments=args, id="c1")])))
    return r, (r.observation.tool_results[0] if r.observation.tool_results else None)


def test_request_view_and_keyword_provider():
    env, req = make_env("rare900", provider="keyword", judge="scripted", adapter="project")
    assert req.observation is None and (
        '"initial_presentation": "A 34-year-old fictional woman' in req.text
        and "one specific question per turn" in req.text
    )
    assert [t.name for t in env.view().tools][-1] == "submit_diagnosis" and env.step_budget() == 30
    _, res = ask(env, "ask_history", question="Does anyone in the family have nosebleeds?")
    assert "aunt" in res.content and not res.error
    _, res = ask(env, "ask_physical_exam", question="What are the vital signs, heart rate?")
    assert "98 bpm" in res.content
    _, res = ask(env, "order_other_test", question="Was a CT angiogram done?")
    assert res.content == env.texts["no_record"] and not res.error  # no other_test.json
    _, res = ask(env, "order_radiographic_test", question="Chest imaging?")
    assert res.content == NOT_SPECIFIED  # the record is "None has been performed." (no keyword hit)
    assert env.queries["ask_history"] == 1


def test_llm_provider_uses_role_user_sim_and_caps_the_reply():
    bb = ListBackbone(["", "  " + "x" * 50 + "  "])
    env, _ = make_env("challenging__90000002", backbones={"user_sim": bb}, observation_max_chars=20)
    _, res = ask(env, "order_lab_test", question="What is the ANA titre?")
    assert [c["role"] for c in bb.calls] == ["user_sim", "user_sim"] and [c["attempt"] for c in bb.calls] == [0, 1]
    system = bb.calls[0]["messages"][0]["content"]
    assert system.startswith(env.texts["provider_system"].split("{scope}")[0]) and env.texts["scope"]["lab"] in system
    assert "Antinuclear antibodies" in system and "Kidney biopsy" not in system
    assert bb.calls[0]["messages"][1] == {"role": "user", "content": "What is the ANA titre?"}
    sampling = bb.calls[0]["sampling"]  # the release's clindiag_provider_model (the project's values without it)
    assert sampling.get("max_tokens", sampling.get("max_completion_tokens")) == 1024
    assert sampling["top_p"] is None  # the release sends none
    assert res.content == "x" * 20 + "\n[answer truncated at 20 characters]"


def test_missing_record_is_asked_of_the_provider_unless_switched_off():
    bb = ListBackbone(["Not specified in the record."])
    env, _ = make_env("rare900", backbones={"user_sim": bb})
    _, res = ask(env, "order_other_test", question="Was a CT angiogram done?")
    assert [c["role"] for c in bb.calls] == ["user_sim"] and res.content == "Not specified in the record."
    system = bb.calls[0]["messages"][0]["content"]
    assert system == env.texts["provider_system"].format(
        scope=env.texts["scope"]["other"], record=env.texts["no_record"]
    )
    assert bb.calls[0]["messages"][1] == {"role": "user", "content": "Was a CT angiogram done?"}
    bb = ListBackbone(["unused"])
    env, _ = make_env("rare900", backbones={"user_sim": bb}, no_record_provider_call=False)
    _, res = ask(env, "order_other_test", question="Was a CT angiogram done?")
    assert bb.calls == [] and res.content == env.texts["no_record"] and not res.error
    _, res = ask(env, "ask_history", question="Any nosebleeds?")  # a present section still asks the provider
    assert [c["role"] for c in bb.calls] == ["user_sim"] and res.content == "unused"


def test_bad_inputs_are_error_observations():
    env, _ = make_env("90000001", provider="keyword")
    for name, args, fragment in [
        ("ask_history", {}, "exactly one argument"),
        ("ask_history", {"question": "  "}, "non-empty"),
        ("ask_history", {"question": 42}, "question string"),
        ("order_lab_test", {"question": "x", "urgent": True}, "exactly one"),
        ("order_mri", {"question": "brain?"}, "Unknown tool"),
        ("ask_history", {"question": "read answer_key/x.json"}, "answer_key"),
        ("submit_diagnosis", {"final_diagnosis": ""}, "non-empty"),
        ("submit_diagnosis", {"differential_diagnosis": "x"}, "non-empty"),
    ]:
        r, res = ask(env, name, **args)
        assert res.error and fragment in res.content and not r.request_done, (name, args)
    r = asyncio.run(env.act(Decision(message="It is diabetes")))
    assert "No tool was called" in r.observation.note and not r.request_done
    r = asyncio.run(env.act(Decision(tool_calls=[ToolCall(name="ask_history", arguments={"question": "thirst?"})] * 2)))
    assert len(r.observation.tool_results) == 1 and "1 further call(s)" in r.observation.note
    assert env.turn == 10 and sum(env.queries.values()) == 1


def test_forced_submission_note_before_the_last_turn():
    env, _ = make_env("90000001", provider="keyword", max_steps=2)
    r, _ = ask(env, "ask_history", question="thirst?")
    assert "submit_diagnosis" in r.observation.note  # upstream's wording, or the project's own without upstream


def test_forced_submission_note_is_upstreams_directive():
    upstream_src()
    env, _ = make_env("90000001", provider="keyword", max_steps=2)
    r, _ = ask(env, "ask_history", question="thirst?")
    assert (
        "This is the final interaction turn" in r.observation.note and "submit_diagnosis" in r.observation.note
    )  # upstream CLINDIAG_FINAL_TURN_DIRECTIVE


def test_submission_judge_and_scores():
    judge_bb = ListBackbone(['{"diagnosis_correct": false, "differential_hit": true, "reason": "broader"}'])
    env, _ = make_env("90000001", provider="keyword", backbones={"judge": judge_bb})
    r, res = ask(env, "submit_diagnosis", final_diagnosis="Diabetes mellitus", differential_diagnosis=["T2DM", "MODY"])
    assert r.request_done and not res.error
    out = asyncio.run(env.end_request(truncated=False, steps=1))
    assert out.final_response == "Diabetes mellitus"
    assert judge_bb.calls[0]["role"] == "judge" and judge_bb.calls[0]["sampling"]["response_format"] == {
        "type": "json_object"
    }
    s = asyncio.run(env.score_task())
    assert (s["success"], s["diagnosis_correct"], s["differential_hit"]) == (0, False, True)
    assert s["submission"]["differential_diagnosis"] == "T2DM; MODY" and s["judge"] == "llm"


def test_no_submission_is_incorrect_without_a_judge_call():
    judge_bb = ListBackbone([])
    env, _ = make_env("rare900", provider="keyword", backbones={"judge": judge_bb})
    ask(env, "ask_history", question="nosebleeds?")
    asyncio.run(env.end_request(truncated=True, steps=30))
    s = asyncio.run(env.score_task())
    assert s["diagnosis_correct"] is False and s["submitted"] is False and judge_bb.calls == []


def test_metrics():
    b = ClinDiag(name="clindiag", data_dir="fixtures")
    eps = [
        {"scores": {"diagnosis_correct": c, "differential_hit": h, "submitted": True, "subset": sub}}
        for c, h, sub in (
            (True, True, "rare"),
            (False, True, "rare"),
            (False, False, "challenging"),
            (True, False, "challenging"),
        )
    ]
    m = b.metrics(eps)
    assert (
        m["diagnosis_accuracy"] == 50.0 and m["differential_hit_rate"] == 50.0 and m["diagnosis_accuracy_rare"] == 50.0
    )


def test_tools_on_real_cases():
    root = shared_path("clindiag")
    env, req = make_env("rare1", data_dir=str(root), provider="keyword")
    assert "frequent vomiting and aspiration pneumonia" in req.text
    _, res = ask(env, "order_other_test", question="What did the laryngoscopy show?")
    assert "type III" in res.content
    env, _ = make_env("sample_24703566", data_dir=str(root), provider="keyword", manifest="none")
    _, res = ask(env, "ask_physical_exam", question="What was the BMI and weight?")
    assert res.content != NOT_SPECIFIED and not res.error
    env, _ = make_env("rare1", data_dir=str(root), provider="keyword", pos_section_match=True)
    _, res = ask(env, "order_other_test", question="laryngoscopy?")
    assert res.content == env.texts["no_record"]  # git-history `other_tests` fails PoS's 12-char rule (§3.2)


def test_keyword_answer_skips_not_specified_lines():
    rec = {"chief_complaint": "cough", "family_history": "Not specified"}
    assert keyword_answer(rec, "Any family history of asthma?") == NOT_SPECIFIED
    assert keyword_answer(rec, "What is the chief complaint?") == "chief_complaint: cough"
