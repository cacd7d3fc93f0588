"""A method records in the manifest only the texts it may send on the cell's benchmark: the
benchmark declares its task kinds (`Benchmark.task_kinds`) and `runners.prepare.method_notes` passes
them to methods whose `notes` takes `kinds`."""

from __future__ import annotations

from baselines.full_context import FullContext
from benchmarks.clindiag.benchmark import ClinDiag
from benchmarks.memoryarena.formal import FormalReasoning
from benchmarks.rca100.benchmark import Rca100
from pos.method import PoS
from runners.api import task_kinds
from runners.prepare import method_notes


def test_every_benchmark_declares_known_task_kinds():
    from benchmarks.alfworld.benchmark import Alfworld
    from benchmarks.loca.benchmark import Loca
    from benchmarks.memoryarena.shopping import BundledShopping
    from benchmarks.memoryarena.travel import GroupTravel
    from benchmarks.tau.benchmark import TauBenchmark
    from benchmarks.toy.benchmark import Toy

    for b in (Alfworld, ClinDiag, FormalReasoning, Loca, BundledShopping, GroupTravel, Rca100, TauBenchmark, Toy):
        assert b.task_kinds and set(b.task_kinds) <= set(task_kinds()) and all(b.task_kinds.values()), b


def test_full_context_claims_no_pos_text_off_the_pos_benchmarks():
    on_math = method_notes(FullContext, {}, FormalReasoning)["text_sources"]["prompts"]
    assert on_math and all(k.startswith("b3.") for k in on_math)  # App. B.3's template only
    on_rca = method_notes(FullContext, {}, Rca100)["text_sources"]["prompts"]
    assert on_rca and not any(k.startswith("b3.") for k in on_rca) and any(k.startswith("pos.") for k in on_rca)


def test_pos_records_only_its_benchmarks_release_prompt():
    rca = str(method_notes(PoS, {}, Rca100)["text_sources"])
    clin = str(method_notes(PoS, {}, ClinDiag)["text_sources"])
    every = str(PoS.notes({}))
    assert "clindiag" in every.lower() and "clindiag" in clin.lower()
    assert "clindiag" not in rca.lower() and len(rca) < len(every)
