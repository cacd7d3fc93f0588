"""ALFWorld loader: selection rule, task types, manifest checksums (docs/alfworld.md §2, §6)."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.alfworld.data import TASK_TYPES, discover, load_games, resolve_root, task_key_of, task_type_of

COUNTS = {
    "pick_and_place_simple": 24,
    "pick_clean_then_place_in_recep": 31,
    "pick_heat_then_place_in_recep": 23,
    "pick_cool_then_place_in_recep": 21,
    "look_at_obj_in_light": 18,
    "pick_two_obj_and_place": 17,
}


@pytest.mark.parametrize(
    "gid, ttype, key",
    [
        ("pick_and_place_simple-Mug-None-Desk-308/trial_T1", "pick_and_place_simple", "put"),
        ("pick_clean_then_place_in_recep-Bowl-None-Cabinet-10/trial_T1", "pick_clean_then_place_in_recep", "clean"),
        ("pick_heat_then_place_in_recep-Apple-None-Fridge-10/trial_T1", "pick_heat_then_place_in_recep", "heat"),
        ("pick_cool_then_place_in_recep-Bread-None-CounterTop-10/trial_T1", "pick_cool_then_place_in_recep", "cool"),
        ("look_at_obj_in_light-AlarmClock-None-DeskLamp-308/trial_T1", "look_at_obj_in_light", "examine"),
        ("pick_two_obj_and_place-CD-None-Safe-308/trial_T1", "pick_two_obj_and_place", "puttwo"),
    ],
)
def test_task_type_and_react_key(gid, ttype, key):
    assert task_type_of(gid) == ttype and task_key_of(gid) == key


def test_unknown_task_type_names_the_choices():
    with pytest.raises(ValueError, match="pick_two_obj_and_place"):
        task_type_of("pick_three_obj-CD-None-Safe-1/trial_T1")


def test_root_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
    assert resolve_root(None) == tmp_path
    assert resolve_root("/x/y") == Path("/x/y")


def test_shared_copy_loads_and_verifies(alf_root):
    games, prov = load_games(alf_root, split="valid_unseen")
    assert len(games) == 134 and prov["formats"] == {"v2.1.1": 0, "v2.1.2+": 134}
    assert Counter(g.task_type for g in games) == COUNTS
    assert [g.id for g in games] == sorted(g.id for g in games)
    manifest = {r["id"]: r for r in json.loads((alf_root / "manifest_valid_unseen.json").read_text())}
    assert all(manifest[g.id]["task_type"] == g.task_type for g in games)


def test_task_type_filter_checks_the_subset(alf_root):
    games, prov = load_games(alf_root, task_types=["pick_two_obj_and_place"])
    assert len(games) == 17 and prov["manifest"]


def _tree(tmp: Path, alf_root: Path, n: int = 2) -> tuple[Path, list[dict]]:
    """A small data root holding copies of the first n shared games and their manifest rows."""
    rows = json.loads((alf_root / "manifest_valid_unseen.json").read_text())[:n]
    for r in rows:
        dst = tmp / "json_2.1.1" / "valid_unseen" / r["id"]
        dst.mkdir(parents=True)
        shutil.copy(alf_root / "json_2.1.1" / "valid_unseen" / r["id"] / "game.tw-pddl", dst)
    (tmp / "manifest_valid_unseen.json").write_text(json.dumps(rows))
    return tmp, rows


def test_checksum_mismatch_is_caught(alf_root, tmp_path):
    root, rows = _tree(tmp_path, alf_root)
    assert len(load_games(root)[0]) == 2
    game = root / "json_2.1.1" / "valid_unseen" / rows[0]["id"] / "game.tw-pddl"
    data = json.loads(game.read_text())
    data["walkthrough"] = data["walkthrough"][:-1]
    game.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="matches neither manifest checksum"):
        load_games(root)
    assert len(load_games(root, verify_mode="off")[0]) == 2


def test_missing_game_is_caught_and_the_fix_named(alf_root, tmp_path):
    root, rows = _tree(tmp_path, alf_root)
    shutil.rmtree(root / "json_2.1.1" / "valid_unseen" / rows[1]["id"])
    with pytest.raises(ValueError, match="1 manifest games missing.*alfworld-download"):
        load_games(root)


def test_without_manifest_auto_checks_the_count_and_strict_refuses(alf_root, tmp_path):
    root, _ = _tree(tmp_path, alf_root)
    (root / "manifest_valid_unseen.json").unlink()
    with pytest.raises(ValueError, match="found 2 games, expected 134"):
        load_games(root)
    with pytest.raises(FileNotFoundError, match="manifest=PATH"):
        load_games(root, verify_mode="strict")


def test_selection_rule_skips_movable_sliced_unsolvable_and_empty(tmp_path):
    base = tmp_path / "json_2.1.1" / "valid_unseen"
    game = {"pddl_domain": "d", "grammar": "g", "pddl_problem": "p", "solvable": True}
    layout = {
        "pick_and_place_simple-Mug-None-Desk-1/trial_T1": game,
        "pick_and_place_simple-Mug-None-Desk-1/trial_T2": {**game, "solvable": False},
        "pick_and_place_simple-Mug-None-Desk-1/trial_T3": None,  # no game file
        "pick_and_place_simple-Mug-None-Desk-1/trial_T4": {k: v for k, v in game.items() if k != "solvable"},
        "pick_and_place_with_movable_recep-Mug-Bowl-Desk-1/trial_T1": game,
        "pick_clean_then_place_in_recep-AppleSliced-None-Fridge-1/trial_T1": game,
        "look_at_obj_in_light-Book-None-DeskLamp-1/trial_T1": game,
    }
    for gid, content in layout.items():
        (base / gid).mkdir(parents=True)
        if content is not None:
            (base / gid / "game.tw-pddl").write_text(json.dumps(content))
    ids = [g.id for g in discover(tmp_path, "valid_unseen")]
    assert ids == [
        "look_at_obj_in_light-Book-None-DeskLamp-1/trial_T1",
        "pick_and_place_simple-Mug-None-Desk-1/trial_T1",
    ]
    assert [g.id for g in discover(tmp_path, "valid_unseen", ["look_at_obj_in_light"])] == ids[:1]


def test_bad_inputs_name_the_fix(tmp_path):
    with pytest.raises(FileNotFoundError, match="alfworld-download"):
        load_games(tmp_path)
    with pytest.raises(ValueError, match="valid_unseen"):
        load_games(tmp_path, split="test")
    with pytest.raises(ValueError, match="choose from"):
        discover(tmp_path, "valid_unseen", ["pick_three"])
    bad = tmp_path / "json_2.1.1" / "valid_unseen" / "look_at_obj_in_light-A-None-B-1" / "trial_T1"
    bad.mkdir(parents=True)
    (bad / "game.tw-pddl").write_text("{not json")
    with pytest.raises(ValueError, match="re-download"):
        load_games(tmp_path)


def test_all_task_types_are_covered():
    assert set(COUNTS) == set(TASK_TYPES)
