"""How a cell of ours differs from the setting the paper's number was measured in.

Every table that prints a `(paper)` value beside ours marks our row with each difference and
explains it in a footnote, so a run on the project's fixtures, on a `runner.limit` subset, with a
judge on another model or with paraphrased prompts never reads as a match:

- `[fixture]`: the cell ran on the project's own fixture data (`data_dir=fixtures`, or a data
  source the benchmark records as a fixture / synthetic), not the benchmark's data;
- `[subset n/N]`: n distinct tasks counted against the paper's N
  (runners/reference/layouts/task_counts.csv; the manifest's task count where the paper gives none);
- `[roles≠paper]`: a judge, user-simulator or tool role that the cell used ran on another model
  than the paper's (labels.yaml `paper_roles`, else the benchmark's default role backbone,
  `benchmark.roles`, else the agent's);
- `[paraphrased]`: some prompts ran on the project's own wording (the manifest's `text_sources`);
- `[mixed]`: the episodes' text sources differ among themselves (per-episode text fingerprints,
  when the records carry them), so the cell mixes two settings;
- `[sampling≠paper]`: the agent's request settings (the backbone's `sampling`, overridden by the
  method's per-role `sampling.agent`) differ from what the paper fixes for that benchmark (FlowState
  B.5: temperature 0.1, top_p 1.0, 32,768 completion tokens; PoS's release configs: temperature 0);
- `[setting≠paper]`: another recorded setting the paper fixes differs (PoS: the step cap, actions
  per turn, tool uses and observation cap of each benchmark; one run per case). The paper's
  settings are data: labels.yaml `paper_settings`.

`--strict` drops the `(paper)` row wherever one of these applies.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import orjson

from runners.analysis.papers import labels, paper_task_count

ROLE_CHECKED = ("judge", "user_sim", "tool")
# Per-episode fields that say which texts an episode ran on (first present wins).
EPISODE_TEXT_FIELDS = ("text_fingerprint", "text_sources", "texts")

FOOTNOTES = {
    "fixture": (
        "[fixture]: ran on the project's fixture data, not the benchmark's; the paper's number is not comparable"
    ),
    "subset": (
        "[subset n/N]: n of the paper's N tasks were counted (runner.limit or unfinished tasks); rates cover those "
        "tasks only and #Tok is compared per task (Tok/task), not as a total"
    ),
    "roles": "[roles≠paper]: a judge / user-simulator / tool role ran on another model than the paper's",
    "paraphrased": "[paraphrased]: some prompts ran on the project's own wording (pinned upstream text unavailable)",
    "mixed": "[mixed]: the episodes of the cell ran on different text sources (per-episode text fingerprints differ)",
    "sampling": "[sampling≠paper]: the agent's request settings differ from the paper's",
    "setting": "[setting≠paper]: a setting the paper fixes (step cap, actions per turn, observation cap, trials) "
    "differs from the paper's",
}
MARK_CODES = tuple(FOOTNOTES)  # the order marks print in


@dataclass(frozen=True)
class Mark:
    code: str  # fixture | subset | roles | paraphrased | mixed | sampling | setting
    label: str  # as printed on the row: "[subset 2/40]"
    detail: str  # per-cell explanation for the footnote


def _backbone_name(b: Any) -> str | None:
    return b.get("name") if isinstance(b, dict) else (b if isinstance(b, str) else None)


def is_fixture(manifest: dict[str, Any], config: dict[str, Any]) -> bool:
    params = (config.get("benchmark") or {}).get("params") or {}
    if params.get("data_dir") == "fixtures":
        return True
    data = (manifest.get("benchmark_notes") or {}).get("data")
    if isinstance(data, dict):
        src = str(data.get("source") or "").lower()
        if "fixture" in src or data.get("fictional") is True:
            return True
    return False


def role_differences(config: dict[str, Any], tokens_by_role: dict[str, int]) -> list[str]:
    """`role: ours vs paper` for every judge / user-simulator / tool role the cell used whose model
    is not the paper's."""
    agent = _backbone_name(config.get("backbone"))
    bench = (config.get("benchmark") or {}).get("name")
    defaults = {
        **((config.get("benchmark") or {}).get("roles") or {}),
        **((labels().get("paper_roles") or {}).get(bench) or {}),
    }
    roles = config.get("roles") or {}
    out = []
    for role in ROLE_CHECKED:
        if not tokens_by_role.get(role):
            continue
        ours = _backbone_name(roles.get(role)) or agent
        paper = defaults.get(role) or agent
        if paper == "agent":
            paper = agent
        if ours != paper:
            out.append(f"{role} on {ours} (paper: {paper})")
    return out


# The completion limit goes by two names (OpenAI's max_completion_tokens; max_tokens on Qwen/Kimi/GLM).
SAMPLING_ALIASES = {"max_tokens": "max_completion_tokens"}


def paper_settings(benchmark: str) -> dict[str, Any] | None:
    """What the paper fixes for runs on this benchmark (labels.yaml `paper_settings`), or None."""
    return next((s for s in labels().get("paper_settings") or [] if benchmark in (s.get("benchmarks") or [])), None)


def agent_sampling(config: dict[str, Any]) -> dict[str, Any]:
    """The agent's request settings as the cell sent them: the backbone's `sampling`, then the
    method's per-role `sampling.agent` (PoS's configs), the completion limit under one name."""

    def d(x: Any) -> dict[str, Any]:
        return x if isinstance(x, dict) else {}

    backbone = d(config.get("backbone"))
    params = d(d(config.get("method")).get("params"))
    agent = d(d(params.get("sampling")).get("agent"))
    merged = {**(backbone.get("sampling") or {}), **agent}
    return {SAMPLING_ALIASES.get(k, k): v for k, v in merged.items()}


def _differs(ours: Any, paper: Any) -> bool:
    if isinstance(ours, (int, float)) and isinstance(paper, (int, float)) and not isinstance(ours, bool):
        return abs(float(ours) - float(paper)) > 1e-9
    return ours != paper


def setting_differences(c: Any) -> tuple[list[str], list[str]]:
    """(sampling differences, other setting differences) of a cell from what the paper fixes for
    its benchmark, each as `key: ours vs paper`. A key the cell does not record counts as the
    harness default, which the project's presets set to the paper's, so it is not a difference."""
    want = paper_settings(c.benchmark)
    if not want:
        return [], []
    sampling = agent_sampling(c.config)
    samp = [
        f"{k}={sampling[k]} (paper: {v})"
        for k, v in (want.get("sampling") or {}).items()
        if k in sampling and _differs(sampling[k], v)
    ]
    other = []
    params = (c.config.get("benchmark") or {}).get("params") or {}
    for k, v in ((want.get("params") or {}).get(c.benchmark) or {}).items():
        if params.get(k) is not None and _differs(params[k], v):
            other.append(f"benchmark.{k}={params[k]} (paper: {v})")
    if want.get("trials") is not None and int(getattr(c, "trials", 1) or 1) != int(want["trials"]):
        other.append(f"trials={c.trials} (paper: {want['trials']})")
    return samp, other


def text_variants(episodes: list[dict[str, Any]], manifest: dict[str, Any]) -> int:
    """How many distinct text sources the counted episodes ran on (1 when none are recorded)."""
    if manifest.get("mixed_text_sources") is True:
        return 2
    values = [next((e[f] for f in EPISODE_TEXT_FIELDS if e.get(f) is not None), None) for e in episodes]
    try:  # orjson: ~5x the standard library on 10,000 episodes; the same distinct values
        seen = {orjson.dumps(v, option=orjson.OPT_SORT_KEYS, default=str) for v in values if v is not None}
    except TypeError:  # non-str keys, ints beyond 64 bits: every value through the standard library
        seen = {json.dumps(v, sort_keys=True, default=str).encode() for v in values if v is not None}
    return max(1, len(seen))


def cell_marks(c: Any) -> list[Mark]:
    """The marks of one CellSummary (runners.analysis.cells)."""
    manifest = getattr(c, "manifest", None) or {}
    out: list[Mark] = []
    if is_fixture(manifest, c.config):
        out.append(
            Mark(
                "fixture",
                "[fixture]",
                f"{c.cell}: data_dir={((c.config.get('benchmark') or {}).get('params') or {}).get('data_dir')}",
            )
        )
    n = len({str(e.get("task_id")) for e in c.episodes}) if c.episodes else c.n_episodes // max(1, c.trials)
    big_n = paper_task_count(c.benchmark) or c.n_tasks
    if big_n and n < big_n:
        out.append(Mark("subset", f"[subset {n}/{big_n}]", f"{c.cell}: {n} of {big_n} tasks"))
    diffs = role_differences(c.config, c.tokens_by_role)
    if diffs:
        out.append(Mark("roles", "[roles≠paper]", f"{c.cell}: {'; '.join(diffs)}"))
    if c.paraphrased:
        out.append(Mark("paraphrased", "[paraphrased]", f"{c.cell}: {', '.join(c.paraphrased)}"))
    k = text_variants(c.episodes, manifest)
    if k > 1:
        out.append(Mark("mixed", "[mixed]", f"{c.cell}: episodes ran on {k} different text sources"))
    samp, other = setting_differences(c)
    if samp:
        out.append(Mark("sampling", "[sampling≠paper]", f"{c.cell}: {', '.join(samp)}"))
    if other:
        out.append(Mark("setting", "[setting≠paper]", f"{c.cell}: {', '.join(other)}"))
    return out


def row_marks(cells: list[Any]) -> tuple[list[str], list[Mark]]:
    """(labels printed on a row made of these cells, every cell's marks for the footnotes). A
    subset whose n/N differs between the row's cells prints as `[subset]`."""
    marks = [m for c in cells for m in cell_marks(c)]
    labels: list[str] = []
    for code in MARK_CODES:
        these = [m for m in marks if m.code == code]
        if not these:
            continue
        distinct = sorted({m.label for m in these})
        labels.append(distinct[0] if len(distinct) == 1 else f"[{code}]")
    return labels, marks


def footnotes(marks: list[Mark]) -> list[str]:
    """One footnote per kind of mark used, with the cells it applies to."""
    out = []
    for code, text in FOOTNOTES.items():
        details = sorted({m.detail for m in marks if m.code == code})
        if details:
            out.append(f"{text}. " + "; ".join(details))
    return out
