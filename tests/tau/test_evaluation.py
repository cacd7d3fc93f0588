"""τ³ evaluator (docs/tau-bench.md §7, §8): gold and do-nothing baselines, COMMUNICATE, ACTION
matching, reward product, pass^k on hand-computed cases, aggregate metrics."""

from __future__ import annotations

import pytest

from benchmarks.tau import evaluation
from benchmarks.tau.domains import toolkit_for
from benchmarks.tau.metrics import action_accuracy, aggregate, pass_hat_k, pass_hat_ks
from tests.tau.helpers import domain, empty_trajectory, gold_trajectory

AIRLINE_UNCHANGED = {0, 1, 2, 3, 4, 5, 6, 9, 10, 13, 26, 27, 28, 31, 34, 36, 38, 41, 43, 45, 46, 47, 48, 49}
RETAIL_UNCHANGED = {10, 12, 24, 25, 50, 57, 62, 65, 67, 68, 105}


def score(data, task, traj):
    """Reward over the basis without the judge (NL_ASSERTION left out), plus the components."""
    basis = [b for b in evaluation.reward_basis(task) if b != "NL_ASSERTION"]
    db = evaluation.db_check(data, task, traj)
    comm = evaluation.communicate_check(task, traj)
    act = evaluation.action_check(task, traj, toolkit_for(data.domain).tool_type)
    return (
        evaluation.combine(basis, {"DB": db["reward"], "COMMUNICATE": comm["reward"], "ACTION": act["reward"]}),
        db,
        comm,
        act,
    )


# Every base task in the long profile; by default every 4th task (offset 1) and those the assertions single out
# by hand (COMMUNICATE not said, the judge-dependent retail tasks), with every assertion taken on that sample.
EVERY_TASK = [pytest.param(1, id="all", marks=pytest.mark.long), pytest.param(4, id="every_4th")]


def sample(tasks, every, keep=frozenset()):
    return [t for i, t in enumerate(tasks) if i % every == 1 % every or int(t["id"]) in keep]


@pytest.mark.parametrize("every", EVERY_TASK)
def test_airline_gold_and_empty_trajectories(every):
    data = domain("airline")
    silent_fail = {3, 7, 11, 14, 18, 23}  # COMMUNICATE not said
    tasks = sample(data.split("base"), every, keep=silent_fail)
    ids = {int(t["id"]) for t in tasks}
    gold_ok, gold_with_info_ok, empty_ok, empty_db = set(), set(), set(), set()
    for task in tasks:
        tid = int(task["id"])
        info = " ".join(task["evaluation_criteria"].get("communicate_info") or [])
        traj = gold_trajectory(data, task, final_message=f"Done. Total: ${info}.")
        reward, db, _, act = score(data, task, traj)
        assert db["db_match"] and act["reward"] == 1.0 and db["replay_mismatches"] == [], tid
        gold_with_info_ok |= {tid} if evaluation.is_success(reward) else set()
        silent = [
            m for m in traj if not (m["role"] == "assistant" and m["content"] and m["content"].startswith("Done."))
        ]
        reward = evaluation.combine(
            evaluation.reward_basis(task),
            {"DB": db["reward"], "COMMUNICATE": evaluation.communicate_check(task, silent)["reward"]},
        )
        gold_ok |= {tid} if evaluation.is_success(reward) else set()
        reward, db, _, _ = score(data, task, empty_trajectory())
        empty_ok |= {tid} if evaluation.is_success(reward) else set()
        empty_db |= {tid} if db["db_match"] else set()
    assert len(ids) == (50 if every == 1 else 18)
    assert ids - gold_ok == silent_fail
    assert gold_with_info_ok == ids
    assert empty_db == AIRLINE_UNCHANGED & ids
    assert empty_ok == (AIRLINE_UNCHANGED - {3}) & ids and len(AIRLINE_UNCHANGED - {3}) == 23


@pytest.mark.parametrize("every", EVERY_TASK)
def test_retail_gold_and_empty_trajectories(every):
    data = domain("retail")
    judged = {24, 62, 67, 68, 105}  # their do-nothing reward depends on the judge
    tasks = sample(data.split("base"), every, keep=judged | {10, 12})
    ids = {int(t["id"]) for t in tasks}
    gold_ok, empty_db, empty_ok = set(), set(), set()
    for task in tasks:
        tid = int(task["id"])
        reward, db, _, act = score(data, task, gold_trajectory(data, task))
        assert db["db_match"] and act["reward"] == 1.0, tid
        gold_ok |= {tid} if evaluation.is_success(reward) else set()
        if "NL_ASSERTION" not in evaluation.reward_basis(task) or not task["evaluation_criteria"].get("nl_assertions"):
            reward, db, _, _ = score(data, task, empty_trajectory())
            empty_ok |= {tid} if evaluation.is_success(reward) else set()
        else:
            db = evaluation.db_check(data, task, empty_trajectory())
        empty_db |= {tid} if db["db_match"] else set()
    assert len(ids) == (114 if every == 1 else 36)
    assert gold_ok == ids
    assert empty_db == RETAIL_UNCHANGED & ids
    assert empty_ok == {10, 12, 25, 50, 57, 65} & ids and RETAIL_UNCHANGED - judged == {10, 12, 25, 50, 57, 65}


def test_communicate_removes_commas_from_the_message_only():
    task = {"evaluation_criteria": {"communicate_info": ["1628", "Basic"]}}
    traj = [{"role": "assistant", "content": "The total is $1,628.00 for BASIC economy", "tool_calls": None}]
    assert evaluation.communicate_check(task, traj)["reward"] == 1.0
    task = {"evaluation_criteria": {"communicate_info": ["1,628"]}}
    assert evaluation.communicate_check(task, traj)["reward"] == 0.0
    assert evaluation.communicate_check({"evaluation_criteria": {"communicate_info": None}}, [])["reward"] == 1.0
    said_by_user = [{"role": "user", "content": "1628"}]
    assert (
        evaluation.communicate_check({"evaluation_criteria": {"communicate_info": ["1628"]}}, said_by_user)["reward"]
        == 0.0
    )


def test_action_matching_rules():
    gold = {"name": "book", "arguments": {"a": 1, "b": [1, 2]}}
    assert evaluation.action_matches(gold, {"name": "book", "arguments": {"a": 1.0, "b": [1, 2]}})  # Python ==
    assert evaluation.action_matches(gold, {"name": "book", "arguments": {"a": 1}})  # subset of gold keys
    assert evaluation.action_matches(gold, {"name": "book", "arguments": {}})  # no arguments matches any
    assert not evaluation.action_matches(gold, {"name": "book", "arguments": {"a": 1, "c": 3}})  # extra key
    assert not evaluation.action_matches(gold, {"name": "book", "arguments": {"b": [2, 1]}})  # lists ordered
    assert not evaluation.action_matches(gold, {"name": "other", "arguments": {}})
    transfer = {"name": "transfer_to_human_agents", "arguments": {"summary": "x"}, "compare_args": []}
    assert evaluation.action_matches(transfer, {"name": "transfer_to_human_agents", "arguments": {"summary": "other"}})
    only_a = {"name": "book", "arguments": {"a": 1, "b": 2}, "compare_args": ["a"]}
    assert evaluation.action_matches(only_a, {"name": "book", "arguments": {"a": 1, "b": 99, "z": 0}})
    assert not evaluation.action_matches(only_a, {"name": "book", "arguments": {"b": 2}})


def test_action_check_partial_by_type():
    data = domain("airline")
    task = next(t for t in data.split("base") if t["id"] == "7")
    traj = gold_trajectory(data, task)[:4]  # only the first gold call (a READ)
    act = evaluation.action_check(task, traj, toolkit_for("airline").tool_type)
    assert act["reward"] == 0.0
    assert act["partial"]["total"] == {"correct": 1, "count": 5, "proportion": 0.2}
    assert act["partial"]["read"]["correct"] == 1 and act["partial"]["write"] == {
        "correct": 0,
        "count": 3,
        "proportion": 0.0,
    }


def test_reward_is_product_over_basis():
    assert evaluation.combine(["DB", "COMMUNICATE"], {"DB": 1.0, "COMMUNICATE": 0.0, "ACTION": 1.0}) == 0.0
    assert evaluation.combine(["DB"], {"DB": 1.0, "COMMUNICATE": 0.0, "ACTION": 0.0}) == 1.0
    assert evaluation.reward_basis({"evaluation_criteria": {}}) == ["DB", "COMMUNICATE"]


def test_pass_hat_k_hand_computed():
    assert pass_hat_k(4, 2, 1) == 0.5
    assert pass_hat_k(4, 2, 2) == pytest.approx(1 / 6)  # C(2,2)/C(4,2)
    assert pass_hat_k(4, 3, 2) == 0.5  # 3/6
    assert pass_hat_k(4, 4, 4) == 1.0 and pass_hat_k(4, 3, 4) == 0.0
    ks = pass_hat_ks({"a": [True, True, False], "b": [True, False, False], "c": [True, True, True, True]})
    assert ks[1] == pytest.approx((2 / 3 + 1 / 3 + 1) / 3)
    assert ks[2] == pytest.approx((1 / 3 + 0 + 1) / 3)
    assert ks[3] == pytest.approx((0 + 0 + 1) / 3) and 4 not in ks
    with pytest.raises(ValueError):
        pass_hat_k(2, 1, 3)


def test_aggregate_metrics():
    def ep(task, trial, success, db, correct, count, status="ok"):
        return {
            "task_id": task,
            "trial": trial,
            "status": status,
            "scores": {
                "reward": float(success),
                "success": success,
                "db_match": db,
                "action": {"correct": correct, "count": count},
            },
        }

    eps = [
        ep("a", 0, True, True, 3, 3),
        ep("a", 1, False, True, 1, 3),
        ep("b", 0, True, True, 0, 0),
        ep("b", 1, True, False, 0, 0),
        {"task_id": "b", "trial": 2, "status": "infra_error", "scores": {}},
    ]
    m = aggregate(eps)
    assert m["Pass1"] == 75.0 and m["DB"] == 75.0 and m["episodes"] == 4
    assert m["ActionAcc"] == pytest.approx(100 * 4 / 6)
    assert m["pass^1"] == 75.0 and m["pass^2"] == pytest.approx(100 * (0 + 1) / 2)
    assert aggregate(eps, count_infra_as_failures=True)["Pass1"] == 60.0
    assert action_accuracy([(3, 3), (1, 3), (0, 0), (1, 2)], per_task_mean=True) == pytest.approx(
        100 * (1 + 1 / 3 + 0.5) / 3
    )
    assert "pass^2" not in aggregate(eps[:1])


def test_db_accuracy_counts_the_db_match_not_the_success():
    """A task can fail (e.g. COMMUNICATE) with the database right, or succeed on a basis without DB:
    DB is the share of episodes whose final database matches, whatever the reward."""

    def ep(task, success, db):
        return {
            "task_id": task,
            "trial": 0,
            "status": "ok",
            "scores": {
                "reward": float(success),
                "success": success,
                "db_match": db,
                "action": {"correct": 0, "count": 0},
            },
        }

    eps = [ep("a", True, True), ep("b", False, True), ep("c", False, True), ep("d", True, False)]
    m = aggregate(eps)
    assert (m["Pass1"], m["DB"]) == (50.0, 75.0)
    # an infrastructure error counted as a failure fails the DB check too: 3 of 5
    m = aggregate(
        eps + [{"task_id": "e", "trial": 0, "status": "infra_error", "scores": {}}], count_infra_as_failures=True
    )
    assert (m["Pass1"], m["DB"]) == (40.0, 60.0)


def test_action_accuracy_pools_matched_actions_over_episodes():
    """ActionAcc = Σ matched / Σ gold actions (an episode with 4 gold actions weighs 4 times one with 1);
    the per-episode mean is the switch."""

    def ep(task, correct, count):
        return {
            "task_id": task,
            "trial": 0,
            "status": "ok",
            "scores": {
                "reward": 1.0,
                "success": True,
                "db_match": True,
                "action": {"correct": correct, "count": count},
            },
        }

    eps = [ep("a", 1, 1), ep("b", 1, 4), ep("c", 0, 0)]  # c has no gold action: contributes nothing
    assert aggregate(eps)["ActionAcc"] == pytest.approx(100 * 2 / 5)
    assert aggregate(eps, action_per_task_mean=True)["ActionAcc"] == pytest.approx(100 * (1 + 1 / 4) / 2)


def test_null_gold_actions_skip_the_db_comparison():
    # Upstream EnvironmentEvaluator: actions null (not []) and no env assertions → DB reward 1 without comparing.
    data = domain("airline")
    task = next(t for t in data.split("base") if t["id"] == "7")
    changed = gold_trajectory(data, task)  # cancels reservations: the DB differs from the initial one
    empty = {**task, "evaluation_criteria": {**task["evaluation_criteria"], "actions": []}}
    assert not evaluation.db_check(data, empty, changed)["db_match"]
    null = {**task, "evaluation_criteria": {**task["evaluation_criteria"], "actions": None}}
    assert (
        evaluation.db_check(data, null, changed)["db_match"]
        and evaluation.db_check(data, null, changed)["reward"] == 1.0
    )
    # evaluation_criteria null: upstream rewards 1.0; here every component of the default basis is 1.
    bare = {**task, "evaluation_criteria": None}
    reward, db, comm, act = score(data, bare, changed)
    assert reward == 1.0 and db["db_match"] and act["reward"] == 1.0


def test_communicate_needs_every_info_string():
    task = {"evaluation_criteria": {"communicate_info": ["1628", "Basic"]}}
    one = [{"role": "assistant", "content": "The refund is 1,628 dollars."}]
    res = evaluation.communicate_check(task, one)
    assert res["reward"] == 0.0 and [c["met"] for c in res["checks"]] == [True, False]
    both = one + [{"role": "assistant", "content": "Your cabin is Basic economy."}]
    assert evaluation.communicate_check(task, both)["reward"] == 1.0
