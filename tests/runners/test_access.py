"""A wrong key or model name is refused before any episode (runners/access.py), through the sweep
CLI against a real loopback endpoint: nothing is run and no cell is written."""

from runners.records.store import MANIFEST
from tests.fake_openai import FakeOpenAI, react_responder
from tests.runners.sweep_helpers import run_sweep

KEY = "sk-access-test-0123456789abcdef"
ARGS = (
    "backbone=openai_compatible",
    "method=full_context",
    "benchmark=memoryarena_math",
    "benchmark.params.data_dir=fixtures",
    "roles.judge=agent",
    "roles.tool=agent",
    "runner.limit=1",
    "runner.preflight_s=1",
    "experiment.name=access",
)


def env(srv):
    return {"OPENAI_COMPAT_BASE_URL": srv.base_url, "OPENAI_COMPAT_API_KEY": KEY}


def cells_written(root):
    return list(root.rglob(MANIFEST))


def test_a_refused_key_stops_the_sweep_before_any_episode(tmp_path):
    with FakeOpenAI(react_responder) as srv:
        srv.mode = 401  # every route, GET /models too, answers 401 and echoes the Authorization header
        p = run_sweep(tmp_path, *ARGS, "backbone.model=fake-model", env=env(srv))
        assert srv.requests == 0  # not one chat request
    assert p.returncode == 3, p.stdout[-2000:]
    assert "refused the key (HTTP 401" in p.stderr and "export OPENAI_COMPAT_API_KEY=" in p.stderr
    assert KEY not in p.stdout + p.stderr and "Nothing was run" in p.stderr
    assert not cells_written(tmp_path)


def test_an_unknown_model_is_refused_naming_the_models_the_endpoint_lists(tmp_path):
    with FakeOpenAI(react_responder, models=["qwen3-8b", "qwen3-32b"], strict_models=True) as srv:
        p = run_sweep(tmp_path, *ARGS, "backbone.model=qwen3-8B-instruct", env=env(srv))
        assert srv.requests == 1  # the one-token check: the model is not in the list
    assert p.returncode == 3, p.stdout[-2000:]
    assert "does not serve this model (HTTP 404" in p.stderr
    assert "backbone.model=<a model it serves>; the endpoint lists: qwen3-8b, qwen3-32b" in p.stderr
    assert not cells_written(tmp_path)


def test_a_listed_model_and_a_good_key_cost_no_request(tmp_path):
    with FakeOpenAI(react_responder, models=["qwen3-8b"], strict_models=True) as srv:
        p = run_sweep(tmp_path, *ARGS, "backbone.model=qwen3-8b", env=env(srv))
    assert p.returncode == 0, p.stderr[-3000:]
    assert cells_written(tmp_path)


def test_failed_tries_are_hidden_from_the_tables_and_pruned(tmp_path):
    """A cell whose every episode ended on a 401 (a run from before the check, or a key revoked
    at the start) is hidden from the tables, listed under them with the command that removes it,
    and `runner.prune=failed` moves it to .superseded/ (nothing deleted)."""
    exp = tmp_path / "access"
    with FakeOpenAI(react_responder) as srv:
        srv.mode = 401
        bad = run_sweep(tmp_path, *ARGS, "backbone.model=qwen3-8b", "runner.check_access=false", env=env(srv))
        assert bad.returncode == 3
        failed = [d.parent.name for d in cells_written(exp)]
        assert len(failed) == 1
        srv.mode = None
        good = run_sweep(tmp_path, *ARGS, "backbone.model=fake-model", env=env(srv))
        assert good.returncode == 0, good.stderr[-3000:]
        summary = (exp / "tables" / "summary.md").read_text()
        table = summary[summary.index("### Results") :].split("\n\n")[1]
        assert "fake-model" in table and "qwen3-8b" not in table  # not a row of the table
        assert "qwen3-8b" not in good.stdout  # nor of the summary at the terminal
        for text in (summary, good.stderr):  # listed under the table, and said on the console
            assert f"{failed[0]}: hidden from the tables" in text and "python -m runners.prune" in text
        pruned = run_sweep(tmp_path, *ARGS, "backbone.model=fake-model", "runner.prune=failed", env=env(srv))
    assert pruned.returncode == 0 and f"pruned {failed[0]}" in pruned.stdout
    assert not (exp / failed[0]).exists() and list((exp / ".superseded" / failed[0]).rglob("errors.jsonl"))
    assert "hidden from the tables" not in pruned.stdout


def test_a_refusal_that_echoes_the_key_past_its_cut_leaves_no_part_of_it():
    """The refusal quotes 300 characters of the body: redacted before the cut, so a base64 echo of
    the Authorization header straddling character 300 leaves no part of the key's encoding."""
    import asyncio
    import base64
    import http.server
    import threading

    from runners.access import check_backbone
    from runners.backbones.openai import OpenAIBackbone

    enc = base64.b64encode(f"Bearer {KEY}".encode()).decode()

    class Deny(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = ("x" * 280 + enc).encode()
            self.send_response(401)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            return None

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Deny)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        b = OpenAIBackbone(name="x", model="m", base_url=f"http://127.0.0.1:{srv.server_address[1]}/v1", api_key=KEY)
        why = asyncio.run(check_backbone(b, "OPENAI_COMPAT_API_KEY", timeout_s=5))
    finally:
        srv.shutdown()
        srv.server_close()
    assert why and "refused the key (HTTP 401" in why and enc[10:20] not in why and enc[:10] + "***" in why
