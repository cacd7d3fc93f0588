"""RCA-100's model-facing facts come from upstream `benchmarks/RCA100/info.py` at run time (runtime
text rule): the fault-type definitions, the entity standard, the diagnostic method with its steps
7–9 and the submission contract appear byte for byte as the shared pinned copy holds them, the
manifest records their source, and without the upstream file our own wording (with steps 7–9) is
used and recorded as a paraphrase."""

from __future__ import annotations

import ast

import pytest

from benchmarks.rca100.benchmark import Rca100
from benchmarks.rca100.catalog import FAULT_TYPES
from benchmarks.rca100.prompts import policy
from runners import upstream
from runners.api import EpisodeContext
from runners.upstream import TextSources
from tests.conftest import upstream_src

SYMBOLS = ("FAULT_TYPES_INFO", "ENTITY_STANDARD_INFO", "DIAGNOSTIC_METHOD_INFO", "SUBMIT_CONTRACT_INFO")


def shared_constants(path) -> dict[str, str]:
    """The string constants of a shared upstream file, read independently of runners.upstream."""
    out = {}
    for n in ast.parse(path.read_text()).body:
        target = n.targets[0] if isinstance(n, ast.Assign) else n.target if isinstance(n, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str):
            out[target.id] = n.value.value
    return out


def test_policy_carries_upstream_task_info_byte_for_byte(rca_root):
    src = upstream_src()
    info = shared_constants(src / "PoS@506558c48565317569e117c40feeb6eb57313305/benchmarks/RCA100/info.py")
    bench = Rca100(data_dir=str(rca_root))
    text = bench.make_env(bench.load_tasks()[0], EpisodeContext()).view().policy
    # upstream `rca100_task_info()`: the four blocks, in this order, joined by a blank line
    assert "\n\n".join(info[s] for s in SYMBOLS) in text
    for t in FAULT_TYPES:  # the upstream catalog names every fault type the scorer accepts
        assert f"- {t}:" in info["FAULT_TYPES_INFO"]
    notes = bench.notes()["text_sources"]
    assert notes["paraphrased"] == [] and notes["prompts"]["rca100.fault_types"]["path"] == "benchmarks/RCA100/info.py"
    assert (
        notes["prompts"]["rca100.fault_types"]["sha256"]
        == upstream.UpstreamFile("PoS", "benchmarks/RCA100/info.py").sha256
    )
    assert "JSON" not in text.split("\n\n")[1]  # upstream's reply-format lines are left to the method's protocol


def test_without_upstream_the_paraphrase_is_used_and_recorded(monkeypatch, tmp_path):
    monkeypatch.setenv(upstream.ENV_DIR, str(tmp_path))  # an empty folder: no upstream copy
    monkeypatch.setenv(upstream.ENV_OFFLINE, "1")
    monkeypatch.setattr(upstream, "_cache_root", lambda: tmp_path / "cache")
    sources = TextSources()
    text = policy(50, 3, 20000, sources)
    assert set(sources.paraphrased) == {
        "rca100.fault_types",
        "rca100.entity_standard",
        "rca100.diagnostic_method",
        "rca100.submit_contract",
        "rca100.rules",
    }
    assert all(f"- {t}:" in text for t in FAULT_TYPES)
    # the method's steps 7–9 are present in our own wording: node metrics, the discriminator list, the budget rule
    for needle in (
        "7. Check the infrastructure layer",
        "node readiness",
        "8. Discriminate inside the catalog",
        "zero replicas (replicaScaleDown)",
        "9. Use the turn budget",
        "no reason to submit",
    ):
        assert needle in text
    assert "ZERO replicas" in text and "catch-all" in text  # replicaScaleDown and httpError5xx say what upstream's say


@pytest.mark.parametrize("symbol", SYMBOLS)
def test_loaded_text_equals_the_shared_copy(symbol):
    src = upstream_src()
    info = shared_constants(src / "PoS@506558c48565317569e117c40feeb6eb57313305/benchmarks/RCA100/info.py")
    assert upstream.py_string(upstream.UpstreamFile("PoS", "benchmarks/RCA100/info.py"), symbol) == info[symbol]
