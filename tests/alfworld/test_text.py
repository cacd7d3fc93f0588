"""Pure ALFWorld text rules: ReAct clean-ups, exact command matching, the put-syntax patch.
None of these need the engine (docs/alfworld.md §3.2, §4.1, §4.3)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.alfworld import text as alfworld_text

ADM = ["go to desk 1", "go to desk 2", "inventory", "look", "move mug 1 to desk 1", "take mug 1 from desk 2"]
RESET = (
    "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, "
    "you see a bed 1, and a desk 1.\n\nYour task is to: put a mug in desk."
)


def test_initial_observation_drops_banner_and_joins_with_single_newlines():
    assert alfworld_text.initial_observation(RESET) == (
        "You are in the middle of a room. Looking quickly around you, you see a bed 1, "
        "and a desk 1.\nYour task is to: put a mug in desk."
    )


@pytest.mark.parametrize(
    "obs, action, kwargs, want",
    [
        (
            "You arrive at loc 12. On the desk 1, you see a mug 1.",
            "go to desk 1",
            {},
            "On the desk 1, you see a mug 1.",
        ),
        (
            "You arrive at desk 2. On the desk 2, you see a cd 3, and a pen 2.",
            "go to desk 2",
            {},
            "On the desk 2, you see a cd 3, and a pen 2.",
        ),
        (
            "You arrive at safe 1. The safe 1 is closed.",
            "go to safe 1",
            {"strip_named_arrival": False},
            "You arrive at safe 1. The safe 1 is closed.",
        ),
        (
            "You pick up the cd 3 from the drawer 5.",
            "take cd 3 from drawer 5",
            {},
            "You pick up the cd 3 from the drawer 5.",
        ),
        ("Nothing happens.", "think: the mug is probably in a cabinet", {}, "OK."),
        ("Nothing happens.", "  think: x", {"think_ok": False}, "Nothing happens."),
    ],
)
def test_clean_observation(obs, action, kwargs, want):
    assert alfworld_text.clean_observation(obs, action, **kwargs) == want


def test_arrival_strip_only_touches_a_leading_sentence():
    obs = "You open the drawer 1. The drawer 1 is open. In it, you see nothing."
    assert alfworld_text.clean_observation(obs, "open drawer 1") == obs


@pytest.mark.parametrize(
    "raw, issue",
    [
        ("Go to desk 1", "case"),
        ("> go to desk 1", "prompt_prefix"),
        ("go to desk 1\ngo to desk 2", "multi_line"),
        ("think: where is the mug?", "think"),
        ("   ", "empty"),
        ("put mug 1 in/on desk 1", "not_admissible"),
    ],
)
def test_exact_rule_rejects_anything_not_admissible_verbatim(raw, issue):
    m = alfworld_text.match_command(raw, ADM)
    assert (m.admissible, m.issue) == (False, issue)
    assert m.command == raw.strip()  # the engine sees the text as written and answers "Nothing happens."


def test_exact_rule_accepts_surrounding_whitespace_only():
    assert alfworld_text.match_command("  go to desk 2 \n", ADM) == alfworld_text.CommandMatch(
        command="go to desk 2", admissible=True
    )


@pytest.mark.parametrize("raw", ["Go To Desk 1", "> go to desk 1", "go  to desk 1.", "go to desk 1\nthen look"])
def test_lenient_rule_maps_to_the_admissible_string_and_keeps_the_issue(raw):
    m = alfworld_text.match_command(raw, ADM, lenient=True)
    assert m.admissible and m.command == "go to desk 1" and m.issue is not None


def test_lenient_rule_still_rejects_unknown_commands():
    assert not alfworld_text.match_command("go to desk 9", ADM, lenient=True).admissible


@pytest.mark.parametrize(
    "cmd, want",
    [
        ("move mug 1 to desk 1", "put mug 1 in/on desk 1"),
        ("move potato 2 to countertop 1", "put potato 2 in/on countertop 1"),
        ("move tomato 1 to toaster 1", "put tomato 1 in/on toaster 1"),
        ("go to desk 1", "go to desk 1"),
    ],
)
def test_move_to_put(cmd, want):
    assert alfworld_text.move_to_put(cmd) == want


def test_put_patch_on_a_real_grammar(alf_root):
    game = next((alf_root / "json_2.1.1" / "valid_unseen").glob("pick_and_place_simple-*/*/game.tw-pddl"))
    grammar = json.loads(game.read_text())["grammar"]
    assert alfworld_text.grammar_syntax(grammar) == "move"
    patched = alfworld_text.patch_grammar_put(grammar)
    assert alfworld_text.grammar_syntax(patched) == "put"
    assert patched.count('template :: "put {o} in/on {r}";') == 2
    assert "You put the {o.name} in/on the {r.name}." in patched and "You move the" not in patched
    assert "put (object) in/on (receptacle):" in patched and "move (object)" not in patched
    assert alfworld_text.patch_grammar_put(patched) == patched  # already put-syntax: unchanged


def test_put_patch_refuses_an_unexpected_grammar():
    with pytest.raises(ValueError, match="syntax='native'"):
        alfworld_text.patch_grammar_put('action PutObject { template :: "move {o} to {r}"; }')


def test_package_imports_without_the_engine():
    """Every module but the engine's internals loads with alfworld/textworld unimportable."""
    code = (
        "import sys; sys.modules['alfworld'] = None; sys.modules['textworld'] = None\n"
        "import benchmarks.alfworld, benchmarks.alfworld.benchmark, benchmarks.alfworld.replay\n"
        "from benchmarks.alfworld import engine\n"
        "try:\n    engine.Game({})\nexcept RuntimeError as e:\n    assert 'pip install' in str(e); print('ok')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=str(Path(__file__).parents[2])
    )
    assert out.stdout.strip() == "ok", out.stderr
