"""The mutation check's own list (scripts/mutation): every mutant still applies to the tree, and a
mutant that no longer does stops the check with its name instead of a traceback at its turn."""

import pytest

from scripts.mutation import run as mutation
from scripts.mutation.mutants import MUTANTS, PROFILES, Mutant
from tests.runners.sweep_helpers import REPO


def test_every_mutant_applies_to_the_tree():
    stale = [why for m in MUTANTS if (why := mutation.stale(m, REPO)) is not None]
    assert not stale, "\n".join(stale)
    assert len({m.id for m in MUTANTS}) == len(MUTANTS), "mutant ids must be unique"


def test_profiles_name_existing_mutants():
    ids = {m.id for m in MUTANTS}
    for name, members in PROFILES.items():
        assert members and set(members) <= ids, (name, set(members) - ids)


def test_a_stale_mutant_fails_the_check_naming_it(monkeypatch, capsys):
    gone = Mutant("reader_gone", "kit/reader.py", "this text is not in the reader", "x", ("tests/test_reader.py",))
    moved = Mutant("tau_moved", "benchmarks/tau/no_such_module.py", "a", "b", ("tests/tau/test_evaluation.py",))
    monkeypatch.setattr(mutation, "MUTANTS", [MUTANTS[0], gone, moved])
    assert mutation.main([]) == 2
    err = capsys.readouterr().err
    assert "2 mutant(s) no longer apply" in err
    assert "mutant reader_gone: 'this text is not in the reader' occurs 0 times in kit/reader.py" in err
    assert "mutant tau_moved: benchmarks/tau/no_such_module.py does not exist" in err


def test_apply_refuses_an_ambiguous_mutant(tmp_path):
    (tmp_path / "m.py").write_text("x = 1\nx = 1\n")
    with pytest.raises(mutation.StaleMutant, match=r"mutant twice: 'x = 1' occurs 2 times in m.py"):
        mutation.apply(Mutant("twice", "m.py", "x = 1", "x = 2", ()), tmp_path)
