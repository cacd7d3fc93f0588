"""ZipAct on Formal Reasoning (and every domain without released prompts) sends the released
ALFWorld state-module prompts with only the domain's state items changed (FlowState B.5): read back
from a scripted sweep's records, every line of the released updater and init prompts is sent as it
is, unless it names a state field the domain does not have; the domain's own fields are added, and
the JSON skeletons hold exactly the domain's fields."""

from __future__ import annotations

import re
import subprocess
import sys

from baselines import zipact_prompts
from tests.runners.sweep_helpers import REPO
from tests.upstream_texts import cell_calls, upstream_constant

PROMPTS = "src/prompts/zipact_prompts.py"


def dropped_fields(domain: str) -> set[str]:
    alf = {k for sec in zipact_prompts.empty_state("alfworld").values() for k in sec}
    have = {k for sec in zipact_prompts.empty_state(domain).values() for k in sec}
    return alf - have


def check(sent: str, released: str, domain: str) -> None:
    gone = dropped_fields(domain)
    sent_lines = sent.split("\n")
    for line in released.split("\n"):
        if any(re.search(rf"\b{f}\b", line) for f in gone):
            assert line not in sent_lines or not line.strip(), f"a line about a field {domain} lacks was sent: {line!r}"
        elif "{instruction}" in line:
            assert line.split("{instruction}")[0] in sent  # the filled placeholder
        elif (
            line.strip()
            and not line.strip().startswith('"')
            and line.strip() not in ("{", "}", "},", "{{", "}}", "}},")
        ):
            assert line in sent_lines, f"released line missing: {line!r}"
    for sec, names in zipact_prompts.empty_state(domain).items():
        for k in names:
            assert f'"{k}":' in sent, f"{k} not in the skeleton"


def test_formal_reasoning_gets_the_released_core_with_its_state_items(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "runners.sweep",
        "method=zipact",
        "benchmark=memoryarena_math",
        "benchmark.params.data_dir=fixtures",
        "runner.limit=1",
        f"runner.output_dir={tmp_path}",
        "runner.display=none",
        "experiment.name=z",
    ]
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    cell = next((tmp_path / "z").glob("zipact__*"))
    calls = cell_calls(cell, "state")
    updater = upstream_constant("ZipAct", PROMPTS, "ALFWORLD_ZIPACT_UPDATER_SYSTEM_PROMPT")
    init = upstream_constant("ZipAct", PROMPTS, "ALFWORLD_ZIPACT_INIT_STATE_PROMPT")
    updates = [c for c in calls if c.messages[0]["content"].startswith(updater.split("\n")[0])]
    inits = [c for c in calls if c.messages[1]["content"].startswith(init.split("\n")[0])]
    assert updates and inits
    for c in updates:
        check(c.messages[0]["content"], updater, "formal")
        assert "- established_results: " in c.messages[0]["content"]
    for c in inits:
        check(c.messages[1]["content"], init.replace("{{", "{").replace("}}", "}"), "formal")


def test_released_prompts_false_is_the_projects_wording():
    t = zipact_prompts.state_texts("formal", own_wording=True)
    assert not t["upstream"] and t["update_system"] == zipact_prompts.UPDATE_SYSTEM


def test_mem0_records_its_prompts_package_source():
    import pytest

    from baselines.mem0_method import Mem0Memory, mem0_version

    if mem0_version() is None:
        pytest.skip("mem0ai is not installed (pip install the mem0 extra)")
    import mem0.configs.prompts as prompts

    notes = Mem0Memory.notes({})["text_sources"]["prompts"]
    e = notes["mem0.FACT_RETRIEVAL_PROMPT"]
    assert e["source"] == "package" and e["version"] == mem0_version() and e["module"] == "mem0.configs.prompts"
    import hashlib

    assert e["text_sha256"] == hashlib.sha256(prompts.FACT_RETRIEVAL_PROMPT.encode()).hexdigest()
