"""`python -m benchmarks.memoryarena.score` on the project fixtures."""

import json
import subprocess
import sys

import pytest

from benchmarks.memoryarena.loader import FIXTURES
from tests.conftest import REPO

TRAVEL = FIXTURES / "group_travel_planner" / "data.jsonl"
SHOP = FIXTURES / "bundled_shopping" / "data.jsonl"


def score(*args):
    p = subprocess.run(
        [sys.executable, "-m", "benchmarks.memoryarena.score", *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_travel_gold_base_and_mixed(tmp_path):
    row = json.loads(TRAVEL.read_text())
    base = row["base_person"]["daily_plans"]
    gold = score(
        "--domain",
        "travel",
        "--tasks",
        TRAVEL,
        "--predictions",
        write(tmp_path / "g.jsonl", [{"id": 0, "plans": row["answers"]}]),
    )
    assert gold["SR"] == gold["PS"] == gold["sPS"] == 1.0
    copied = score(
        "--domain",
        "travel",
        "--tasks",
        TRAVEL,
        "--predictions",
        write(tmp_path / "b.jsonl", [{"id": 0, "plans": [base] * 3}]),
    )
    assert copied["SR"] == copied["PS"] == copied["sPS"] == 0.0
    # Eric right; Emma gets Eric's plan (1 of her 2 constraint slots); Liam's plan is text, malformed
    mixed = score(
        "--domain",
        "travel",
        "--tasks",
        TRAVEL,
        "--predictions",
        write(tmp_path / "m.jsonl", [{"id": 0, "plans": [row["answers"][0], row["answers"][0], "no plan"]}]),
    )
    assert (
        mixed["SR"] == 0.0
        and mixed["PS"] == pytest.approx(1 / 3)
        and mixed["sPS"] == pytest.approx((1 + 1 / 2 + 0) / 3)
    )
    # upstream: a null plan is a submitted traveller who fails; an absent one is skipped unless --sr-missing fail
    null = write(tmp_path / "z.jsonl", [{"id": 0, "plans": [*row["answers"][:2], None]}])
    assert score("--domain", "travel", "--tasks", TRAVEL, "--predictions", null)["SR"] == 0.0
    skip = write(tmp_path / "s.jsonl", [{"id": 0, "plans": row["answers"][:2]}])
    assert score("--domain", "travel", "--tasks", TRAVEL, "--predictions", skip)["SR"] == 1.0
    assert score("--domain", "travel", "--tasks", TRAVEL, "--predictions", skip, "--sr-missing", "fail")["SR"] == 0.0
    none = score(
        "--domain", "travel", "--tasks", TRAVEL, "--predictions", write(tmp_path / "n.jsonl", [{"id": 7, "plans": []}])
    )
    assert none["SR"] is None and none["groups_scored"] == 0


def test_shopping_exact_match_and_soft_reward(tmp_path):
    row = json.loads(SHOP.read_text())
    gold = [a["target_asin"] for a in row["answers"]]
    out = score(
        "--domain",
        "shopping",
        "--tasks",
        SHOP,
        "--predictions",
        write(tmp_path / "g.jsonl", [{"id": 0, "purchases": gold}]),
    )
    assert out["SR"] == out["PS"] == out["soft_reward"] == 1.0
    near = gold[:3] + ["B02DBBB714", None, "B0UNKNOWN0"]  # near miss (2/3), nothing bought, unknown product
    out = score(
        "--domain",
        "shopping",
        "--tasks",
        SHOP,
        "--predictions",
        write(tmp_path / "n.jsonl", [{"id": 0, "purchases": near}]),
    )
    assert out["SR"] == 0.0 and out["PS"] == pytest.approx(3 / 6)
    assert out["soft_reward"] == pytest.approx((3 + 2 / 3) / 6)


def test_bad_paths_name_the_flag(tmp_path):
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.memoryarena.score",
            "--domain",
            "travel",
            "--tasks",
            str(tmp_path / "x"),
            "--predictions",
            str(tmp_path / "y"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2 and "--tasks: file not found" in p.stderr
