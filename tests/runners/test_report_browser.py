"""The HTML report in a real headless Chromium (playwright driving the system's chromium):
a small scripted sweep whose task text and answers carry XSS probes, one cell stripped back to
records written before transcripts existed. Asserts the tables (the same rows as
runners.aggregate), the plots, the episode browser with a full transcript, a FlowState graph,
the compare view and the "no transcript recorded" note render; that no probe executed (no
injected element or attribute, no dialog, no console error); keeps a screenshot as an artifact
(`$HARNESS_TEST_ARTIFACTS`, default `.artifacts/`)."""

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.runners.sweep_helpers import REPO, decompact, run_sweep

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
PROBES = [
    "<script>window.__xss=1;alert(1)</script>",
    '<img src=x onerror="window.__xss=2;alert(2)">',
    '</textarea><b data-xss="3">bold</b>',
    "</script><script>window.__xss=4</script>",
    "<!-- open comment",
    '<svg onload="window.__xss=5"></svg>',
    '"><iframe src="javascript:alert(6)">',
]
PROBE = " ".join(PROBES)


def _fixture(root: Path) -> Path:
    """The Formal Reasoning fixture with every background, question and answer carrying the probes."""
    src = REPO / "benchmarks" / "memoryarena" / "fixtures" / "formal_reasoning_math" / "data.jsonl"
    out = root / "data" / "formal_reasoning_math"
    out.mkdir(parents=True)
    rows = []
    for line in src.read_text().splitlines():
        r = json.loads(line)
        r["backgrounds"] = [b + " " + PROBE for b in r["backgrounds"]]
        r["questions"] = [q + " " + PROBE for q in r["questions"]]
        r["answers"] = [a + " " + PROBES[i % len(PROBES)] for i, a in enumerate(r["answers"])]
        rows.append(json.dumps(r))
    (out / "data.jsonl").write_text("\n".join(rows) + "\n")
    return out.parent


def _strip_transcripts(cell: Path) -> None:
    """Make a cell look as if written before transcripts existed."""
    fields = ("prompt", "n_messages", "reply", "reasoning", "tools", "reply_tool_calls", "sampling", "error")

    def strip(calls):
        for c in calls:
            for f in fields:
                c.pop(f, None)

    lines = []
    for line in decompact(cell).read_text().splitlines():
        r = json.loads(line)
        r.pop("unfinished_calls", None)
        strip(r.get("task_calls", []))
        for q in r["requests"]:
            strip(q["begin_calls"])
            strip(q["end_calls"])
            for s in q["steps"]:
                strip(s["calls"])
        lines.append(json.dumps(r))
    (cell / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    (cell / "transcripts.sqlite").unlink()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    data = _fixture(root)
    p = run_sweep(
        root / "results",
        "experiment.name=xss",
        "benchmark=memoryarena_math",
        f"benchmark.params.data_dir={data}",
        "experiment.grid.method=[full_context,flowstate,bm25]",
        "backbone.scripted.malformed_rate=0.25",
        # one episode at a time: bm25's memory (and so every later prompt and the scripted draws keyed
        # on it) would otherwise depend on which episodes finish first, and the malformed replies
        # the tests below look for could fall elsewhere on a loaded machine
        "runner.concurrency=1",
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    exp = root / "results" / "xss"
    (old,) = [d for d in exp.iterdir() if d.name.startswith("bm25__")]
    _strip_transcripts(old)
    from runners.analysis.report import main

    assert main([str(exp)]) == 0
    return exp


@pytest.fixture(scope="module")
def page(report):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium; .ci/run installs it)")
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (it comes with the dev extra)"
    )
    events = {"console": [], "dialogs": [], "errors": [], "requests": []}
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        pg = browser.new_page(viewport={"width": 1400, "height": 1000})
        pg.on("console", lambda m: events["console"].append((m.type, m.text)))
        pg.on("pageerror", lambda e: events["errors"].append(str(e)))
        pg.on("dialog", lambda d: (events["dialogs"].append(d.message), d.dismiss()))
        pg.on("request", lambda r: events["requests"].append(r.url))
        pg.goto((report / "report.html").as_uri())
        pg.wait_for_selector("body[data-ready-ms]")
        yield pg, events, report
        browser.close()


def _no_probe_ran(pg, events):
    injected = pg.evaluate("""() => ({
        xss: window.__xss === undefined ? null : window.__xss,
        bad: [...document.querySelectorAll('[onerror],[onload],[data-xss],iframe,img:not(.paper-fig)')].length,
        figs: [...document.querySelectorAll('img.paper-fig')].every(
            i => i.getAttribute('src').startsWith('data:image/svg+xml;base64,')),
        scripts: [...document.scripts].filter(s => !s.type || s.type === 'text/javascript').length,
    })""")
    assert injected == {"xss": None, "bad": 0, "figs": True, "scripts": 1}, (
        injected
    )  # our figures: embedded SVG data only
    assert events["dialogs"] == [] and events["errors"] == []
    assert [c for c in events["console"] if c[0] == "error"] == []
    assert all(u.startswith("file://") for u in events["requests"]), events["requests"]  # nothing from the network


def test_tables_and_plots_render(page):
    pg, events, exp = page
    from runners.analysis.cells import collect
    from runners.analysis.tables import build_tables

    _, rows, _ = build_tables(collect(exp), "full_context")
    shown = pg.evaluate(
        "() => [...document.querySelectorAll('#tab-tables table')[0].querySelectorAll('tbody tr')]"
        ".map(tr => [...tr.cells].map(td => td.textContent))"
    )
    assert shown == rows  # the same rows runners.aggregate writes
    assert pg.get_attribute("#tab-tables", "class") == "tab active"
    pg.click("nav button[data-tab=plots]")
    for plot in ("#plot-acc_k", "#plot-tok", "#plot-scatter"):  # acc_k: MemoryArena's declared curve
        assert pg.query_selector(f"{plot} svg circle, {plot} svg rect"), plot
    pg.click("nav button[data-tab=paper]")  # the runners.paper artefacts: tables as HTML, figures as embedded SVG
    assert pg.query_selector("#paper-flowstate_table1 table tbody tr")
    from runners.analysis.paper_figures import figures_available

    if figures_available():
        assert pg.query_selector("#paper-flowstate_fig4 img.paper-fig")
    else:  # no matplotlib (the analysis extra): the tab says how to get the figures
        assert "Figures need matplotlib" in pg.text_content("#tab-paper")
    assert "not produced" in pg.text_content("#tab-paper")
    assert "The papers' claims, checked" in pg.text_content("#tab-paper")  # the reviewer's page first
    assert len(pg.query_selector_all("#paper-flowstate_table1 thead tr")) == 3  # Formal Reasoning, domains, metrics
    _no_probe_ran(pg, events)


def test_episode_browser_flowstate_graph_and_transcript(page):
    pg, events, exp = page
    pg.click("nav button[data-tab=episodes]")
    pg.select_option("#f-method", "flowstate")
    assert "3 of" in pg.text_content("#ep-count")
    pg.click("#ep-list tr.click >> nth=0")
    pg.wait_for_selector("#ep-detail[data-loaded] #flowstate-view svg.graph")
    assert int(pg.get_attribute("#flowstate-view svg.graph", "data-nodes")) > 0
    assert pg.query_selector_all("#flowstate-view g.node")
    pg.fill("#flowstate-slider", "1")
    pg.dispatch_event("#flowstate-slider", "input")
    assert "(1 /" in pg.text_content("#flowstate-view")
    step = pg.query_selector("#ep-detail details.step")
    step.query_selector(":scope > summary").click()
    call = step.wait_for_selector("details.calld > summary")  # the step's body is built when it opens
    call.click()
    step.wait_for_selector("text=context the model saw")
    text = pg.text_content("#ep-detail")
    assert "context the model saw" in text and "raw reply" in text
    assert PROBES[0] in text and PROBES[3] in text  # shown as text, verbatim
    out = Path(os.environ.get("HARNESS_TEST_ARTIFACTS", REPO / ".artifacts"))
    out.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(out / "report-episode.png"), full_page=True)
    assert (out / "report-episode.png").stat().st_size > 10_000
    # an unparseable reply: its raw text is shown beside the protocol errors
    pg.select_option("#f-method", "")
    rows = pg.query_selector_all("#ep-list tr.click")
    for i in [i for i, r in enumerate(rows) if r.query_selector("td:last-child").text_content() == "yes"]:
        pg.click(f"#ep-list tr.click >> nth={i}")
        pg.wait_for_selector(f"#ep-detail[data-loaded='{rows[i].get_attribute('data-ep')}']")
        bad = pg.query_selector("#ep-detail details.step.haserr")
        if bad:
            bad.query_selector(":scope > summary").click()
            bad.wait_for_selector("details.calld > summary").click()
            assert "protocol errors" in bad.text_content() and bad.query_selector("pre.reply")
            break
    else:
        pytest.fail("no step with protocol errors in the sweep (malformed_rate=0.25)")
    _no_probe_ran(pg, events)


def test_old_records_say_no_transcript_and_compare_renders(page):
    pg, events, exp = page
    pg.click("nav button[data-tab=episodes]")
    pg.select_option("#f-method", "bm25")
    pg.click("#ep-list tr.click >> nth=0")
    pg.wait_for_selector("#ep-detail #no-transcript")
    assert "no transcript recorded" in pg.text_content("#no-transcript")
    pg.query_selector("#ep-detail details.step > summary").click()
    pg.wait_for_selector("#ep-detail details.step details.calld > summary").click()
    pg.wait_for_selector("#ep-detail details.step >> text=no transcript recorded for this call")
    pg.click("nav button[data-tab=compare]")
    labels = pg.evaluate("() => [...document.querySelectorAll('#cmp-a option')].map(o => o.textContent)")
    pg.select_option("#cmp-a", str(next(i for i, t in enumerate(labels) if t.startswith("full_context"))))
    pg.select_option("#cmp-b", str(next(i for i, t in enumerate(labels) if t.startswith("flowstate"))))
    pg.click("#cmp-go")
    pg.wait_for_selector("#cmp-out table")
    assert "Request 1" in pg.text_content("#cmp-out")
    _no_probe_ran(pg, events)


@pytest.fixture(scope="module")
def toy_page(page, tmp_path_factory):
    """A report of the toy benchmark under PoS and BM25 (their declared views and series), in a
    second tab of the same browser."""
    root = tmp_path_factory.mktemp("toyreport")
    p = run_sweep(root, "benchmark=toy", "experiment.name=toy", "experiment.grid.method=[pos,bm25]")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    from runners.analysis.report import main

    assert main([str(root / "toy")]) == 0
    events = {"console": [], "errors": []}
    pg = page[0].context.browser.new_page(viewport={"width": 1400, "height": 1000})
    pg.on("console", lambda m: events["console"].append((m.type, m.text)))
    pg.on("pageerror", lambda e: events["errors"].append(str(e)))
    pg.goto((root / "toy" / "report.html").as_uri())
    pg.wait_for_selector("body[data-ready-ms]")
    yield pg, events
    pg.close()


def test_declared_method_views_and_series_render(toy_page):
    pg, events = toy_page
    pg.click("nav button[data-tab=plots]")
    assert pg.query_selector("#plot-pos_health svg circle")  # PoS's declared step series
    assert "trapped at H ≤ 0.25" in pg.text_content("#plot-pos_health")
    pg.click("nav button[data-tab=episodes]")
    pg.select_option("#f-method", "pos")
    pg.click("#ep-list tr.click >> nth=0")
    pg.wait_for_selector("#ep-detail #pos-view table")
    head = pg.evaluate("() => [...document.querySelectorAll('#pos-view thead th')].map(th => th.textContent)")
    assert head == ["request", "t", "P_e", "P_a", "S", "R", "H", "trapped", "pattern", "audit", "recovery"]
    assert "world state" in pg.text_content("#pos-view") and not pg.query_selector("#ep-detail #memory-view")
    pg.select_option("#f-method", "bm25")
    pg.click("#ep-list tr.click >> nth=0")
    pg.wait_for_selector("#ep-detail #memory-view")
    assert "Q: What does one" in pg.text_content("#memory-view") and not pg.query_selector("#ep-detail #pos-view")
    assert events["errors"] == [] and [c for c in events["console"] if c[0] == "error"] == []


def _index(pg):
    return pg.evaluate("() => JSON.parse(document.getElementById('index').textContent)")


def test_fragment_opens_episode_and_step_and_back_forward_work(page):
    pg0, _, exp = page
    idx = _index(pg0)
    f = {n: i for i, n in enumerate(idx["episode_fields"])}
    fs = [i for i, c in enumerate(idx["cells"]) if c["method"] == "flowstate"][0]
    eps = [e for e in idx["episodes"] if e[f["cell"]] == fs and e[f["steps"]] >= 2]
    assert len(eps) >= 2
    (a, b), cell = eps[:2], idx["cells"][fs]["cell"]
    from urllib.parse import quote

    frag = f"#episodes/{quote(cell)}/{quote(a[f['task_id']])}/{a[f['trial']]}/step/2"
    errors = []
    pg = pg0.context.browser.new_page(viewport={"width": 1200, "height": 900})
    pg.on("pageerror", lambda e: errors.append(str(e)))
    try:
        pg.goto((exp / "report.html").as_uri() + frag)
        pg.wait_for_selector("#ep-detail[data-loaded][data-step='2']")
        assert pg.get_attribute("#tab-episodes", "class") == "tab active"
        assert pg.text_content("#ep-detail h2").startswith(f"{a[f['task_id']]} · trial {a[f['trial']]} · flowstate")
        step = pg.query_selector("#ep-detail details.step[data-n='2']")
        assert step.get_attribute("open") is not None and "target" in step.get_attribute("class")
        assert step.query_selector("details.calld")  # its body was built: the step is open, not just marked
        # navigating sets the fragment: another episode from the list, then one of its steps
        row = pg.query_selector(f"#ep-list tr.click[data-ep='{idx['episodes'].index(b)}']")
        row.click()
        pg.wait_for_function("() => location.hash.split('/').length === 4")
        assert pg.evaluate("location.hash") == f"#episodes/{quote(cell)}/{quote(b[f['task_id']])}/{b[f['trial']]}"
        pg.wait_for_selector("#ep-detail[data-loaded]")
        pg.query_selector("#ep-detail details.step[data-n='1'] > summary").click()
        pg.wait_for_function("() => location.hash.endsWith('/step/1')")
        pg.click("nav button[data-tab=plots]")
        assert pg.evaluate("location.hash") == "#plots" and pg.get_attribute("#tab-plots", "class") == "tab active"
        # back: the second episode's step 1, the second episode, then the first one at step 2
        pg.go_back()
        pg.wait_for_selector("#tab-episodes.active #ep-detail[data-step='1']")
        pg.go_back()
        pg.go_back()
        pg.wait_for_selector("#ep-detail[data-step='2']")
        assert pg.text_content("#ep-detail h2").startswith(a[f["task_id"]] + " · trial")
        pg.go_forward()
        pg.wait_for_function(
            "() => document.querySelector('#ep-detail h2') && document.querySelector('#ep-detail h2').textContent"
            f".startsWith({json.dumps(b[f['task_id']] + ' · trial ' + str(b[f['trial']]))})"
        )
        # a cell is a place: its fragment lists its episodes, and choosing a cell sets the fragment
        pg.goto((exp / "report.html").as_uri() + f"#episodes/{quote(cell)}")
        pg.wait_for_selector("#tab-episodes.active")
        assert pg.eval_on_selector("#f-cell", "s => s.value") == str(fs)
        assert pg.text_content("#ep-count").startswith(f"{sum(e[f['cell']] == fs for e in idx['episodes'])} of")
        pg.select_option("#f-cell", "")
        pg.wait_for_function("() => location.hash === '#episodes'")
        # a link to something the report does not have says so
        pg.goto((exp / "report.html").as_uri() + "#episodes/nope/x/0")
        pg.wait_for_selector("#not-found")
        assert errors == []
    finally:
        pg.close()


def test_search_finds_episodes_by_reply_text_and_status(page):
    pg, events, exp = page
    from runners.records.results import open_experiment

    # the scripted backbone's malformed reply (malformed_rate=0.25) is the only source of "oops"
    assert "oops" not in (exp.parent.parent / "data" / "formal_reasoning_math" / "data.jsonl").read_text().lower()
    want = set()
    for cell in open_experiment(exp).cells:
        for ep in cell.episodes():
            if any(c.has_transcript and c.text and "oops" in c.text for c in ep.calls()):
                want.add((cell.name, ep.task_id, ep.trial))
    idx = _index(pg)
    assert want and len(want) < len(idx["episodes"])
    pg.click("nav button[data-tab=episodes]")
    for sel in ("#f-method", "#f-cell", "#f-outcome", "#f-status"):
        pg.select_option(sel, "")
    pg.fill("#f-task", "")
    pg.fill("#f-text", "OOPS")
    pg.press("#f-text", "Enter")
    pg.wait_for_selector("#tab-episodes[data-search-done='oops']")
    shown = pg.evaluate(
        "() => [...document.querySelectorAll('#ep-list tr.click')].map(tr => Number(tr.getAttribute('data-ep')))"
    )
    f = {n: i for i, n in enumerate(idx["episode_fields"])}
    got = {
        (
            idx["cells"][idx["episodes"][i][f["cell"]]]["cell"],
            idx["episodes"][i][f["task_id"]],
            idx["episodes"][i][f["trial"]],
        )
        for i in shown
    }
    assert got == want
    assert f"found in {len(want)} episode" in pg.text_content("#text-progress")
    # a hit opens at the step where the text first occurs
    where = pg.evaluate(
        "() => [...document.querySelectorAll('#ep-list tr.click')].map(tr => tr.lastElementChild.textContent)"
    )
    k = next(
        k for k, w in enumerate(where) if w.startswith("step ")
    )  # (a judge's reply may be the only place: "outside the steps")
    n = where[k].split()[1]
    pg.click(f"#ep-list tr.click >> nth={k}")
    pg.wait_for_function(f"() => location.hash.endsWith('/step/{n}')")
    pg.wait_for_selector(f"#ep-detail[data-step='{n}'] details.step[data-n='{n}'][open]")
    for call in pg.query_selector_all(f"#ep-detail details.step[data-n='{n}'] details.calld > summary"):
        call.click()  # the calls' texts are built when opened
    assert "oops" in pg.text_content(f"#ep-detail details.step[data-n='{n}']").lower()
    # status combines with the text; clearing the text brings every episode back
    pg.select_option("#f-status", "ok")
    pg.wait_for_selector("#tab-episodes[data-search-done='oops']")
    assert f"{len(want)} of" in pg.text_content("#ep-count")
    pg.click("#f-text-clear")
    assert pg.text_content("#ep-count").startswith(f"{len(idx['episodes'])} of")
    _no_probe_ran(pg, events)


def test_json_messages_are_pretty_printed(toy_page):
    pg, events = toy_page
    pg.click("nav button[data-tab=episodes]")
    pg.select_option("#f-method", "pos")
    ep = pg.get_attribute("#ep-list tr.click >> nth=0", "data-ep")
    pg.click("#ep-list tr.click >> nth=0")
    pg.wait_for_selector(f"#ep-detail[data-loaded='{ep}']")
    pg.query_selector("#ep-detail details.step[data-n='1'] > summary").click()
    pg.wait_for_selector("#ep-detail details.step[data-n='1'] details.calld > summary")  # built when the step opens
    for call in pg.query_selector_all("#ep-detail details.step[data-n='1'] details.calld > summary"):
        call.click()
    pg.wait_for_selector("#ep-detail pre.json")
    blocks = pg.evaluate("() => [...document.querySelectorAll('#ep-detail pre.json')].map(p => p.textContent)")
    assert blocks, "no JSON message was shown indented"
    for b in blocks:
        assert json.loads(b) is not None and "\n  " in b  # valid JSON, on several indented lines
    out = Path(os.environ.get("HARNESS_TEST_ARTIFACTS", REPO / ".artifacts"))
    pg.query_selector("#ep-detail pre.json").scroll_into_view_if_needed()
    pg.screenshot(path=str(out / "report-json.png"))
    assert events["errors"] == []


def test_plots_fit_the_page_with_24_cells_and_marks_are_explained(page, tmp_path):
    """24 cells (the experiment's cells repeated under new names): the charts fit an 1000-px
    viewport, the scatter has x tick values, no two legend entries share an encoding, every
    mark in the table is explained on the page, and the episode list turns to its last page and
    to a page typed in."""
    from runners.analysis.report import gather, render

    index, payloads = gather(page[2])
    n0 = len(index["cells"])
    index["cells"] = [
        {**c, "cell": f"{c['cell']}-{k}", "method": f"{c['method']}_{k}"}
        for k in range(24 // n0)
        for c in index["cells"]
    ]
    eps = [[(e[0] + k * n0), *e[1:]] for k in range(24 // n0) for e in index["episodes"]]
    index["episodes"], payloads = eps, payloads * (24 // n0)
    reps = -(-201 // len(eps))  # at least three pages of the episode list
    index["episodes"], payloads = eps * reps, payloads * reps
    assert len(index["cells"]) == 24
    out = tmp_path / "r24.html"
    out.write_text(render(index, payloads))
    pg = page[0].context.browser.new_page(viewport={"width": 1000, "height": 900})
    try:
        pg.goto(out.as_uri() + "#plots")
        pg.wait_for_selector("body[data-ready-ms]")
        for plot in ("#plot-tok", "#plot-scatter", "#plot-acc_k"):
            w = pg.evaluate(f"() => document.querySelector('{plot} svg').getBoundingClientRect().right")
            assert 0 < w <= 1000, (plot, w)
        assert pg.evaluate("document.documentElement.scrollWidth") <= 1000
        ticks = pg.evaluate(
            "() => [...document.querySelectorAll('#plot-scatter svg text.xtick')].map(t => t.textContent)"
        )
        assert len(ticks) >= 3 and ticks[0] == "0"
        enc = pg.evaluate("""() => [...document.querySelectorAll('#plot-acc_k .legend .entry svg')].map(s => {
            const m = s.lastElementChild, l = s.querySelector('line');
            return [m.tagName, m.getAttribute('fill'), l ? l.getAttribute('stroke-dasharray') : null].join('|'); })""")
        assert len(enc) == 24 and len(set(enc)) == 24, enc
        pg.screenshot(
            path=str(Path(os.environ.get("HARNESS_TEST_ARTIFACTS", REPO / ".artifacts")) / "report-24-plots.png"),
            full_page=True,
        )
        # the episode list: 100 a page, any page in one step
        n = len(index["episodes"])
        pages = -(-n // 100)
        assert pages >= 3
        pg.click("nav button[data-tab=episodes]")
        first = pg.get_attribute("#ep-list tr.click >> nth=0", "data-ep")
        pg.click("#page-last")
        assert pg.input_value("#page-no") == str(pages) and pg.is_disabled("#page-last")
        assert pg.get_attribute("#ep-list tr.click >> nth=0", "data-ep") == str(100 * (pages - 1))
        assert len(pg.query_selector_all("#ep-list tr.click")) == n - 100 * (pages - 1)
        pg.fill("#page-no", "1")
        pg.dispatch_event("#page-no", "change")
        assert pg.get_attribute("#ep-list tr.click >> nth=0", "data-ep") == first and pg.is_disabled("#page-first")
        pg.click("nav button[data-tab=tables]")
        marks = pg.evaluate("() => [...document.querySelectorAll('#marks dt')].map(d => d.textContent)")
        assert "[scripted]" in marks and "Δ vs" in marks and "[lo, hi]" in marks
        title = pg.get_attribute("#tab-tables table tbody tr td.marked", "title")
        assert title.startswith("[scripted]: ") and "not a model result" in title
    finally:
        pg.close()


def test_a_report_with_parts_opens_searches_and_names_a_missing_folder(page, tmp_path, monkeypatch):
    """Above `parts_above` episodes the payloads live in <report>.files/part-NNNNN.js (here 2 per
    file, so an experiment of a few episodes spans several): the page holds no episode block, an
    episode opens from its file, the text search reads every file and finds what the embedded
    report finds, no other script runs; without the folder, opening an episode says where its
    details are and the fix."""
    from runners.analysis import report as R

    pg0, _, exp = page
    monkeypatch.setattr(R, "PART_SIZE", 2)
    monkeypatch.setattr(R, "CHUNK", 1)  # a block per episode, two blocks per file
    out = R.build_report(exp, tmp_path / "big.html", parts_above=0)
    files = R.parts_dir(out)
    index = _index(pg0)
    n = len(index["episodes"])
    assert sorted(f.name for f in files.iterdir()) == [f"part-{k:05d}.js" for k in range((n + 1) // 2)]
    assert 'type="application/x-episode"' not in out.read_text()
    events = {"console": [], "dialogs": [], "errors": [], "requests": []}
    pg = pg0.context.browser.new_page(viewport={"width": 1400, "height": 1000})
    pg.on("console", lambda m: events["console"].append((m.type, m.text)))
    pg.on("pageerror", lambda e: events["errors"].append(str(e)))
    pg.on("dialog", lambda d: (events["dialogs"].append(d.message), d.dismiss()))
    pg.on("request", lambda r: events["requests"].append(r.url))
    try:
        pg.goto(out.as_uri() + "#episodes")
        pg.wait_for_selector("body[data-ready-ms]")
        last = n - 1  # the list's last row: its details' place is in its row (the cells are sorted after reading)
        at = index["episodes"][last][index["episode_fields"].index("payload")]
        pg.evaluate(f"() => window.__report.openEpisode({last})")
        pg.wait_for_selector(f"#ep-detail[data-loaded='{last}'] .episode")
        assert any(u.endswith(f"big.files/part-{at // 2:05d}.js") for u in events["requests"])
        pg.fill("#f-text", "OOPS")
        pg.press("#f-text", "Enter")
        pg.wait_for_selector("#tab-episodes[data-search-done='oops']")
        found = pg.text_content("#text-progress")
        pg0.click("nav button[data-tab=episodes]")
        pg0.fill("#f-text", "OOPS")
        pg0.press("#f-text", "Enter")
        pg0.wait_for_selector("#tab-episodes[data-search-done='oops']")
        assert found == pg0.text_content("#text-progress") and "found in" in found  # the embedded report's answer
        pg0.click("#f-text-clear")
        _no_probe_ran(pg, events)
        shutil.rmtree(files)  # the page moved without its folder
        pg.goto(out.as_uri() + "#episodes")
        pg.reload()
        pg.wait_for_selector("body[data-ready-ms]")
        pg.evaluate("() => window.__report.openEpisode(0)")
        pg.wait_for_selector("#ep-detail .errnote")
        msg = pg.text_content("#ep-detail .errnote")
        assert "big.files/" in msg and "Fix: keep that folder next to the report" in msg
    finally:
        pg.close()


def _num(label):
    mult = {"k": 1e3, "M": 1e6}.get(label[-1:], 1)
    return float(label.rstrip("kM")) * mult


def test_no_sideways_scroll_at_800_px_round_ticks_and_nauc_explained(page):
    """At 800 px no tab scrolls sideways (a wide table scrolls in its own box); plot ticks are round
    numbers (1, 2, 2.5 or 5 × a power of ten apart, not 4.6k, 9.2k); the depth table says why nAUC
    can exceed 100."""
    import math

    pg0, events, exp = page
    pg = pg0.context.browser.new_page(viewport={"width": 800, "height": 900})
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        pg.goto((exp / "report.html").as_uri())
        pg.wait_for_selector("body[data-ready-ms]")
        for name in ("tables", "plots", "episodes", "paper"):
            pg.click(f"nav button[data-tab={name}]")
            assert pg.evaluate("document.documentElement.scrollWidth") <= 800, name
        pg.click("nav button[data-tab=episodes]")
        pg.click("#ep-list tr.click >> nth=0")
        pg.wait_for_selector("#ep-detail[data-loaded]")
        assert pg.evaluate("document.documentElement.scrollWidth") <= 800, "episode"
        pg.click("nav button[data-tab=plots]")
        for sel in ("#plot-tok svg text.xtick", "#plot-scatter svg text.xtick", "#plot-scatter svg text.ytick"):
            ticks = [
                _num(t) for t in pg.evaluate(f"() => [...document.querySelectorAll('{sel}')].map(t => t.textContent)")
            ]
            assert len(ticks) >= 3, sel
            steps = {round(b - a, 9) for a, b in zip(ticks, ticks[1:])}
            assert len(steps) == 1, (sel, ticks)
            (step,) = steps
            lead = step / 10 ** math.floor(math.log10(step))
            assert round(lead, 6) in (1, 2, 2.5, 5), (sel, ticks)
        pg.click("nav button[data-tab=tables]")
        note = pg.text_content("#depth-note")
        assert "nAUC" in note and "above 100" in note
        assert errors == []
    finally:
        pg.close()


def _walkthrough(pg, a, b):
    pg.click("nav button[data-tab=compare]")
    labels = pg.evaluate("() => [...document.querySelectorAll('#cmp-a option')].map(o => o.textContent)")
    pg.select_option("#cmp-a", str(next(i for i, t in enumerate(labels) if t.startswith(a + " "))))
    pg.select_option("#cmp-b", str(next(i for i, t in enumerate(labels) if t.startswith(b + " "))))
    pg.click("#cmp-go")
    pg.wait_for_selector("#cmp-out[data-done] #wt-export")
    state = pg.evaluate(
        "() => [...document.querySelectorAll('#cmp-out tr.wt-step')].map(tr => [...tr.cells].slice(1).map("
        "td => [...td.querySelectorAll('dl.wt-state dt')].map(d => d.textContent)))"
    )
    return state, pg.text_content("#wt-export pre")


def test_case_walkthrough_side_by_side_with_a_link_per_step_and_markdown(page, toy_page):
    """The Compare tab walks through one task step by step, each side with what its method tracked:
    PoS's belief, gaps, health H and trapping beside BM25; FlowState's state updates, disclosures and
    active state beside Full Context; each step has a link that opens it; the Markdown copy holds the
    same steps. No console errors."""
    pg, events = toy_page
    state, md = _walkthrough(pg, "pos", "bm25")
    pos_side = {dt for a, _ in state for dt in a}
    assert {"H", "world state"} <= pos_side, pos_side
    bm25_side = {dt for _, b in state for dt in b}
    assert bm25_side <= {"Retrieved memory items"}  # BM25's own declared view, none of PoS's
    assert md.startswith("### Case walkthrough: task ") and "| step | A: pos | B: bm25 |" in md
    assert "| 1 | " in md and "*H*: " in md
    href = pg.get_attribute("#wt-step-2 a.wt-link", "href")
    assert href.startswith("#compare/pos__") and href.endswith("/step/2")
    pg.evaluate("() => { location.hash = '#tables'; }")
    pg.evaluate("h => { location.hash = h; }", href)  # the link, opened afresh
    pg.wait_for_selector("#wt-step-2.target")
    assert pg.get_attribute("#tab-compare", "class") == "tab active"
    assert events["errors"] == [] and [c for c in events["console"] if c[0] == "error"] == []

    pg2, events2, _ = page
    state, md = _walkthrough(pg2, "flowstate", "full_context")
    fs_side = {dt for a, _ in state for dt in a}
    assert "active state" in fs_side and ("state updates (ISU)" in fs_side or "disclosed (PSA)" in fs_side)
    assert "*active state*: " in md and "| step | A: flowstate | B: full_context |" in md
    _no_probe_ran(pg2, events2)


def _page_prompts(pg, i):
    """Episode row i as the page rebuilds it: every call's prompt head, full message list, reply
    hash and reply text."""
    return pg.evaluate(
        """async i => { const ep = await window.__report.loadEpisode(i);
        return [ep.rec.task_id, ep.rec.trial, ep.calls().filter(c => c.prompt).map(
            c => [c.prompt, ep.messages(c.prompt), c.reply, c.reply ? ep.text(c.reply) : null])]; }""",
        i,
    )


def test_every_prompt_is_rebuilt_whole_from_an_inline_and_a_parts_report(page, tmp_path, monkeypatch):
    """Each episode opened from the page (its details in the page, and in part files of several
    blocks) rebuilds every call's whole prompt and reply from the pieces it carries, equal to what
    the cell's transcript store reads for that call; every episode with a transcript is checked."""
    from runners.analysis import report as R
    from runners.records.transcripts import open_transcripts

    pg0, _, exp = page
    index = _index(pg0)
    fields = index["episode_fields"]
    monkeypatch.setattr(R, "PART_SIZE", 6)
    monkeypatch.setattr(R, "CHUNK", 3)  # several blocks per file, several episodes per block
    out = R.build_report(exp, tmp_path / "parts.html", parts_above=0)
    assert len(list(R.parts_dir(out).iterdir())) > 1
    pg = pg0.context.browser.new_page()
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    try:
        pg.goto(out.as_uri())
        pg.wait_for_selector("body[data-ready-ms]")
        readers = {}
        checked = 0
        for i, row in enumerate(index["episodes"]):
            if not row[fields.index("transcript")]:
                continue
            cell = exp / index["cells"][row[0]]["cell"]
            reader = readers.setdefault(cell, open_transcripts(cell))
            for shown in (_page_prompts(pg0, i), _page_prompts(pg, i)):  # inline, parts
                task, trial, calls = shown
                assert (task, trial) == (row[fields.index("task_id")], row[fields.index("trial")])
                assert calls and len(calls) == row[fields.index("calls")]
                for head, messages, reply, text in calls:
                    assert messages == reader.messages(head) and len(messages) > 1
                    assert text == reader.text(reply)
            checked += 1
        assert checked >= 4 and errors == []
    finally:
        pg.close()
