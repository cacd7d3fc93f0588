"""FlowState App. B.3 as the text source of the five paper templates (kit/b3.py, docs/texts.md).

Scripted sweeps on MemoryArena math fixtures, messages read back through runners.records.results:
with `$HARNESS_FLOWSTATE_B3` at the shared transcription, every agent call of FlowState, Full
Context, BM25 (memory system), ZipAct (state tracking) and ZipAct+BM25 (state tracking + memory) is
its B.3 template with the fields filled, every literal part byte for byte (templates taken from the
loader's parse of the shared file); without it the cells are marked paraphrased; the project's
additions are named switches, off with B.3 unless set."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kit import b3 as b3text
from baselines.zipact_prompts import STATE_TRACKING_RULES
from kit.prompting import REACT_RULES
from tests.conftest import shared_path
from tests.runners.sweep_helpers import REPO
from tests.upstream_texts import cell_calls


def template_regex(template: str) -> re.Pattern[str]:
    """A B.3 template as a regex: each `{name}` field anything, every other character (JSON braces
    included: B.3 is not `str.format` syntax) byte for byte."""
    out, pos = [], 0
    for m in b3text.FIELD.finditer(template):
        out += [re.escape(template[pos : m.start()]), "(.*?)"]
        pos = m.end()
    out.append(re.escape(template[pos:]))
    return re.compile("".join(out), re.DOTALL)


METHODS = {
    "flowstate": "flowstate",
    "full_context": "full_context",
    "bm25": "memory",
    "zipact": "state_tracking",
    "zipact_bm25": "state_tracking_memory",
}
INDEX_FIELDS = {"prior_query", "prior_query_id", "historical_state_id", "historical_state_summary"}
RELATED_FIELDS = {"related_state_id", "relation"}
ACTIVE_FIELDS = {"active_state_id", "state_type", "active_state_summary", "state_value_json"}
SWITCHES = ("no_history_rule", "cite_raw_results", "exclusive_decision")


def b3_file() -> Path:
    return shared_path("paper-text", "flowstate_b3.txt")


def sweep(out: Path, name: str, methods: list[str], *overrides: str, b3: Path | None) -> dict[str, Path]:
    env = {k: v for k, v in os.environ.items() if k not in (b3text.ENV_FILE, "HARNESS_UPSTREAM_DIR")}
    env.update(PYTHONPATH=str(REPO), HARNESS_UPSTREAM_OFFLINE="1")
    if b3 is not None:
        env[b3text.ENV_FILE] = str(b3)
    cmd = [
        sys.executable,
        "-m",
        "runners.sweep",
        f"++experiment.grid.method=[{','.join(methods)}]",
        "benchmark=memoryarena_math",
        "benchmark.params.data_dir=fixtures",
        "runner.limit=1",
        f"runner.output_dir={out}",
        "runner.display=none",
        f"experiment.name={name}",
        *overrides,
    ]
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    cells = {c.name.split("__")[0]: c for c in (out / name).glob("*__scripted__*")}
    assert sorted(cells) == sorted(methods)
    return cells


@pytest.fixture(scope="module")
def parsed() -> b3text.B3:
    """The transcription's templates as the paper shows them: the extraction's typographic fence
    (three U+2018) read as the code fence (three backticks), the loader's default."""
    f = b3_file()
    b3 = b3text.parse(f.read_text(encoding="utf-8"), path=str(f))
    fence = "\u2018" * 3
    return b3text.B3(
        path=b3.path,
        sha256=b3.sha256,
        templates={
            k: b3text.Template(t.system.replace(fence, "```"), t.input.replace(fence, "```"))
            for k, t in b3.templates.items()
        },
    )


def test_found_beside_the_upstream_sources_fence_and_off(tmp_path, monkeypatch):
    """`$HARNESS_UPSTREAM_DIR` at a folder with `paper-text/` beside it finds B.3; the fence is the
    paper's code fence unless `$HARNESS_FLOWSTATE_B3_FENCE=as_written`; `$HARNESS_FLOWSTATE_B3=off`
    keeps the project's wording."""
    (tmp_path / "upstream-src").mkdir()
    (tmp_path / "paper-text").mkdir()
    (tmp_path / "paper-text" / "flowstate_b3.txt").write_text(b3_file().read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.delenv(b3text.ENV_FILE, raising=False)
    monkeypatch.delenv(b3text.ENV_FENCE, raising=False)
    monkeypatch.setenv("HARNESS_UPSTREAM_DIR", str(tmp_path / "upstream-src"))
    b3, where = b3text.load()
    assert b3 is not None and where.endswith("../paper-text/flowstate_b3.txt")
    system = b3.system("flowstate")
    assert "\u2018" * 3 not in system and "```" in system
    monkeypatch.setenv(b3text.ENV_FENCE, "as_written")
    assert "\u2018" * 3 in b3text.load()[0].system("flowstate")  # type: ignore[union-attr]
    monkeypatch.setenv(b3text.ENV_FENCE, "curly")
    with pytest.raises(b3text.B3Error, match="Fix:"):
        b3text.load()
    monkeypatch.setenv(b3text.ENV_FILE, "off")
    assert b3text.load()[0] is None


@pytest.fixture(scope="module")
def with_b3(tmp_path_factory) -> dict[str, Path]:
    return sweep(tmp_path_factory.mktemp("b3"), "b3", list(METHODS), b3=b3_file())


def test_parse_five_templates(parsed):
    assert sorted(parsed.templates) == sorted(METHODS.values())
    for key, t in parsed.templates.items():
        assert "\n\n" not in t.system + t.input, key  # doubled line breaks collapsed
        assert t.system.startswith("<instructions>") and t.system.endswith("</output_protocol>"), key
        assert t.input.endswith("</user_query>"), key
        assert {"react_rules", "task_policy", "available_tools"} <= set(b3text.FIELD.findall(t.system)), key


def test_incomplete_file_is_refused_with_a_fix(tmp_path, monkeypatch):
    text = b3_file().read_text(encoding="utf-8")
    cut = text[: text.index("\nState Tracking\n")]
    with pytest.raises(b3text.B3Error, match="Fix:"):
        b3text.parse(cut)
    monkeypatch.setenv(b3text.ENV_FILE, str(tmp_path / "absent.txt"))
    with pytest.raises(b3text.B3Error, match="Fix:"):
        b3text.load()


@pytest.mark.parametrize("method", list(METHODS))
def test_messages_are_the_b3_template(with_b3, parsed, method):
    key = METHODS[method]
    cell = with_b3[method]
    calls = cell_calls(cell, "agent")
    assert calls
    system_re = template_regex(parsed.system(key))
    fields = b3text.FIELD.findall(parsed.system(key))
    for call in calls:
        system, user = call.messages[0]["content"], call.messages[-1]["content"]
        m = system_re.fullmatch(system)
        assert m, (method, system[:400])
        values = dict(zip(fields, m.groups()))
        if "state_tracking_rules" in values:  # two fields on adjacent lines: compare the pair
            assert (
                f"{values['react_rules']}\n{values['state_tracking_rules']}" == f"{REACT_RULES}\n{STATE_TRACKING_RULES}"
            )
        else:
            assert values["react_rules"] == REACT_RULES
        json.loads(values["available_tools"])  # the tool schemas as JSON
        if key == "flowstate":
            flowstate_input_matches(parsed.input(key), user)
        else:
            assert template_regex(parsed.input(key)).fullmatch(user), (method, user[-600:])
    notes = json.loads((cell / "manifest.json").read_text())["method_notes"]["text_sources"]
    for part in ("system", "input"):
        entry = notes["prompts"][f"b3.{key}.{part}"]
        assert entry["source"] == "paper" and entry["sha256"] == parsed.sha256
    assert not [k for k in notes["paraphrased"] if k.startswith("b3.")]


def repeated(text: str, field: str, unit_rx) -> tuple[str, str, str]:
    """(text before, regex of the list of entries, text after) for the example entry around `{field}`:
    B.3's one example entry (and its `,\n...` ellipsis) read as zero or more entries, `[]` when none."""
    s, e = b3text.entry_span(text, field)
    tail = e + len(",\n...") if text.startswith(",\n...", e) else e
    before, after = text[:s], text[tail:]
    assert before.endswith("[\n") and after.startswith("\n]"), (before[-20:], after[:20])
    u = unit_rx(text[s:e])
    return before[:-2], rf"\[(?:\n{u}(?:,\n{u})*\n)?\]", after[2:]


def flowstate_input_regex(template: str) -> re.Pattern[str]:
    """B.3's FlowState input prompt as a regex: the Historical State Index and Active State example
    entries (and their nested states / related_states examples) repeat zero or more times; every
    other character byte for byte."""

    def nested(field):
        def unit(u: str) -> str:
            b, lst, a = repeated(u, field, lambda x: template_regex(x).pattern)
            return template_regex(b).pattern + lst + template_regex(a).pattern

        return unit

    b1, index_rx, rest = repeated(template, "prior_query", nested("historical_state_id"))
    b2, active_rx, a2 = repeated(rest, "active_state_id", nested("related_state_id"))
    return re.compile(
        template_regex(b1).pattern + index_rx + template_regex(b2).pattern + active_rx + template_regex(a2).pattern,
        re.DOTALL,
    )


def flowstate_input_matches(template: str, user: str) -> None:
    assert flowstate_input_regex(template).fullmatch(user), user[:1500]
    for s in user.split("\n"):  # quoted fields hold JSON-escaped text
        if s.startswith('"user_query": "'):
            json.loads("{" + s.rstrip(",") + "}")


def test_index_and_active_state_entries_fill_b3(with_b3, parsed):
    """A later request's prompt lists the earlier requests' entries in B.3's entry layout: numeric
    query ids, no `agent_response`, each listed state in the example's two-line form."""
    tpl = parsed.input("flowstate")
    calls = cell_calls(with_b3["flowstate"], "agent")
    last = calls[-1].messages[-1]["content"]
    s, e = b3text.entry_span(tpl, "prior_query")
    unit = tpl[s:e]
    hs, he = b3text.entry_span(unit, "historical_state_id")
    entry_rx = (
        template_regex(unit[:hs]).pattern
        + r"(?:"
        + template_regex(unit[hs:he]).pattern
        + r"(?:,\n)?)*"
        + template_regex(unit[he:]).pattern
    )
    entries = re.findall(entry_rx, last, re.DOTALL)
    assert len(entries) >= 1, last[:1200]
    assert "agent_response" not in last
    assert re.search(r'\n"query_id": \d+,\n', last)
    for call in calls:  # every Active State entry (if any) in the example's layout, types named as B.3 names them
        for m in re.finditer(r'\n"type": "([a-z]+)",\n', call.messages[-1]["content"]):
            assert re.search(rf"\b{m.group(1)} \(", parsed.system("flowstate")), m.group(1)


def test_switches_add_the_project_rules_to_b3(tmp_path, parsed):
    from flowstate.prompts import CITE, EXCLUSIVE, NO_HISTORY

    cells = sweep(tmp_path, "sw", ["flowstate"], *(f"++method.params.{s}=true" for s in SWITCHES), b3=b3_file())
    system = cell_calls(cells["flowstate"], "agent")[0].messages[0]["content"]
    for text in (CITE, NO_HISTORY, EXCLUSIVE):
        assert system.count(text) == 1
    bare = system
    for text in (f"- {CITE}\n", f"- {NO_HISTORY}\n", f"{EXCLUSIVE}\n"):
        bare = bare.replace(text, "")
    assert template_regex(parsed.system("flowstate")).fullmatch(bare)


def test_with_b3_the_additions_are_off(with_b3):
    from flowstate.prompts import CITE, EXCLUSIVE, NO_HISTORY

    for call in cell_calls(with_b3["flowstate"], "agent"):
        text = call.messages[0]["content"] + call.messages[-1]["content"]
        for s in (CITE, NO_HISTORY, EXCLUSIVE, "obs-1-2-0", "Last step's state requests"):
            assert s not in text


def test_without_b3_the_cells_are_paraphrased(tmp_path):
    b3_file()  # the comparison is only meaningful where the shared copy exists
    cells = sweep(tmp_path, "own", list(METHODS) + ["flowstate_no_psa"], b3=None)
    for method, key in METHODS.items():
        notes = json.loads((cells[method] / "manifest.json").read_text())["method_notes"]["text_sources"]
        assert {f"b3.{key}.system", f"b3.{key}.input"} <= set(notes["paraphrased"]), method
        assert "not configured" in notes["prompts"][f"b3.{key}.system"]["reason"]
    ablation = json.loads((cells["flowstate_no_psa"] / "manifest.json").read_text())["method_notes"]["text_sources"]
    assert ablation["prompts"]["flowstate.ablation_prompts"]["source"] == "project"
    summary = (tmp_path / "own" / "tables" / "summary.md").read_text()
    assert "[paraphrased]" in summary
    # the project's wording keeps its additions by default
    from flowstate.prompts import CITE, EXCLUSIVE, NO_HISTORY

    system = cell_calls(cells["flowstate"], "agent")[0].messages[0]["content"]
    assert CITE in system and NO_HISTORY in system and EXCLUSIVE in system


def test_switches_off_in_the_project_wording():
    from flowstate.prompts import CITE, EXCLUSIVE, NO_HISTORY, flowstate_rules, output_protocol_text

    on = flowstate_rules() + output_protocol_text()
    off = flowstate_rules(no_history_rule=False, cite_raw_results=False) + output_protocol_text(
        exclusive_decision=False
    )
    for text in (CITE, NO_HISTORY, EXCLUSIVE):
        assert text in on and text not in off


def test_method_prompts_with_entries_fill_b3(parsed, monkeypatch):
    """FlowState driven step by step (real ISU/PSA/Persist): prompts whose index and Active State hold
    entries, related_states included, still fill B.3's input template; the switch
    `persist_agent_message=true` adds the agent's reply to the index entry, off by default with B.3."""
    import asyncio

    from flowstate import FlowState
    from runners.api import Observation, Request, RequestOutcome, ToolResult
    from tests.flowstate.test_method import TASK, QueueBackbone, out

    monkeypatch.setenv(b3text.ENV_FILE, str(b3_file()))
    a = {
        "state_set": "knowledge",
        "operation": "add",
        "state_id": "price",
        "summary": 'the "price"',
        "value": {"p": 42},
        "refs": [],
    }
    b = {
        "state_set": "judgement",
        "operation": "add",
        "state_id": "plan",
        "summary": "buy it",
        "value": "buy",
        "refs": [{"rel": "derives", "state_id": "price"}],
    }

    async def drive(**params):
        bb = QueueBackbone(
            [
                out(delta=[a], calls=[("search", {"q": "x"})]),
                out(delta=[b], msg="done"),
                out(focus=[{"target_id": "plan", "reason": "need it"}]),
                out(msg="ok"),
            ]
        )
        m = FlowState(bb, **params)
        await m.begin_task(TASK.model_copy(update={"kind": "tau"}))
        await m.begin_request(Request(index=0, request_id="q1", text="first {query} request"))
        await m.step(Observation())
        await m.step(Observation(tool_results=[ToolResult(call_id="c", name="search", content="42")]))
        await m.end_request(RequestOutcome(request=m.request, final_response="done"))
        await m.begin_request(Request(index=1, request_id="q2", text="second"))
        await m.step(Observation())
        await m.step(Observation())
        return [p[2] for p in bb.prompts if p[0] == "agent"]

    prompts = asyncio.run(drive())
    rx = flowstate_input_regex(parsed.input("flowstate"))
    for msgs in prompts:
        assert template_regex(parsed.system("flowstate")).fullmatch(msgs[0]["content"])
        assert rx.fullmatch(msgs[-1]["content"]), msgs[-1]["content"]
    users = [p[-1]["content"] for p in prompts]
    assert any('"related_states": [\n{' in u for u in users)  # an Active State entry with a related state
    assert any('"query_id": 1,' in u and '"state_id": "plan",' in u for u in users)  # an index entry with states
    assert not any("agent_response" in u for u in users)
    kept = asyncio.run(drive(persist_agent_message=True))
    assert any('\n"agent_response": "done",\n' in p[-1]["content"] for p in kept)
