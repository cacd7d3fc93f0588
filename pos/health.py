"""Progress health: is the agent trapped? (docs/pos.md §7, §8; upstream `belief/trappingDetection.py`).

Pure functions over a window of snapshots. A snapshot is a dict
`{"progress": 0|1|None, "epistemic_gaps": [stable ids], "achievement_gaps": [stable ids],
  "world": {"entities": [...], "states": [...], "relations": [...]}, "active_gap_world": {same}}`
where `active_gap_world` is that snapshot's world projected on the *current* Active Gap
(`pos.projection.project_on_gap`).

    H = 1 − max(P_E, P_A) · max(S, R);  trapped ⇔ window_ready ∧ H ≤ 0.25

CLI: `python -m pos.health --transitions FILE.jsonl` prints one JSON object with
P_E, P_A, S, R, period, H, trapped, pattern (plus window_ready, gap_dimension, persistent gaps)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pydantic import BaseModel, Field

from pos.text import norm
from pos.world import KINDS

Snapshot = dict[str, Any]


class HealthConfig(BaseModel):
    """`trapping` block of the PoS configs (§11)."""

    enabled: bool = True
    window_size: int = Field(8, description="K: verified transitions in the window")
    recurrence_epsilon: float = Field(0.15, description="ε: world distance counted as a revisit")
    max_cycle_length: int = Field(4, description="largest recurrence lag")
    health_threshold: float = Field(0.25, description="trapped at H ≤ this")
    cycle_threshold: float = Field(0.75, description="Cycle pattern needs R ≥ this")

    def model_post_init(self, _ctx: Any) -> None:
        if not 1 <= self.max_cycle_length < self.window_size:
            raise ValueError(
                f"trapping: need 1 ≤ max_cycle_length < window_size, got {self.max_cycle_length} and {self.window_size}"
            )
        for k in ("recurrence_epsilon", "health_threshold", "cycle_threshold"):
            if not 0.0 <= getattr(self, k) <= 1.0:
                raise ValueError(f"trapping.{k} must be in [0, 1], got {getattr(self, k)}")


class HealthReport(BaseModel):
    """`BeliefHealth` (§1). `trapping_pattern` None while trapped means the generic constraint."""

    window_ready: bool = False
    persistence_e: float = 0.0
    persistence_a: float = 0.0
    stagnation: float = 0.0
    recurrence: float = 0.0
    recurrence_period: int | None = None
    recurrence_rates: dict[int, float] = Field(default_factory=dict)
    health_score: float = 1.0
    health_threshold: float = 0.25
    gap_dimension: str | None = None
    trapping_pattern: str | None = None
    persistent_epistemic_gaps: list[str] = Field(default_factory=list)
    persistent_achievement_gaps: list[str] = Field(default_factory=list)

    @property
    def trapped(self) -> bool:
        return self.window_ready and self.health_score <= self.health_threshold


def is_label(progress: Any) -> bool:
    """A verified progress label is the int 0 or 1 (never a bool, never None)."""
    return not isinstance(progress, bool) and progress in (0, 1)


def verified_window(snapshots: list[Snapshot], k: int) -> list[Snapshot]:
    """The last `k` snapshots with a verified label, in step order (frontier changes do not reset it)."""
    return [s for s in snapshots if is_label(s.get("progress"))][-k:]


def persistence(id_lists: list[list[str]]) -> tuple[float, list[str]]:
    """P_X = |∩ ids_i| / |ids_1| (0 when ids_1 is empty) and the intersection, in ids_1 order."""
    if not id_lists or not id_lists[0]:
        return 0.0, []
    common = set(id_lists[0]).intersection(*map(set, id_lists[1:]))
    first = list(dict.fromkeys(id_lists[0]))
    return len(common) / len(first), [i for i in first if i in common]


def stagnation(labels: list[int], k: int) -> float:
    """S = 1 − Σu / K."""
    return 1.0 - sum(labels) / k


def signatures(records: list[Any]) -> set[str]:
    """§7.2 record signatures: norm(json.dumps(record, sort_keys=True, ensure_ascii=False))."""
    return {norm(json.dumps(r, sort_keys=True, ensure_ascii=False)) for r in records}


def jaccard_distance(a: set[str], b: set[str]) -> float:
    """d_J = 1 − |A∩B|/|A∪B|, 0 when both are empty."""
    union = a | b
    return 0.0 if not union else 1.0 - len(a & b) / len(union)


def world_distance(x: dict[str, list[Any]], y: dict[str, list[Any]]) -> float:
    """d_W: mean Jaccard distance over entities, states, relations."""
    return sum(jaccard_distance(signatures(x.get(k) or []), signatures(y.get(k) or [])) for k in KINDS) / 3


def recurrence(
    projections: list[dict[str, list[Any]]], epsilon: float, max_lag: int
) -> tuple[float, int | None, dict[int, float]]:
    """§7.4–5: rate_ℓ = #{i ∈ [ℓ, n−1] : d_W(p_i, p_{i−ℓ}) ≤ ε} / (n − ℓ) for ℓ = 1..min(max_lag, n−1);
    R = the max rate, period = its lag (only a strictly greater rate replaces it, so ties keep the
    smaller lag); all rates 0 ⇒ (0, None)."""
    n = len(projections)
    rates: dict[int, float] = {}
    best, period = 0.0, None
    for lag in range(1, min(max_lag, n - 1) + 1):
        hits = sum(world_distance(projections[i], projections[i - lag]) <= epsilon for i in range(lag, n))
        rates[lag] = hits / (n - lag)
        if rates[lag] > best:
            best, period = rates[lag], lag
    return best, period, rates


def health_score(p_e: float, p_a: float, s: float, r: float) -> float:
    """H = 1 − max(P_E, P_A) · max(S, R) (§7)."""
    return 1.0 - max(p_e, p_a) * max(s, r)


def gap_dimension(last_e: list[str], last_a: list[str], p_e: float, p_a: float) -> str | None:
    """§8: among types with gaps in the last window snapshot, the more persistent; ties → epistemic."""
    cands = [(p, t) for p, t, ids in ((p_e, "epistemic", last_e), (p_a, "achievement", last_a)) if ids]
    if not cands:
        return None
    return max(cands, key=lambda c: c[0])[1]  # max() keeps the first on ties


def diagnose_pattern(
    worlds: list[dict[str, list[Any]]],
    projections: list[dict[str, list[Any]]],
    r: float,
    period: int | None,
    cfg: HealthConfig,
) -> str | None:
    """§8 order: Static (last two full worlds within ε) → Cycle (R ≥ cycle_threshold, period > 1)
    → Drift (last two Active-Gap projections within ε) → None (generic)."""
    if len(worlds) >= 2 and world_distance(worlds[-1], worlds[-2]) <= cfg.recurrence_epsilon:
        return "static"
    if r >= cfg.cycle_threshold and period is not None and period > 1:
        return "cycle"
    if len(projections) >= 2 and world_distance(projections[-1], projections[-2]) <= cfg.recurrence_epsilon:
        return "drift"
    return None


def detect(snapshots: list[Snapshot], cfg: HealthConfig | None = None) -> HealthReport:
    """`detect_belief_trapping` over all snapshots so far (unverified ones are skipped)."""
    cfg = cfg or HealthConfig()
    win = verified_window(snapshots, cfg.window_size)
    rep = HealthReport(health_threshold=cfg.health_threshold)
    if len(win) < cfg.window_size or any(s.get("world") is None for s in win):
        return rep
    p_e, keep_e = persistence([list(s.get("epistemic_gaps") or []) for s in win])
    p_a, keep_a = persistence([list(s.get("achievement_gaps") or []) for s in win])
    s = stagnation([int(x["progress"]) for x in win], cfg.window_size)
    worlds = [x["world"] for x in win]
    projs = [
        x["world"] if x.get("active_gap_world") is None else x["active_gap_world"] for x in win
    ]  # absent: no Active Gap ⇒ full world
    r, period, rates = recurrence(projs, cfg.recurrence_epsilon, cfg.max_cycle_length)
    rep = HealthReport(
        window_ready=True,
        persistence_e=p_e,
        persistence_a=p_a,
        stagnation=s,
        recurrence=r,
        recurrence_period=period,
        recurrence_rates=rates,
        health_score=health_score(p_e, p_a, s, r),
        health_threshold=cfg.health_threshold,
        persistent_epistemic_gaps=keep_e,
        persistent_achievement_gaps=keep_a,
    )
    if rep.trapped:
        rep.gap_dimension = gap_dimension(
            list(win[-1].get("epistemic_gaps") or []), list(win[-1].get("achievement_gaps") or []), p_e, p_a
        )
        rep.trapping_pattern = diagnose_pattern(worlds, projs, r, period, cfg)
    return rep


def summary(rep: HealthReport) -> dict[str, Any]:
    """The CLI's JSON object. `pattern` is null when not trapped, "generic" when trapped without a pattern."""
    return {
        "P_E": rep.persistence_e,
        "P_A": rep.persistence_a,
        "S": rep.stagnation,
        "R": rep.recurrence,
        "period": rep.recurrence_period,
        "H": rep.health_score,
        "trapped": rep.trapped,
        "pattern": (rep.trapping_pattern or "generic") if rep.trapped else None,
        "window_ready": rep.window_ready,
        "gap_dimension": rep.gap_dimension,
        "persistent_epistemic_gaps": rep.persistent_epistemic_gaps,
        "persistent_achievement_gaps": rep.persistent_achievement_gaps,
    }


def read_window(path: str) -> list[Snapshot]:
    """Snapshots from a JSON-lines file; errors name the line and the fix."""
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                snap = json.loads(line)
            except ValueError as e:
                raise ValueError(f"{path}:{n}: not valid JSON ({e}); write one snapshot object per line") from None
            if not isinstance(snap, dict):
                raise ValueError(
                    f"{path}:{n}: each line must be a JSON object with progress, epistemic_gaps, achievement_gaps, "
                    f"world, active_gap_world"
                )
            p = snap.get("progress")
            if p is not None and not is_label(p):
                raise ValueError(f"{path}:{n}: 'progress' must be 0, 1 or null, got {p!r}")
            for key in ("epistemic_gaps", "achievement_gaps"):
                if not isinstance(snap.get(key, []), list):
                    raise ValueError(f"{path}:{n}: '{key}' must be a list of stable gap IDs")
            for key in ("world", "active_gap_world"):
                w = snap.get(key)
                if w is not None and (
                    not isinstance(w, dict) or not all(isinstance(w.get(k, []), list) for k in KINDS)
                ):
                    raise ValueError(
                        f'{path}:{n}: \'{key}\' must be {{"entities": [...], "states": [...], "relations": [...]}}'
                    )
            out.append(snap)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m pos.health", description="PoS progress health of a window of snapshots (docs/pos.md §7–8)."
    )
    ap.add_argument("--transitions", required=True, help="JSON-lines file, one snapshot per line, oldest first")
    d = HealthConfig()
    ap.add_argument("--window-size", type=int, default=d.window_size)
    ap.add_argument("--epsilon", type=float, default=d.recurrence_epsilon)
    ap.add_argument("--max-lag", type=int, default=d.max_cycle_length)
    ap.add_argument("--threshold", type=float, default=d.health_threshold)
    a = ap.parse_args(argv)
    try:
        cfg = HealthConfig(
            window_size=a.window_size,
            recurrence_epsilon=a.epsilon,
            max_cycle_length=a.max_lag,
            health_threshold=a.threshold,
        )
        snaps = read_window(a.transitions)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(summary(detect(snaps, cfg))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
