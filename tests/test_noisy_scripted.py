"""The noisy scripted backbone (`scripted.perturb`, `perturb_rate`) and the robustness script."""

import asyncio
import random

import pytest

from kit.react import ReactProtocol
from runners.api import Decision, EpisodeScope
from runners.backbones.scripted import ScriptedBackbone


def shout(text: str, *, role: str, protocol: str | None, rng: random.Random) -> str:
    """A user habit (any module can define one): records what it was given."""
    return f"{text}\n<!-- {role} {protocol} {rng.random():.3f} -->"


class _Oracle:
    def reference(self, role, messages):
        return Decision(message="42")


async def _texts(backbone: ScriptedBackbone, n: int, attempt: int = 0) -> list[str]:
    bound = backbone.bind(EpisodeScope(key="e", oracle=_Oracle()))
    return [
        (
            await bound.complete(
                [{"role": "user", "content": f"q{i}"}], role="agent", protocol=ReactProtocol(), attempt=attempt
            )
        ).text
        for i in range(n)
    ]


def test_perturb_hook_gets_role_protocol_name_and_seeded_rng():
    b = ScriptedBackbone(perturb="tests.test_noisy_scripted:shout")
    out = asyncio.run(_texts(b, 3))
    assert all(t.endswith("-->") and "agent react" in t for t in out)
    assert out == asyncio.run(
        _texts(ScriptedBackbone(perturb="tests.test_noisy_scripted:shout"), 3)
    )  # seeded: reproducible


def test_perturb_rate_is_a_share_of_calls_and_a_resample_draws_again():
    b = ScriptedBackbone(perturb="tests.test_noisy_scripted:shout", perturb_rate=0.3)
    first = asyncio.run(_texts(b, 200))
    share = sum(t.endswith("-->") for t in first) / 200
    assert 0.2 < share < 0.4
    again = asyncio.run(_texts(b, 200, attempt=1))
    assert [t.endswith("-->") for t in again] != [t.endswith("-->") for t in first]
    assert not any(
        t.endswith("-->")
        for t in asyncio.run(_texts(ScriptedBackbone(perturb="tests.test_noisy_scripted:shout", perturb_rate=0.0), 20))
    )


@pytest.mark.parametrize("bad", ["nocolon", "no.such.module:f", "runners.backbones.habits:nope"])
def test_bad_perturb_path_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="perturb"):
        ScriptedBackbone(perturb=bad)


def test_robustness_script_smoke(tmp_path, capsys):
    from scripts.robustness.__main__ import main

    out = tmp_path / "table.md"
    assert (
        main(
            [
                "--methods",
                "full_context",
                "--benchmarks",
                "memoryarena_math",
                "--habits",
                "latex_backslashes",
                "--rates",
                "1.0",
                "--check",
                "--markdown",
                str(out),
            ]
        )
        == 0
    )
    assert "| full_context | memoryarena_math | latex_backslashes | 100% | ×1.00 |" in out.read_text()
    assert "0 below the thresholds" in capsys.readouterr().out
