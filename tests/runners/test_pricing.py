"""One pricing rule (runners.cost.role_prices): the live budget and the tables charge every role
at its own backbone's prices, so a cell's table cost equals what the sweep counted while it ran."""

import asyncio
import json

from runners.analysis.cells import cell_usd, collect
from runners.config import validate
from runners.cost import episode_usd, role_prices
from runners.progress import Progress
from runners.records.store import MANIFEST
from runners.pool import BackbonePool
from runners.prepare import prepare_cells
from runners.run import Scheduler
from tests.runners.test_config import base

AGENT = {"input": 1000.0, "cached_input": 1000.0, "output": 3000.0}
TOOL = {"input": 10.0, "cached_input": 10.0, "output": 20.0}  # a cheaper model, as gpt-5-mini beside the agent
JUDGE = {"input": 100.0, "cached_input": 100.0, "output": 100.0}


def scripted(name, prices):
    return {"name": name, "kind": "scripted", "model": "scripted", "prices": prices}


CALL_TOOL = '<tool_calls>[{"name": "reasoning", "arguments": {"input": "work it out"}}]</tool_calls>'
ANSWER = '<tool_calls>[]</tool_calls><assistant_message>{"content": "x"}</assistant_message>'


def agent_responder(body):
    """The agent asks the `reasoning` tool once per request, then answers."""
    last = (body.get("messages") or [{}])[-1]
    return ANSWER if last.get("role") == "tool" or "work it out" in json.dumps(body.get("messages")[-2:]) else CALL_TOOL


def test_table_cost_equals_live_spend_with_the_tool_role_on_its_own_backbone(tmp_path):
    from tests.fake_openai import FakeOpenAI

    with FakeOpenAI(agent_responder) as srv:
        _agree(tmp_path, srv.base_url)


def _agree(tmp_path, url):
    raw = base()
    raw["backbone"] = {
        "name": "ep",
        "kind": "openai",
        "model": "m",
        "base_url": url,
        "api_key_env": None,
        "timeout_s": 5,
        "max_retries": 0,
        "prices": AGENT,
    }
    raw["benchmark"]["params"].update(data_dir="fixtures", reasoning_tool=True)
    raw["runner"].update(limit=2, concurrency=1, cache=False, display="none")
    raw["roles"] = {"tool": scripted("scripted_tool", TOOL), "judge": scripted("scripted_judge", JUDGE)}
    cfg = validate(raw)
    pool = BackbonePool(None)

    async def go():
        s = Scheduler(tmp_path, pool, Progress("none"), 1)
        try:
            await s.run(prepare_cells([cfg]))
        finally:
            await pool.aclose()
        return s

    sched = asyncio.run(go())
    [cell] = collect(tmp_path)
    records = cell.episodes
    assert any(r["usage_by_role"].get("tool") for r in records), "the fixture run called the reasoning tool"
    manifest_cfg = json.loads((tmp_path / cfg.cell_name / MANIFEST).read_text())["config"]
    table = cell_usd(records, manifest_cfg)
    assert table is not None and abs(table - sched.spent) < 1e-9  # the two places agree
    assert cell.metrics["USD"] == table
    # and the tool's tokens are charged at the tool's rates, not the agent's (the old table rule)
    at_agent = episode_usd(
        {"usage_by_role": {r: u for rec in records[:1] for r, u in rec["usage_by_role"].items()}},
        {"*": AGENT, "judge": JUDGE},
    )
    assert episode_usd(records[0], role_prices(manifest_cfg)) < at_agent
    assert role_prices(cfg) == role_prices(manifest_cfg)  # a CellConfig and its manifest dict price alike


def test_a_cell_with_an_unpriced_role_has_no_table_cost():
    """A priced judge beside an unpriced agent: the table shows no cost rather than the judge's part."""
    u = {"prompt_tokens": 1000, "completion_tokens": 10}
    records = [{"usage_by_role": {"agent": u, "judge": u}}]
    config = {"backbone": {"prices": None}, "roles": {"judge": {"prices": JUDGE}}}
    assert cell_usd(records, config) is None
    config["backbone"]["prices"] = AGENT
    assert cell_usd(records, config) == episode_usd(records[0], role_prices(config)) > 0
