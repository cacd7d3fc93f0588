"""The papers' own quantitative claims, checked against a run: `paper/claims.md` and `claims.csv`.

Neither paper ships a way to check its prose. Each claim below is a sentence of a paper's text (or
its project page) that a run can test, restated in our words with its number. A claim is one
function of a value reader; it runs twice:

- on the **paper's tables** (runners/reference/*.csv): the number it gives must be the number the
  paper quotes (`paper recomputed` beside `paper quoted`; the tests hold every claim to it), so
  the computation is the paper's own;
- on **our cells**: the same computation over the pooled experiments, with the marks of every cell
  it read (runners.analysis.fidelity) and the cells it needed but could not find.

The verdict is `holds`, `does not hold` or `not computable` (the missing cells listed). Each claim
states its rule: a claim of a direction ("FlowState beats …", "every ablation lowers …") holds
when the direction holds in every setting it names; the size is printed beside the paper's, not
tested (a run at another sample size or date cannot be held to the second decimal). A claim about
every setting is refuted by one computable counter-example even while other settings are missing.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Any, Callable

from runners.analysis.papers import BACKBONE_LABELS, BENCHMARK_DOMAINS, METHOD_ALIASES, METHOD_LABELS, paper_lookup

HOLDS, FAILS, UNKNOWN = "holds", "does not hold", "not computable"

# Our metric name -> the paper's, where they differ (ALFWorld's SR is PoS's task_success).
PAPER_METRIC = {("alfworld", "SR"): "task_success"}

MA = ["memoryarena_shopping", "memoryarena_travel", "memoryarena_math", "memoryarena_phys"]
MA_METRICS = {
    "memoryarena_shopping": ["SR", "PS"],
    "memoryarena_travel": ["SR", "PS", "sPS"],
    "memoryarena_math": ["SR", "PS"],
    "memoryarena_phys": ["SR", "PS"],
}
TABLE1_ROWS = [
    ("full_context", "deepseek_v4_flash"),
    ("full_context", "gpt_5_6_terra"),
    ("full_context", "qwen3_5_397b"),
    ("reasoningbank", "deepseek_v4_flash"),
    ("bm25", "deepseek_v4_flash"),
    ("mem0", "deepseek_v4_flash"),
    ("zipact", "deepseek_v4_flash"),
    ("zipact_bm25", "deepseek_v4_flash"),
]
MEMORY_SYSTEMS = ["reasoningbank", "bm25", "mem0"]
FS_BACKBONES = ["qwen3_5_397b", "deepseek_v4_flash", "gpt_5_6_terra"]  # Table 5, in the paper's order
TABLE5 = ["memoryarena_shopping", "memoryarena_math", "memoryarena_phys"]
POS_BACKBONES = ["qwen3_7_plus", "kimi_k3", "glm_5_3"]
POS_BENCH = {
    "alfworld": "SR",
    "loca": "task_success",
    "rca100": "joint_entity_type_accuracy",
    "clindiag": "diagnosis_accuracy",
}
POS_BASELINES = ["full_context", "acon", "pace", "hiagent", "longhorizon_harness"]
POS_ABLATIONS = ["pos_no_consistency", "pos_no_trapping"]
DS = "deepseek_v4_flash"


Key = tuple[str, str, str]  # (method, backbone, benchmark), our config names


class Reader:
    """Values by (method, backbone, benchmark, metric), recording every cell read and every cell
    needed but absent. `source` is "paper" (the reference CSVs) or "ours" (a Cells object)."""

    def __init__(self, source: str, cells: Any = None) -> None:
        self.source, self.cells = source, cells
        self.used: list[Key] = []
        self.missing: list[Key] = []

    def cell(self, m: str, b: str, x: str) -> Any:
        return self.cells.get(m, b, x) if self.cells is not None else None

    def get(self, m: str, b: str, x: str, metric: str) -> float | None:
        if self.source == "paper":
            v = _paper(m, b, x, PAPER_METRIC.get((x, metric), metric))
            if v is None:
                self.missing.append((m, b, x))
            return v
        from runners.analysis.units import paper_tok

        c = self.cell(m, b, x)
        if c is None:
            self.missing.append((m, b, x))
            return None
        self.used.append((m, b, x))
        v = paper_tok(c) if metric == "Tok" else c.metrics.get(metric)
        return None if v is None else float(v)

    def cost(self, m: str, ref: str, b: str, x: str, which: str) -> float | None:
        """PoS Table 2's ratios: `total` = total tokens per episode ÷ the reference's; `agent` =
        the task agent's tokens per episode, % change from the reference's."""
        if self.source == "paper":
            name = {"total": "total_tokens_ratio", "agent": "task_agent_tokens_change"}[which]
            v = _paper(m, b, x, name)
            if v is None:
                self.missing.append((m, b, x))
            return v
        from runners.api import method_tokens

        a, r = self.cell(m, b, x), self.cell(ref, b, x)
        for key, c in (((m, b, x), a), ((ref, b, x), r)):
            (self.used if c is not None else self.missing).append(key)
        if a is None or r is None or not a.n_episodes or not r.n_episodes:
            return None
        if which == "total":
            ta, tr = method_tokens(a.tokens_by_role) / a.n_episodes, method_tokens(r.tokens_by_role) / r.n_episodes
            return ta / tr if tr else None
        ga, gr = a.tokens_by_role.get("agent", 0) / a.n_episodes, r.tokens_by_role.get("agent", 0) / r.n_episodes
        return 100.0 * (ga / gr - 1) if gr else None


def _paper(m: str, b: str, x: str, metric: str) -> float | None:
    for label in (METHOD_LABELS.get(m, m), *METHOD_ALIASES.get(m, ())):
        v = paper_lookup(label, b, BENCHMARK_DOMAINS.get(x, x), metric)
        if v not in (None, ""):
            return float(v)
    return None


@dataclass
class Result:
    value: str  # as printed
    ok: bool | None  # the claim's rule: True / False / None = not computable
    detail: str = ""  # per setting, for the reader who checks


@dataclass
class Claim:
    id: str
    paper: str
    where: str
    text: str  # the claim in our words, with the paper's number
    quoted: str  # the paper's number as it states it
    rule: str  # how ours is computed and when the claim holds
    compute: Callable[[Reader], Result]


@dataclass
class Checked:
    claim: Claim
    paper_value: str
    ours: str
    verdict: str
    detail: str
    missing: list[str] = field(default_factory=list)
    marks: str = ""


def _title(x: str) -> str:
    from runners.analysis.paper_tables import domain_title

    return domain_title(x)


def _fmt(v: float | None, unit: str = " pp") -> str:
    return "–" if v is None else f"{v:+.2f}{unit}"


def _range(vs: list[float]) -> str:
    lo, hi = f"{min(vs):+.2f}", f"{max(vs):+.2f}"
    return f"{lo} to {hi}" if lo != hi else lo


def _above_all(mine: float | None, others: list[tuple[Any, float | None]]) -> tuple[bool | None, Any]:
    """(True: above every other; False: beaten by a present one (which); None: not beaten by any
    present one, but one is missing or ours is)."""
    present = [(k, v) for k, v in others if v is not None]
    if mine is not None and present:
        k, v = max(present, key=lambda kv: float(kv[1] or 0.0))
        if v is not None and v >= mine:
            return False, k
    if mine is None or len(present) < len(others):
        return None, None
    return True, None


@dataclass
class Tally:
    """Settings where ours is above every other (`won`), beaten by a present one (`lost`, said how),
    or open (a cell missing): the count claims ("8 of 9", "in every domain", "12 of 12")."""

    won: int = 0
    lost: list[str] = field(default_factory=list)
    open: int = 0

    def add(self, ok: bool | None, lost_as: str) -> None:
        if ok:
            self.won += 1
        elif ok is False:
            self.lost.append(lost_as)
        else:
            self.open += 1

    def value(self, prefix: str = "") -> str:
        return f"{prefix}{self.won} of {self.won + len(self.lost)}" + (
            f" ({self.open} not computable)" if self.open else ""
        )


# ---------------------------------------------------------------- FlowState
def leads_table1(r: Reader) -> Result:
    t = Tally()
    for x, metrics in MA_METRICS.items():
        for metric in metrics:
            others = [(mb, r.get(*mb, x, metric)) for mb in TABLE1_ROWS if _paper(*mb, x, metric) is not None]
            ok, by = _above_all(r.get("flowstate", DS, x, metric), others)
            t.add(ok, f"{_title(x)} {metric} (to {METHOD_LABELS[by[0]]} / {BACKBONE_LABELS[by[1]]})" if by else "")
    detail = "not led: " + ", ".join(t.lost) if t.lost else ""
    if len(t.lost) > 1:  # "8 of 9" is refuted by a second metric lost, whatever is missing
        return Result(t.value(), False, detail)
    return Result(t.value(), None if t.open else t.won >= 8, detail)


def over_strongest_memory(x: str) -> Callable[[Reader], Result]:
    def compute(r: Reader) -> Result:
        fs = r.get("flowstate", DS, x, "PS")
        mem = [(m, r.get(m, DS, x, "PS")) for m in MEMORY_SYSTEMS]
        if fs is None or any(v is None for _, v in mem):
            return Result("–", None)
        m, v = max(mem, key=lambda mv: mv[1])  # type: ignore[arg-type, return-value]
        d = fs - v  # type: ignore[operator]
        return Result(_fmt(d), d > 0, f"strongest memory system: {METHOD_LABELS[m]} ({v:.2f})")

    return compute


def over_strongest_row(x: str, metric: str) -> Callable[[Reader], Result]:
    """FlowState (DeepSeek-V4-Flash) − the best other row of Table 1 (any method, any backbone the
    paper reports for this column)."""

    def compute(r: Reader) -> Result:
        fs = r.get("flowstate", DS, x, metric)
        rows = [(mb, r.get(*mb, x, metric)) for mb in TABLE1_ROWS if _paper(*mb, x, metric) is not None]
        if fs is None or any(v is None for _, v in rows):
            return Result("–", None)
        (m, b), v = max(rows, key=lambda mv: mv[1])  # type: ignore[arg-type, return-value]
        d = fs - v  # type: ignore[operator]
        return Result(_fmt(d), d > 0, f"strongest baseline: {METHOD_LABELS[m]} / {BACKBONE_LABELS[b]} ({v:.2f})")

    return compute


def shopping_ps_across_backbones(r: Reader) -> Result:
    ds = {
        b: (r.get("flowstate", b, "memoryarena_shopping", "PS"), r.get("full_context", b, "memoryarena_shopping", "PS"))
        for b in FS_BACKBONES
    }
    got = {b: a - f for b, (a, f) in ds.items() if a is not None and f is not None}
    detail = ", ".join(f"{BACKBONE_LABELS[b]} {d:+.2f}" for b, d in got.items())
    if not got:
        return Result("–", None)
    if any(d <= 0 for d in got.values()):
        return Result(_range(list(got.values())) + " pp", False, detail)
    return Result(_range(list(got.values())) + " pp", True if len(got) == len(FS_BACKBONES) else None, detail)


def relative_tokens_across_backbones(r: Reader) -> Result:
    got = {}
    for b in FS_BACKBONES:
        pairs = [(r.get("flowstate", b, x, "Tok"), r.get("full_context", b, x, "Tok")) for x in TABLE5]
        ok = [(a, f) for a, f in pairs if a is not None and f]
        if len(ok) == len(pairs):
            got[b] = -sum(100.0 * (a / f - 1) for a, f in ok) / len(ok)
    if not got:
        return Result("–", None)
    detail = ", ".join(f"{BACKBONE_LABELS[b]} {v:.2f} % lower" for b, v in got.items())
    lo, hi = f"{min(got.values()):.1f}", f"{max(got.values()):.1f}"
    value = f"{lo}–{hi} % lower" if lo != hi else f"{lo} % lower"
    if any(v <= 0 for v in got.values()):
        return Result(value, False, detail)
    return Result(value, True if len(got) == len(FS_BACKBONES) else None, detail)


def headline(benches: list[str], metric: str) -> Callable[[Reader], Result]:
    def compute(r: Reader) -> Result:
        ds, ta, tf = [], [], []
        for x in benches:
            a, f = r.get("flowstate", DS, x, metric), r.get("full_context", DS, x, metric)
            ka, kf = r.get("flowstate", DS, x, "Tok"), r.get("full_context", DS, x, "Tok")
            if None in (a, f, ka, kf):
                return Result("–", None)
            ds.append(a - f)  # type: ignore[operator]
            ta.append(ka)
            tf.append(kf)
        d, tok = sum(ds) / len(ds), 100.0 * (sum(ta) / sum(tf) - 1)  # type: ignore[arg-type]
        return Result(f"{d:+.2f} pp {metric}, {tok:+.1f} % tokens", d > 0 and tok < 0)

    return compute


def retail_action_accuracy(r: Reader) -> Result:
    a, f = r.get("flowstate", DS, "tau_retail", "ActionAcc"), r.get("full_context", DS, "tau_retail", "ActionAcc")
    if a is None or f is None:
        return Result("–", None)
    return Result(_fmt(a - f), a - f < 0)


def highest_nauc(r: Reader) -> Result:
    """Table 4: FlowState's nAUC above every other method's in each domain (Formal Reasoning = Math
    and Physics pooled: ours from the Table 4 artefact's pooled column, the paper's as printed)."""
    domains = {
        "memoryarena_shopping": "Web Shopping",
        "memoryarena_travel": "Travel",
        "formal_reasoning": "Formal Reasoning",
    }
    methods = ["full_context", "reasoningbank", "bm25", "mem0", "zipact", "zipact_bm25"]
    t = Tally()
    for x, title in domains.items():
        ok, by = _above_all(_nauc(r, "flowstate", x), [(m, _nauc(r, m, x)) for m in methods])
        t.add(ok, f"{title} (to {METHOD_LABELS[by]})" if by else "")
    if t.lost:
        return Result(t.value("highest in "), False, "not highest: " + ", ".join(t.lost))
    return Result(t.value("highest in "), None if t.open else True)


def _nauc(r: Reader, m: str, x: str) -> float | None:
    if r.source == "paper":
        v = paper_lookup(
            METHOD_LABELS[m],
            DS,
            {"memoryarena_shopping": "bundled_web_shopping", "memoryarena_travel": "group_travel_planning"}.get(x, x),
            "nAUC",
            table="Table 4",
        )
        if v is None:
            r.missing.append((m, DS, x))
        return float(v) if v else None
    benches = ["memoryarena_math", "memoryarena_phys"] if x == "formal_reasoning" else [x]
    col = {"benchmark": benches[0], "pool": benches}
    got = r.cells.metrics(m, DS, col) if r.cells is not None else None
    for b in benches:
        (r.used if r.cell(m, DS, b) is not None else r.missing).append((m, DS, b))
    v = (got or {}).get("nAUC")
    return float(v) if v is not None else None


# ---------------------------------------------------------------- PoS
def pos_best_everywhere(r: Reader) -> Result:
    t = Tally()
    for b in POS_BACKBONES:
        for x, metric in POS_BENCH.items():
            others = [(m, r.get(m, b, x, metric)) for m in POS_BASELINES + POS_ABLATIONS]
            ok, by = _above_all(r.get("pos", b, x, metric), others)
            t.add(ok, f"{BACKBONE_LABELS[b]} {_title(x)} (to {METHOD_LABELS[by]})" if by else "")
    if t.lost:
        return Result(t.value("best in "), False, "not best: " + ", ".join(t.lost))
    return Result(t.value("best in "), None if t.open else True)


def ablations_lower_everywhere(r: Reader) -> Result:
    lower, not_lower, complete = 0, [], True
    for b in POS_BACKBONES:
        for x, metric in POS_BENCH.items():
            pos = r.get("pos", b, x, metric)
            for a in POS_ABLATIONS:
                v = r.get(a, b, x, metric)
                if pos is None or v is None:
                    complete = False
                    continue
                if v < pos:
                    lower += 1
                else:
                    not_lower.append(f"{METHOD_LABELS[a]} / {BACKBONE_LABELS[b]} / {_title(x)}")
    value = f"{lower} of {lower + len(not_lower)} lower" + ("" if complete else " (others not computable)")
    if not_lower:
        return Result(value, False, "not lower: " + ", ".join(not_lower))
    return Result(value, True if complete else None)


def lead_at_256k(r: Reader) -> Result:
    """PoS − the strongest baseline at 256K (the highest 256K success among the baselines run on
    that backbone), per backbone. The paper publishes the range only, not per-length values."""
    got = {}
    for b in POS_BACKBONES:
        pos = r.get("pos", b, "loca", "success_256k")
        base = [v for m in POS_BASELINES if (v := r.get(m, b, "loca", "success_256k")) is not None]
        if pos is not None and len(base) == len(POS_BASELINES):
            got[b] = pos - max(base)
    if not got:
        return Result("–", None)
    detail = ", ".join(f"{BACKBONE_LABELS[b]} {d:+.2f}" for b, d in got.items())
    value = _range(list(got.values())) + " pp"
    if any(d <= 0 for d in got.values()):
        return Result(value, False, detail)
    return Result(value, True if len(got) == len(POS_BACKBONES) else None, detail)


def cost_ratio(which: str) -> Callable[[Reader], Result]:
    def compute(r: Reader) -> Result:
        v = r.cost("pos", "full_context", "qwen3_7_plus", "rca100", which)
        if v is None:
            return Result("–", None)
        if which == "total":
            return Result(f"{v:.2f}×", v > 1)
        return Result(f"{v:+.1f} %", v < 0)

    return compute


CLAIMS: list[Claim] = [
    Claim(
        "fs-leads-8-of-9",
        "FlowState",
        "§3.2, Table 1",
        "FlowState leads Table 1 on 8 of its 9 task-performance metrics (SR, PS, sPS; not #Tok)",
        "8 of 9",
        "count the metrics where FlowState (DeepSeek-V4-Flash) is above every other Table 1 row the paper reports "
        "(every method, and Full Context on all three backbones); holds at 8 or more",
        leads_table1,
    ),
    Claim(
        "fs-shopping-ps-over-memory",
        "FlowState",
        "§3.2",
        "On Web Shopping PS FlowState is 11.78 pp above the strongest memory-system baseline",
        "+11.78 pp",
        "FlowState PS − max(ReasoningBank, BM25, Mem0) PS, Web Shopping, DeepSeek-V4-Flash; holds when > 0",
        over_strongest_memory("memoryarena_shopping"),
    ),
    Claim(
        "fs-travel-ps-over-strongest",
        "FlowState",
        "§3.2",
        "On Travel PS FlowState is 5.61 pp above the strongest baseline of Table 1 (in the paper: Full Context on "
        "Qwen3.5-397B-A17B)",
        "+5.61 pp",
        "FlowState PS (DeepSeek-V4-Flash) − the best Travel PS of every other Table 1 row the paper reports (every "
        "method, Full Context on all backbones); holds when > 0",
        over_strongest_row("memoryarena_travel", "PS"),
    ),
    Claim(
        "fs-shopping-ps-backbones",
        "FlowState",
        "App. B.1, Table 5",
        "On Web Shopping FlowState raises PS by 17.55–21.78 pp over Full Context on each of the three backbones",
        "+17.55 to +21.78 pp",
        "FlowState PS − Full Context PS on Web Shopping, per backbone; holds when > 0 on all three",
        shopping_ps_across_backbones,
    ),
    Claim(
        "fs-relative-tokens",
        "FlowState",
        "§3.3, Figure 3",
        "FlowState's mean relative token use is 28.3–56.3 % below Full Context's across the three backbones",
        "28.3–56.3 % lower",
        "per backbone, the mean over Web Shopping, Math and Physics of 1 − Tok_FlowState / Tok_FullContext; holds "
        "when FlowState uses fewer tokens on all three backbones",
        relative_tokens_across_backbones,
    ),
    Claim(
        "fs-headline-memoryarena",
        "FlowState",
        "abstract",
        "On MemoryArena FlowState gains 4.55 pp SR over Full Context with 43.2 % fewer tokens",
        "+4.55 pp SR, -43.2 % tokens",
        "mean of the four per-domain ΔSR; tokens pooled (ΣTok_FS / ΣTok_FC − 1); DeepSeek-V4-Flash; holds when "
        "ΔSR > 0 and tokens < 0",
        headline(MA, "SR"),
    ),
    Claim(
        "fs-headline-tau",
        "FlowState",
        "abstract",
        "On τ³-Bench FlowState raises the average pass rate by 13.95 pp over Full Context with 40.6 % fewer tokens",
        "+13.95 pp Pass1, -40.6 % tokens",
        "mean of Airline and Retail ΔPass^1; tokens pooled; DeepSeek-V4-Flash; holds when Δ > 0 and tokens < 0",
        headline(["tau_airline", "tau_retail"], "Pass1"),
    ),
    Claim(
        "fs-retail-action-acc",
        "FlowState",
        "§3.2, Table 2",
        "On Retail FlowState's action accuracy is 4.9 pp below Full Context's",
        "-4.9 pp",
        "FlowState − Full Context action accuracy, Retail, DeepSeek-V4-Flash; holds when < 0",
        retail_action_accuracy,
    ),
    Claim(
        "fs-highest-nauc",
        "FlowState",
        "§4.2, Table 4",
        "FlowState retains accuracy best across subtask depth: the highest nAUC in every domain",
        "highest in 3 of 3",
        "FlowState's nAUC above every other Table 4 method's in Web Shopping, Travel and Formal Reasoning (Math and "
        "Physics pooled); holds in all three",
        highest_nauc,
    ),
    Claim(
        "pos-best-everywhere",
        "PoS",
        "project page, Table 1",
        "PoS is the best method in all 12 benchmark × backbone settings",
        "best in 12 of 12",
        "PoS above every baseline and ablation per benchmark and backbone; holds in all 12",
        pos_best_everywhere,
    ),
    Claim(
        "pos-ablations-lower",
        "PoS",
        "project page, Table 1",
        "Removing consistency validation or trapping diagnosis lowers the metric in every setting",
        "24 of 24 lower",
        "each ablation below PoS per benchmark and backbone (2 × 12); holds when all are lower",
        ablations_lower_everywhere,
    ),
    Claim(
        "pos-256k-lead",
        "PoS",
        "project page, Figure 4",
        "At 256K on LOCA-Bench PoS exceeds the strongest tested baseline by 10.67–16.00 pp (three backbones)",
        "+10.67 to +16.00 pp",
        "PoS − the best baseline's 256K success, per backbone; holds when > 0 on all three (the page publishes the "
        "range only, so the paper's value cannot be recomputed from a table)",
        lead_at_256k,
    ),
    Claim(
        "pos-total-tokens",
        "PoS",
        "project page, Table 2",
        "On RCA-100 (Qwen3.7-Plus) PoS spends 5.06× Raw Trajectory's total tokens per case",
        "5.06×",
        "all method-side tokens per episode, PoS ÷ Raw Trajectory; holds when > 1 (PoS costs more in all)",
        cost_ratio("total"),
    ),
    Claim(
        "pos-agent-tokens",
        "PoS",
        "project page, Table 2",
        "On RCA-100 (Qwen3.7-Plus) PoS's task agent uses 20.9 % fewer tokens per case than Raw Trajectory",
        "-20.9 %",
        "the `agent` role's tokens per episode, PoS vs Raw Trajectory, % change; holds when < 0",
        cost_ratio("agent"),
    ),
]


def _key_text(k: Key) -> str:
    from runners.analysis.paper_tables import backbone_label, domain_title, method_label

    return f"{method_label(k[0])} / {backbone_label(k[1])} / {domain_title(k[2])}"


def check(cells: Any, claims: list[Claim] | None = None) -> list[Checked]:
    """Every claim on the paper's tables and on `cells` (a paper_tables.Cells)."""
    from runners.analysis.paper_figures import marks_of

    out = []
    for cl in claims or CLAIMS:
        paper = cl.compute(Reader("paper"))
        r = Reader("ours", cells)
        ours = cl.compute(r)
        verdict = HOLDS if ours.ok is True else (FAILS if ours.ok is False else UNKNOWN)
        used = list(dict.fromkeys(r.used))
        missing = [_key_text(k) for k in dict.fromkeys(r.missing)]
        marks, _ = marks_of([cells.get(*k) for k in used])
        out.append(
            Checked(
                cl,
                paper.value if paper.value != "–" else "not in the tables (quoted only)",
                ours.value,
                verdict,
                ours.detail,
                missing if verdict != HOLDS else [],
                marks,
            )
        )
    return out


COLUMNS = [
    "id",
    "paper",
    "where",
    "claim",
    "paper_quoted",
    "paper_recomputed",
    "ours",
    "verdict",
    "rule",
    "detail",
    "missing",
    "marks",
]


def rows(checked: list[Checked]) -> list[dict[str, str]]:
    return [
        {
            "id": c.claim.id,
            "paper": c.claim.paper,
            "where": c.claim.where,
            "claim": c.claim.text,
            "paper_quoted": c.claim.quoted,
            "paper_recomputed": c.paper_value,
            "ours": c.ours,
            "verdict": c.verdict,
            "rule": c.claim.rule,
            "detail": c.detail,
            "missing": "; ".join(c.missing),
            "marks": c.marks,
        }
        for c in checked
    ]


def claims_csv(checked: list[Checked]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows(checked))
    return buf.getvalue()


def claims_md(checked: list[Checked], experiment: str = "") -> str:
    from runners.analysis.fidelity import FOOTNOTES

    counts = {v: sum(c.verdict == v for c in checked) for v in (HOLDS, FAILS, UNKNOWN)}
    lines = [
        "# The papers' claims, checked" + (f": {experiment}" if experiment else ""),
        "",
        f"{counts[HOLDS]} hold, {counts[FAILS]} do not hold, {counts[UNKNOWN]} not computable from these cells. "
        "Each claim is computed twice the same way: on the paper's own tables (`paper recomputed`, which must "
        "equal what the paper states) and on our cells (`ours`). A claim of a direction holds when the direction "
        "holds in every setting it names; sizes are shown, not tested. Marks are those of every cell a claim read "
        "(a marked claim rests on a setting that differs from the paper's).",
        "",
        "| Claim | Where | Paper states | Paper recomputed | Ours | Verdict | Marks |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in checked:
        verdict = f"**{c.verdict}**" if c.verdict != UNKNOWN else c.verdict
        if c.missing:
            verdict += f" ({len(c.missing)} cell{'s' if len(c.missing) > 1 else ''} missing)"
        lines.append(
            f"| {c.claim.text} (`{c.claim.id}`) | {c.claim.paper} {c.claim.where} | {c.claim.quoted} | "
            f"{c.paper_value} | {c.ours} | {verdict} | {c.marks or '–'} |"
        )
    lines += ["", "## How each claim is computed, and what it rests on", ""]
    for c in checked:
        lines.append(f"- `{c.claim.id}`: {c.claim.rule}.")
        if c.detail:
            lines.append(f"  Ours: {c.detail}.")
        if c.missing:
            lines.append(
                f"  Missing cells: {'; '.join(c.missing[:16])}"
                + (f"; … ({len(c.missing)} in all)" if len(c.missing) > 16 else "")
                + "."
            )
    used = sorted({x for c in checked for x in c.marks.split() if x.startswith("[")})
    if used:
        lines += ["", "## Marks", ""]
        for code, text in FOOTNOTES.items():
            if any(u.startswith(text.split(":")[0].split(" ")[0].rstrip("]")) for u in used):
                lines.append(f"- {text}")
        if "[scripted]" in used:
            lines.append("- [scripted]: ran on the deterministic scripted backbone, not a model")
    return "\n".join(lines) + "\n"
