"""score_submission and the catalog normalisers on hand-computed cases (docs/pos-benchmarks.md §2.4, §2.7)."""

from __future__ import annotations

import pytest

from benchmarks.rca100.catalog import DEFINITIONS, FAULT_TYPES, norm_entity, norm_type
from benchmarks.rca100.score import percent, score_submission

GOLD = {"root_cause_entities": ["payment", "cn-hongkong.10.0.1.107"], "root_cause_types": ["F012-rateLimiting"]}


def test_catalog_is_the_29_ids_in_pos_order():
    assert len(FAULT_TYPES) == len(set(FAULT_TYPES)) == 29
    assert (
        FAULT_TYPES[0] == "nodeDown" and FAULT_TYPES[17] == "nodeCpuHigh" and FAULT_TYPES[-1] == "dnsResolutionFailure"
    )
    assert set(DEFINITIONS) == set(FAULT_TYPES)


@pytest.mark.parametrize(
    "raw,want",
    [
        ("rateLimiting", "rateLimiting"),
        ("  RATELIMITING ", "rateLimiting"),
        ("F012-rateLimiting", "rateLimiting"),
        ("f3-nodecpuhigh", "nodeCpuHigh"),
        ("rate limiting", None),
        ("slowQuery", None),
        ("", None),
        (None, None),
    ],
)
def test_norm_type(raw, want):
    assert norm_type(raw) == want


def test_norm_entity_strips_collapses_lowercases():
    assert norm_entity("  Payment \t Service ") == "payment service"
    assert norm_entity(None) == ""


@pytest.mark.parametrize(
    "sub,entity,ftype,success",
    [
        ({"root_cause_entity": "payment", "fault_type": "rateLimiting"}, True, True, True),
        ({"root_cause_entity": " PAYMENT ", "fault_type": "F012-RateLimiting"}, True, True, True),
        ({"root_cause_entity": "cn-hongkong.10.0.1.107", "fault_type": "ratelimiting"}, True, True, True),
        (
            {"root_cause_entity": "payment-5d8f-abc12", "fault_type": "rateLimiting"},
            False,
            True,
            False,
        ),  # a pod is wrong
        ({"root_cause_entity": "payment", "fault_type": "httpError5xx"}, True, False, False),
        ({"root_cause_entity": "cart", "fault_type": "nodeDown"}, False, False, False),
        ({"root_cause_entity": "payment", "fault_type": "not-a-type"}, True, False, False),
    ],
)
def test_score_submission(sub, entity, ftype, success):
    s = score_submission(sub, GOLD)
    assert (s["entity_correct"], s["type_correct"], s["success"]) == (entity, ftype, success)
    assert s["score"] == (1.0 if success else 0.0)


def test_no_submission_is_a_failure():
    s = score_submission(None, GOLD)
    assert s["success"] is False and s["reason"] == "no_submission"


def test_percent():
    assert percent([1, 0, 1, 1]) == 75.0
    assert percent([]) == 0.0
    assert round(percent([1] * 40 + [0] * 63), 2) == 38.83  # PoS/Qwen RCA-100 = 40/103 (docs/pos.md §12)
