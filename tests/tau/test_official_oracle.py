"""The τ native engine against the official tau2-bench v1.0.1 (docs/tau-fidelity.md, "Differential
oracle"): the fixture holds the official engine's results on every generated case (gold runs,
perturbed gold runs, adversarial calls; `python -m scripts.tau_oracle` wrote it); each case is
replayed natively here and must agree on every tool output and error flag, the final DB hash and
every reward part, except the documented deviations (`DEVIATIONS`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.tau.data import load_domain
from scripts.tau_oracle.cases import DEVIATIONS, cases, compare, native_result
from tests.conftest import shared_path, upstream_src

FIXTURE = Path(__file__).parent / "fixtures" / "official_oracle.json"


@pytest.fixture(scope="module")
def fixture() -> dict:
    return json.loads(FIXTURE.read_text())


def sampled(case_id: str, task_ids: list[str], every: int) -> bool:
    """Every adversarial case, and the gold and perturbed cases of every `every`-th task."""
    _, task, kind = case_id.split("/", 2)
    return kind.startswith("adv:") or task_ids.index(task) % every == 0


@pytest.mark.parametrize("domain", ["airline", "retail"])
@pytest.mark.parametrize(
    "every", [pytest.param(1, id="all", marks=pytest.mark.long), pytest.param(10, id="every_10th")]
)
def test_native_engine_agrees_with_the_official_on_every_case(fixture, domain, every):
    upstream_src()  # the error texts are upstream's only with the pinned files (else the project's wording)
    data = load_domain(domain, str(shared_path("tau2")))
    mine = {c["id"]: c for c in cases(data)}
    ref = [r for r in fixture["cases"] if r["id"].startswith(f"{domain}/")]
    assert [r["id"] for r in ref] == list(mine), "the case generator changed: re-run python -m scripts.tau_oracle"
    tasks = {t["id"]: t for t in data.split("base")}
    order = list(tasks)
    ref = [r for r in ref if sampled(r["id"], order, every)]
    differ = {}
    for r in ref:
        parts = compare(r, native_result(data, mine[r["id"]], tasks))
        if parts:
            differ[r["id"]] = parts
    documented = {k: v[0] for k, v in DEVIATIONS.items() if k.startswith(f"{domain}/") and sampled(k, order, every)}
    assert differ == documented, {
        "undocumented": {k: v for k, v in differ.items() if documented.get(k) != v},
        "no longer differ (remove from DEVIATIONS)": sorted(set(documented) - set(differ)),
    }


def test_the_fixture_covers_every_kind_of_case(fixture):
    ids = [r["id"] for r in fixture["cases"]]
    kinds = {i.split("/", 2)[2].split(":")[0] for i in ids}
    perturbations = {i.split("perturb:")[1] for i in ids if "perturb:" in i}
    assert kinds == {"gold", "perturb", "adv"}
    assert len(perturbations) == 17
    assert sum(i.endswith("/gold") for i in ids) == 50 + 114  # every base task of both domains
    assert (
        fixture["official"]["commit"]
        == json.loads((Path(__file__).resolve().parents[2] / "runners" / "upstream_pins.json").read_text())[
            "tau2-bench"
        ]["commit"]
    )
