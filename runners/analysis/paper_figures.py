"""The papers' figures (runners/analysis/paper.py draws their layouts, runners/reference/layouts/):

- `fig_tradeoff` (FlowState Fig. 3): per backbone, SR and PS averaged with equal weights over the
  layout's tasks against token use relative to Full Context of the same backbone (Tok_FS / Tok_FC
  per task, then averaged); hollow marker = Full Context (x = 1), filled = FlowState, a dashed arrow
  between them; the paper's points (Table 5) in grey where the backbone is one of the paper's.
- `fig_depth` (FlowState Fig. 4): Acc_k against k, one panel per domain (a pooled domain recomputes
  Acc_k over the episodes of all its cells), a curve per (method, backbone); FlowState's value
  annotated at the last depth.
- `fig_trapping` (PoS Fig. 3 left/middle): trapping incidence per backbone and benchmark (share of
  PoS episodes with at least one trap) and the shares of the diagnosed patterns (Static / Cycle /
  Drift / unmatched) over trap events per benchmark. A trap event is a step whose logged health is
  trapped where the step before was not trapped or had another pattern (PoS logs `health` in each
  step's method log; a trapped step without a pattern is "unmatched", recovered generically).
- `fig_recovery` (PoS Fig. 3 right): final performance with generic vs factorised recovery per
  benchmark, ours beside the page's (hatched).
- `fig_context` (PoS Fig. 4): LOCA success per environment-description length (the `length` LOCA
  records per episode; metrics `success_<length>`), one panel per backbone, PoS against the
  strongest baseline (highest overall LOCA success among the baselines run on that backbone).

`build` returns an Artefact whose `data` holds every number drawn (tests check them by hand) and,
with matplotlib, the Figure itself (tests check panels, curves and labels before saving)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runners.analysis.papers import BENCHMARK_DOMAINS, METHOD_LABELS, paper_lookup

PATTERNS = ("static", "cycle", "drift", "unmatched")


def figures_available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _plt() -> Any:
    from runners.analysis.plots import _pyplot

    return _pyplot()


def save(fig: Any, out: Path, name: str) -> list[Path]:
    from runners.analysis.plots import _save

    paths = _save(fig, out, name)
    _plt().close(fig)
    return paths


def build(lay: dict[str, Any], cells: Any, draw: bool = True) -> Any:
    from runners.analysis.paper_tables import Artefact

    art = Artefact(lay["name"], f"{lay['paper']} {lay['title']}", lay["kind"], lay.get("preset", ""))
    {
        "fig_tradeoff": _tradeoff,
        "fig_depth": _depth,
        "fig_trapping": _trapping,
        "fig_recovery": _recovery,
        "fig_context": _context,
    }[lay["kind"]](lay, cells, art, draw)
    return art


def _status(art: Any, have: bool, missing: list[str]) -> None:
    art.missing = missing
    art.status = "not produced" if not have else ("produced" if not missing else "partial")


# ---------------------------------------------------------------- FlowState Figure 3
def tradeoff_point(
    cells: Any, method: str, baseline: str, backbone: str, benchmarks: list[str], metrics: list[str]
) -> dict[str, Any] | None:
    """Equal-weight means of `metrics` over the tasks both methods ran on this backbone, and the
    mean of Tok_method / Tok_baseline per task."""
    pairs = [(b, cells.get(method, backbone, b), cells.get(baseline, backbone, b)) for b in benchmarks]
    pairs = [(b, a, r) for b, a, r in pairs if a is not None and r is not None]
    if not pairs:
        return None
    out: dict[str, Any] = {"backbone": backbone, "tasks": [b for b, _, _ in pairs]}
    for m in metrics:
        va = [a.metrics.get(m) for _, a, _ in pairs]
        vr = [r.metrics.get(m) for _, _, r in pairs]
        out[f"{method}_{m}"] = sum(va) / len(va) if all(v is not None for v in va) else None
        out[f"{baseline}_{m}"] = sum(vr) / len(vr) if all(v is not None for v in vr) else None
    from runners.analysis.paper_tables import paper_tok

    rel = [ta / tr for _, a, r in pairs if (ta := paper_tok(a)) and (tr := paper_tok(r))]
    out["relative_tokens"] = sum(rel) / len(rel) if rel and len(rel) == len(pairs) else None
    return out


def paper_tradeoff_point(
    method: str, baseline: str, backbone: str, benchmarks: list[str], metrics: list[str]
) -> dict[str, Any] | None:
    def val(m: str, bench: str, metric: str) -> float | None:
        v = paper_lookup(METHOD_LABELS.get(m, m), backbone, BENCHMARK_DOMAINS.get(bench, bench), metric)
        return float(v) if v else None

    out: dict[str, Any] = {"backbone": backbone}
    for m in metrics:
        for who in (method, baseline):
            vs = [val(who, b, m) for b in benchmarks]
            if any(v is None for v in vs):
                return None
            out[f"{who}_{m}"] = sum(vs) / len(vs)  # type: ignore[arg-type]
    rel = [
        val(method, b, "Tok") / val(baseline, b, "Tok")  # type: ignore[operator]
        for b in benchmarks
        if val(method, b, "Tok") and val(baseline, b, "Tok")
    ]
    out["relative_tokens"] = sum(rel) / len(rel) if len(rel) == len(benchmarks) else None
    return out


def _tradeoff(lay: dict[str, Any], cells: Any, art: Any, draw: bool) -> None:
    from runners.analysis.paper_tables import backbone_label

    method, base, benches, metrics = lay["method"], lay["baseline"], lay["benchmarks"], lay["metrics"]
    backbones = list(dict.fromkeys([*lay.get("backbones", []), *(c.backbone for c in cells.all if c.method == method)]))
    points = [p for b in backbones if (p := tradeoff_point(cells, method, base, b, benches, metrics))]
    paper = [p for b in lay.get("backbones", []) if (p := paper_tradeoff_point(method, base, b, benches, metrics))]
    art.data = {"points": points, "paper": paper}
    missing = [
        f"{backbone_label(b)}: "
        f"{', '.join(x for x in benches if not (cells.get(method, b, x) and cells.get(base, b, x)))}"
        for b in lay.get("backbones", [])
        if not all(cells.get(method, b, x) and cells.get(base, b, x) for x in benches)
    ]
    _status(art, bool(points), missing)
    if not draw or not points:
        return
    plt = _plt()
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.6), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, m in zip(axes[0], metrics):
        for i, p in enumerate(points):
            y0, y1, x1 = p.get(f"{base}_{m}"), p.get(f"{method}_{m}"), p.get("relative_tokens")
            if y0 is None or y1 is None or x1 is None:
                continue
            col = colors[i % len(colors)]
            ax.plot(
                [1.0],
                [y0],
                marker="o",
                markerfacecolor="none",
                markeredgecolor=col,
                linestyle="none",
                label=f"{backbone_label(p['backbone'])} · {METHOD_LABELS.get(base, base)}",
            )
            ax.plot(
                [x1],
                [y1],
                marker="o",
                color=col,
                linestyle="none",
                label=f"{backbone_label(p['backbone'])} · {METHOD_LABELS.get(method, method)}",
            )
            ax.annotate(
                "", xy=(x1, y1), xytext=(1.0, y0), arrowprops={"arrowstyle": "->", "linestyle": "--", "color": col}
            )
        for p in paper:
            if p.get(f"{method}_{m}") is not None and p.get("relative_tokens") is not None:
                ax.plot(
                    [1.0, p["relative_tokens"]],
                    [p[f"{base}_{m}"], p[f"{method}_{m}"]],
                    color="0.75",
                    linestyle=":",
                    marker=".",
                    label=f"{backbone_label(p['backbone'])} (paper)",
                )
        ax.set_xlabel(f"tokens relative to {METHOD_LABELS.get(base, base)}")
        ax.set_ylabel(f"mean {m} (%)")
        ax.set_title(m)
    axes[0][-1].legend(fontsize=6, loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
    fig.suptitle(art.title, fontsize=9)
    art.figure = fig


# ---------------------------------------------------------------- FlowState Figure 4
def acc_curve(metrics: dict[str, Any]) -> list[float]:
    ks = sorted((int(k[4:]) for k in metrics if k.startswith("Acc_") and k[4:].isdigit()))
    return [metrics[f"Acc_{k}"] for k in ks if metrics.get(f"Acc_{k}") is not None]


def _depth(lay: dict[str, Any], cells: Any, art: Any, draw: bool) -> None:
    from runners.analysis.paper_tables import backbone_label, method_label

    panels = []
    missing = []
    for pan in lay["panels"]:
        col = {"benchmark": pan["benchmarks"][0], "pool": pan["benchmarks"], "partial_pool": True}
        keys = list(dict.fromkeys((c.method, c.backbone) for c in cells.all if c.benchmark in pan["benchmarks"]))
        order = {m: i for i, m in enumerate(lay["methods"])}
        keys.sort(key=lambda mb: (order.get(mb[0], len(order)), mb[1]))
        curves = []
        for m, b in keys:
            mets = cells.metrics(m, b, col)
            acc = acc_curve(mets) if mets else []
            if acc:
                curves.append({"method": m, "backbone": b, "acc": acc})
                parts = cells.parts(m, b, col) or []
                if len(parts) < len(pan["benchmarks"]):
                    have_b = {p.benchmark for p in parts}
                    missing += [
                        f"{pan['title']}: {method_label(m)} on {x} (the curve pools the others only)"
                        for x in pan["benchmarks"]
                        if x not in have_b
                    ]
        panels.append({"title": pan["title"], "curves": curves})
        have = {c["method"] for c in curves}
        missing += [f"{pan['title']}: {method_label(m)}" for m in lay["methods"] if m not in have]
    art.data = {"panels": panels}
    _status(art, any(p["curves"] for p in panels), missing)
    if not draw or not any(p["curves"] for p in panels):
        return
    plt = _plt()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.0 * len(panels), 3.4), squeeze=False)
    many_backbones = len({c["backbone"] for p in panels for c in p["curves"]}) > 1
    for ax, p in zip(axes[0], panels):
        for c in p["curves"]:
            ks = list(range(1, len(c["acc"]) + 1))
            lab = method_label(c["method"]) + (f" ({backbone_label(c['backbone'])})" if many_backbones else "")
            ax.plot(
                ks,
                c["acc"],
                marker="o",
                markersize=3,
                label=lab,
                linewidth=2.2 if c["method"] == lay.get("annotate") else 1.2,
            )
            if c["method"] == lay.get("annotate"):
                ax.annotate(
                    f"{c['acc'][-1]:.1f}",
                    xy=(ks[-1], c["acc"][-1]),
                    xytext=(4, 4),
                    textcoords="offset points",
                    fontsize=7,
                )
        if not p["curves"]:
            ax.text(0.5, 0.5, "not run", ha="center", va="center", transform=ax.transAxes, color="0.5")
        ax.set_title(p["title"])
        ax.set_xlabel("subtask depth k")
        ax.set_ylabel("Acc_k (%)")
        ax.set_ylim(0, 105)
        ax.xaxis.get_major_locator().set_params(integer=True)
    handles, labs = [], []
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labs:
                handles.append(h)
                labs.append(lab)
    fig.legend(
        handles,
        labs,
        loc="lower center",
        ncol=min(4, len(labs)),
        fontsize=7,
        frameon=False,
        bbox_to_anchor=(0.5, -0.08),
    )
    fig.suptitle(art.title, fontsize=9)
    art.figure = fig


# ---------------------------------------------------------------- PoS Figure 3
def _health_logs(rec: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for rr in rec.get("requests") or []:
        for s in rr.get("steps") or []:
            m = s.get("method") or {}
            h = m.get("health") or next(
                (a["health"] for a in reversed(m.get("actions") or []) if isinstance(a, dict) and a.get("health")), None
            )
            if isinstance(h, dict):
                out.append(h)
    return out


def trap_events(rec: dict[str, Any]) -> list[str]:
    """The patterns of one episode's trap events, in order (see the module docstring)."""
    events, prev = [], None
    for h in _health_logs(rec):
        trapped = bool(h.get("trapped"))
        pattern = (h.get("trapping_pattern") or "unmatched") if trapped else None
        if trapped and pattern != prev:
            events.append(pattern)
        prev = pattern
    return events


def trapping_stats(episodes: list[dict[str, Any]]) -> dict[str, Any]:
    """{"episodes", "trapped_episodes", "incidence" (%), "events", "shares" {pattern: %}}."""
    per = [trap_events(e) for e in episodes]
    events = [p for ev in per for p in ev]
    n = len(episodes)
    return {
        "episodes": n,
        "trapped_episodes": sum(1 for ev in per if ev),
        "incidence": 100.0 * sum(1 for ev in per if ev) / n if n else None,
        "events": len(events),
        "shares": {p: (100.0 * events.count(p) / len(events) if events else None) for p in PATTERNS},
    }


def _trapping(lay: dict[str, Any], cells: Any, art: Any, draw: bool) -> None:
    from runners.analysis.paper_tables import backbone_label, domain_title

    method, benches = lay["method"], lay["benchmarks"]
    mine = [c for c in cells.all if c.method == method and c.benchmark in benches]
    backbones = list(
        dict.fromkeys(
            [b for b in lay.get("backbones", []) if any(c.backbone == b for c in mine)] + [c.backbone for c in mine]
        )
    )
    incidence = {
        b: {x: trapping_stats(c.episodes) for x in benches if (c := cells.get(method, b, x))} for b in backbones
    }
    shares = {
        x: trapping_stats([e for c in mine if c.benchmark == x for e in c.episodes])
        for x in benches
        if any(c.benchmark == x for c in mine)
    }
    art.data = {"incidence": incidence, "patterns": shares}
    missing = [
        f"PoS / {backbone_label(b)} / {domain_title(x)}"
        for b in lay.get("backbones", [])
        for x in benches
        if not cells.get(method, b, x)
    ]
    _status(art, bool(mine), missing)
    if not draw or not mine:
        return
    plt = _plt()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9.5, 3.6))
    width = 0.8 / max(1, len(benches))
    for j, x in enumerate(benches):
        vals = [(incidence[b].get(x) or {}).get("incidence") for b in backbones]
        a1.bar([i + j * width for i in range(len(backbones))], [v or 0 for v in vals], width, label=domain_title(x))
    a1.set_xticks(
        [i + width * (len(benches) - 1) / 2 for i in range(len(backbones))],
        [backbone_label(b) for b in backbones],
        fontsize=7,
    )
    a1.set_ylabel("episodes with ≥ 1 trap (%)")
    a1.set_ylim(0, 105)
    a1.set_title("Trapping incidence")
    a1.legend(fontsize=6, frameon=False)
    xs = list(shares)
    bottom = [0.0] * len(xs)
    for p in PATTERNS:
        vals = [shares[x]["shares"][p] or 0.0 for x in xs]
        a2.bar(range(len(xs)), vals, 0.6, bottom=bottom, label=p.capitalize() if p != "unmatched" else "unmatched")
        bottom = [b + (v or 0.0) for b, v in zip(bottom, vals)]
    a2.set_xticks(range(len(xs)), [domain_title(x) for x in xs], fontsize=7)
    a2.set_ylabel("share of trap events (%)")
    a2.set_title("Trapping patterns")
    a2.legend(fontsize=6, frameon=False)
    fig.suptitle(art.title, fontsize=9)
    art.figure = fig


# ---------------------------------------------------------------- PoS recovery (Figure 3 right)
def _paper_metric(cells: Any, bench: str, metric: str) -> str:
    return cells.spec(bench, metric).paper or metric


def _headline_metric(cell: Any) -> str | None:
    tm = list(getattr(cell, "table_metrics", []) or [])
    return tm[0] if tm else None


def _recovery(lay: dict[str, Any], cells: Any, art: Any, draw: bool) -> None:
    from runners.analysis.paper_tables import backbone_label, domain_title

    gen, fac, benches = lay["generic"], lay["factorised"], lay["benchmarks"]
    backbones = list(dict.fromkeys(c.backbone for c in cells.all if c.method in (gen, fac) and c.benchmark in benches))
    rows = []
    for b in backbones:
        for x in benches:
            g, f = cells.get(gen, b, x), cells.get(fac, b, x)
            metric = _headline_metric(f or g) if (f or g) else None
            if metric is None:
                continue
            dom = BENCHMARK_DOMAINS.get(x, x)
            pg = paper_lookup(METHOD_LABELS[gen], b, dom, _paper_metric(cells, x, metric))
            pf = paper_lookup("PoS (factorized recovery)", b, dom, _paper_metric(cells, x, metric))
            rows.append(
                {
                    "backbone": b,
                    "benchmark": x,
                    "metric": metric,
                    "generic": g.metrics.get(metric) if g else None,
                    "factorised": f.metrics.get(metric) if f else None,
                    "paper_generic": float(pg) if pg else None,
                    "paper_factorised": float(pf) if pf else None,
                }
            )
    art.data = {"rows": rows}
    pb = lay.get("backbone")
    missing = [
        f"{m} / {backbone_label(pb)} / {domain_title(x)}"
        for x in benches
        for m in (gen, fac)
        if not cells.get(m, pb, x)
    ]
    _status(art, any(r["generic"] is not None and r["factorised"] is not None for r in rows), missing)
    if not draw or not rows:
        return
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    labels = [
        domain_title(r["benchmark"]) + (f"\n{backbone_label(r['backbone'])}" if len(backbones) > 1 else "")
        for r in rows
    ]
    xs = range(len(rows))
    w = 0.2
    ax.bar([i - 1.5 * w for i in xs], [r["generic"] or 0 for r in rows], w, label="generic recovery")
    ax.bar([i - 0.5 * w for i in xs], [r["factorised"] or 0 for r in rows], w, label="factorised recovery (PoS)")
    ax.bar(
        [i + 0.5 * w for i in xs],
        [r["paper_generic"] or 0 for r in rows],
        w,
        label="generic (paper)",
        hatch="//",
        fill=False,
    )
    ax.bar(
        [i + 1.5 * w for i in xs],
        [r["paper_factorised"] or 0 for r in rows],
        w,
        label="factorised (paper)",
        hatch="xx",
        fill=False,
    )
    ax.set_xticks(list(xs), labels, fontsize=7)
    ax.set_ylabel("final performance (%)")
    ax.set_ylim(0, 105)
    ax.set_title("Generic vs factorised recovery")
    ax.legend(fontsize=6, frameon=False)
    art.figure = fig


# ---------------------------------------------------------------- PoS Figure 4
def _context(lay: dict[str, Any], cells: Any, art: Any, draw: bool) -> None:
    from runners.analysis.paper_tables import backbone_label, method_label

    bench, method, lengths = lay["benchmark"], lay["method"], lay["lengths"]
    backbones = list(
        dict.fromkeys(
            [
                *(b for b in lay.get("backbones", []) if cells.get(method, b, bench)),
                *(c.backbone for c in cells.all if c.method == method and c.benchmark == bench),
            ]
        )
    )
    panels = []
    for b in backbones:
        pos = cells.get(method, b, bench)
        base = [
            (m, c)
            for m in lay["baselines"]
            if (c := cells.get(m, b, bench)) and c.metrics.get("task_success") is not None
        ]
        best = max(base, key=lambda mc: mc[1].metrics["task_success"]) if base else None
        curves = [{"method": method, "values": [pos.metrics.get(f"success_{x}") for x in lengths]}]
        if best:
            curves.append({"method": best[0], "values": [best[1].metrics.get(f"success_{x}") for x in lengths]})
        panels.append({"backbone": b, "curves": curves, "strongest": best[0] if best else None})
    art.data = {"panels": panels, "lengths": lengths}
    missing = [
        f"{backbone_label(b)}: PoS and baselines on LOCA" for b in lay.get("backbones", []) if b not in backbones
    ]
    missing += [f"{backbone_label(p['backbone'])}: no baseline" for p in panels if not p["strongest"]]
    _status(art, bool(panels), missing)
    if not draw or not panels:
        return
    plt = _plt()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.0 * len(panels), 3.4), squeeze=False)
    for ax, p in zip(axes[0], panels):
        for c in p["curves"]:
            pts = [(i, v) for i, v in enumerate(c["values"]) if v is not None]
            lab = method_label(c["method"], lay) + (" (strongest baseline)" if c["method"] != method else "")
            ax.plot([i for i, _ in pts], [v for _, v in pts], marker="o", markersize=3, label=lab)
        ax.set_xticks(range(len(lengths)), [x.upper() for x in lengths], fontsize=7)
        ax.set_title(backbone_label(p["backbone"]))
        ax.set_xlabel("environment description length")
        ax.set_ylabel("task success (%)")
        ax.set_ylim(0, 105)
        ax.legend(fontsize=6, frameon=False)
    fig.suptitle(art.title, fontsize=9)
    art.figure = fig
