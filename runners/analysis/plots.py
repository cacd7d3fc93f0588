"""Plots as files for papers: `python -m runners.aggregate results/<experiment> --plots`.

Writes `tables/<name>.svg` and `tables/<name>.png` (matplotlib, from the `analysis` extra):

- `<curve>`: each metric family a benchmark declares as a curve (`MetricSpec.curve`; MemoryArena:
  `acc_k`, Acc_k over subtask depth, FlowState Fig. 4 shape), one line per method × benchmark;
- `tokens_by_role`: #Tok per cell split by role, stacked (judge / user simulator shown apart);
- `success_vs_tokens`: each episode's success against its method tokens (FlowState Fig. 3 shape);
- `<series>`: each number a method's step log offers over steps (`Method.step_series`; PoS:
  `pos_health`, progress health H, trapped at H ≤ 0.25), one line per episode of that method.

The same data the HTML report (runners/analysis/report.py) draws, from the same functions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runners.api import METHOD_ROLES

EXTRA_HINT = "pip install -e '.[analysis]'  (or: pip install matplotlib)"


class PlotsUnavailable(RuntimeError):
    pass


def _matplotlib() -> Any:
    """matplotlib with the plots' settings, pyplot not imported: figures are made with the
    object API (`subplots`), outside pyplot's global figure registry, so nothing has to be closed
    (importing the Agg canvas costs about what pyplot did: scripts/perf/README.md)."""
    try:
        import matplotlib
    except ImportError:
        raise PlotsUnavailable(
            f"--plots needs matplotlib, which comes with the 'analysis' extra: {EXTRA_HINT}"
        ) from None
    matplotlib.rcParams.update(
        {"svg.fonttype": "none", "figure.dpi": 110, "axes.spines.top": False, "axes.spines.right": False}
    )
    return matplotlib


def subplots(*args: Any, figsize: tuple[float, float] | None = None, **kw: Any) -> tuple[Any, Any]:
    """`pyplot.subplots` without pyplot: a `Figure` on an Agg canvas of its own (what measures
    text for a tight layout; `savefig` draws each format through that format's canvas)."""
    _matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig, fig.subplots(*args, **kw)


def _save(fig: Any, out: Path, name: str) -> list[Path]:
    paths = [out / f"{name}.svg", out / f"{name}.png"]
    for p in paths:
        fig.savefig(p, bbox_inches="tight", metadata={"Date": None} if p.suffix == ".svg" else None)
    return paths


def write_plots(root: Path, cells: list[Any]) -> list[Path]:
    """Write every plot the experiment has data for; returns the files written."""
    from runners.analysis.episodes import episode_success, episode_tokens, step_series
    from runners.analysis.cells import curves, slug

    _matplotlib()
    out = Path(root) / "tables"
    out.mkdir(exist_ok=True)
    written: list[Path] = []
    label = lambda c: f"{c.method} · {c.benchmark}"  # noqa: E731

    by_curve: dict[str, tuple[Any, list[tuple[Any, list[float | None]]]]] = {}  # display name -> (declaration, lines)
    for c in cells:
        for spec, values in curves(c):
            if all(v is not None for v in values):
                by_curve.setdefault(spec.display, (spec, []))[1].append((c, values))
    for name, (spec, lines) in by_curve.items():
        fig, ax = subplots(figsize=(5.5, 3.6))
        for c, values in lines:
            ax.plot(range(1, len(values) + 1), values, marker="o", label=label(c))
        rate = spec.kind == "rate"
        ax.set(xlabel=spec.curve, ylabel=f"{name} (%)" if rate else name, title=f"{name} by method")
        if rate:
            ax.set_ylim(0, 100)
        ax.legend(fontsize=7)
        written += _save(fig, out, slug(name))

    roles = sorted({r for c in cells for r in c.tokens_by_role}, key=lambda r: (r not in METHOD_ROLES, r))
    if roles:
        fig, ax = subplots(figsize=(max(5.0, 1.1 * len(cells) + 1.5), 3.8))
        bottom = [0.0] * len(cells)
        for r in roles:
            vals = [float(c.tokens_by_role.get(r, 0)) for c in cells]
            ax.bar(range(len(cells)), vals, bottom=bottom, label=r + ("" if r in METHOD_ROLES else " (not #Tok)"))
            bottom = [b + v for b, v in zip(bottom, vals)]
        ax.set_xticks(range(len(cells)), [label(c).replace(" · ", "\n") for c in cells], fontsize=7)
        ax.set(ylabel="tokens", title="#Tok by method, split by role")
        ax.legend(fontsize=7)
        written += _save(fig, out, "tokens_by_role")

    points: dict[str, list[tuple[int, float]]] = {}
    series: dict[str, tuple[Any, list[tuple[str, list[float | None]]]]] = {}  # name -> (declaration, lines)
    for c in cells:  # every record on disk, as the summary holds it (slim: scores, usage, step method logs)
        for e in c.records:
            s = episode_success(e, c.outcome)
            if s is not None:
                points.setdefault(label(c), []).append((episode_tokens(e), s))
            for decl in c.series:
                vs = step_series(e, decl.path)
                if any(v is not None for v in vs):
                    series.setdefault(decl.name, (decl, []))[1].append(
                        (f"{e['task_id']} #{e['trial']} ({c.method})", vs)
                    )
    if points:
        fig, ax = subplots(figsize=(5.5, 3.6))
        for name, pts in points.items():
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=14, alpha=0.7, label=name)
        ax.set(xlabel="method tokens per episode", ylabel="success", ylim=(-0.05, 1.05), title="Success vs tokens")
        ax.legend(fontsize=7)
        written += _save(fig, out, "success_vs_tokens")

    for name, (decl, lines) in series.items():
        fig, ax = subplots(figsize=(5.5, 3.6))
        for line, vs in lines[:40]:
            ax.plot(
                [i + 1 for i, v in enumerate(vs) if v is not None],
                [v for v in vs if v is not None],
                marker=".",
                label=line,
            )
        if decl.threshold is not None:
            ax.axhline(decl.threshold, color="grey", linestyle="--", linewidth=1)
        ax.set(xlabel="step", ylabel=decl.axis, title=decl.title)
        if decl.low is not None or decl.high is not None:
            ax.set_ylim(decl.low, decl.high)
        if len(lines) <= 10:
            ax.legend(fontsize=7)
        written += _save(fig, out, name)
    return written
