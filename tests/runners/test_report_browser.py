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
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
PROBES = ['<script>window.__xss=1;alert(1)</script>', '<img src=x onerror="window.__xss=2;alert(2)">',
          '</textarea><b data-xss="3">bold</b>', '</script><script>window.__xss=4</script>', '<!-- open comment',
          '<svg onload="window.__xss=5"></svg>', '"><iframe src="javascript:alert(6)">']
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
    p = run_sweep(root / "results", "experiment.name=xss", "benchmark=memoryarena_math", f"benchmark.params.data_dir={data}",
                  "experiment.grid.method=[full_context,flowstate,bm25]", "backbone.scripted.malformed_rate=0.25")
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
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (it comes with the dev extra)")
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
        figs: [...document.querySelectorAll('img.paper-fig')].every(i => i.getAttribute('src').startsWith('data:image/svg+xml;base64,')),
        scripts: [...document.scripts].filter(s => !s.type || s.type === 'text/javascript').length,
    })""")
    assert injected == {"xss": None, "bad": 0, "figs": True, "scripts": 1}, injected  # our figures: embedded SVG data only
    assert events["dialogs"] == [] and events["errors"] == []
    assert [c for c in events["console"] if c[0] == "error"] == []
    assert all(u.startswith("file://") for u in events["requests"]), events["requests"]  # nothing from the network


def test_tables_and_plots_render(page):
    pg, events, exp = page
    from runners.analysis.tables import build_tables, collect

    _, rows, _ = build_tables(collect(exp), "full_context")
    shown = pg.evaluate("() => [...document.querySelectorAll('#tab-tables table')[0].querySelectorAll('tbody tr')].map(tr => [...tr.cells].map(td => td.textContent))")
    assert shown == rows  # the same rows runners.aggregate writes
    assert pg.get_attribute("#tab-tables", "class") == "tab active"
    pg.click("nav button[data-tab=plots]")
    for plot in ("#plot-acc_k", "#plot-tok", "#plot-scatter"):  # acc_k: MemoryArena's declared curve
        assert pg.query_selector(f"{plot} svg circle, {plot} svg rect"), plot
    pg.click("nav button[data-tab=paper]")  # the runners.paper artefacts: tables as HTML, figures as embedded SVG
    assert pg.query_selector("#paper-flowstate_table1 table tbody tr")
    assert pg.query_selector("#paper-flowstate_fig4 img.paper-fig")
    assert "not produced" in pg.text_content("#tab-paper")
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
        pg.wait_for_function(f"document.querySelector('#ep-detail').getAttribute('data-loaded') !== null")
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
