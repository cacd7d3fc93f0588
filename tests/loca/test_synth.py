"""The StockAlertLite fixture: generator, length table, evaluator, checked-in §1.3 configs."""

from __future__ import annotations

import json

from benchmarks.loca.configs import FIXTURE_ROOT, LENGTHS, config_path, load_cases
from benchmarks.loca.synth import LENGTH_TABLE, evaluate, generate, write_configs

FIELDS = {"id", "sku", "name", "category", "price", "stock_quantity", "stock_threshold", "supplier"}


def test_generate_counts_fields_and_low_stock_rule():
    data = generate(7, 3, 5)
    assert len(data["products"]) == 8 and all(set(p) == FIELDS for p in data["products"])
    assert set(data["products"][0]["supplier"]) == {"name", "supplier_id", "contact"}
    low = sorted(p["sku"] for p in data["products"] if p["stock_quantity"] < p["stock_threshold"])
    assert low == data["low_stock_skus"] and len(low) == 3
    assert generate(7, 3, 5) == data and generate(8, 3, 5) != data


def test_length_table_mirrors_the_seven_lengths_and_grows():
    assert list(LENGTH_TABLE) == list(LENGTHS)
    totals = [v["num_low_stock"] + v["num_normal_stock"] for v in LENGTH_TABLE.values()]
    assert totals == sorted(totals) and totals[0] < totals[-1]


def test_evaluator_accepts_right_emails_and_rejects_wrong_ones():
    truth = {k: v for k, v in generate(42, 3, 4).items() if k != "products"}
    right = [{"to": a["to"], "subject": f"Low stock alert: {a['sku']}", "body": "x"} for a in truth["alerts"]]
    assert evaluate(right, truth)[0]
    assert not evaluate(right[:-1], truth)[0]  # one missing
    normal = next(p["sku"] for p in generate(42, 3, 4)["products"] if p["sku"] not in truth["low_stock_skus"])
    assert not evaluate(right + [{"to": right[0]["to"], "subject": f"Low stock alert: {normal}", "body": ""}], truth)[0]
    wrong_to = [dict(right[0], to="someone@else.example.com")] + right[1:]
    ok, feedback = evaluate(wrong_to, truth)
    assert not ok and truth["alerts"][0]["sku"] in feedback


def test_checked_in_configs_match_the_generator_and_use_both_placeholders(tmp_path):
    write_configs(tmp_path)
    for length in LENGTHS:
        assert json.loads(config_path(tmp_path, length).read_text()) == json.loads(
            config_path(FIXTURE_ROOT, length).read_text()
        )
    text = config_path(FIXTURE_ROOT, "8k").read_text()
    assert "{task_workspace}" in text and "{agent_workspace}" in text
    cases = load_cases(FIXTURE_ROOT, ["8k", "256k"])
    assert [c["case_id"] for c in cases] == ["8k/StockAlertLiteS2LEnv/seed_42", "256k/StockAlertLiteS2LEnv/seed_42"]
