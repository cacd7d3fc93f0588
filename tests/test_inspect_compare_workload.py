"""The harness side of `scripts.perf.inspect_compare` (inspect_ai itself is not installed here):
its endpoint must recognise the harness's own Full Context prompts and give memoryarena_math-shaped
episodes of exactly 12 calls (a change to the prompts that broke the comparison fails here), and
its storage counter must account for every byte a finished cell leaves on disk."""

import json
import subprocess

from scripts.perf.inspect_compare import (
    CALLS_PER_EPISODE,
    ShapedEndpoint,
    check_harness_cell,
    dir_bytes,
    harness_cmd,
    storage_kinds,
    workload,
)
from tests.runners.sweep_helpers import REPO


def test_shaped_episodes_make_twelve_recognised_calls_and_storage_is_counted(tmp_path):
    w = workload(2, background_chars=400)
    data = tmp_path / "data" / "formal_reasoning_math"
    data.mkdir(parents=True)
    (data / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in w["rows"]))
    out = tmp_path / "out"
    with ShapedEndpoint(w, latency_s=0.0, reply_chars=300) as ep:
        ep.start_run(None, keep_bodies=True)  # read below
        p = subprocess.run(
            harness_cmd(ep.base_url, data.parent, out, 2, 2), cwd=REPO, capture_output=True, text=True, timeout=120
        )
        arrivals, unknown, bodies = len(ep.arrivals), ep.unknown, list(ep.bodies)
    assert p.returncode == 0, p.stderr[-2000:]
    assert unknown == 0 and arrivals == 2 * CALLS_PER_EPISODE == 24
    first = [b["messages"][0]["content"] for b in bodies]
    assert (
        first.count(w["tool_system"]) == first.count(w["judge_system"]) == 2 * 3
    )  # per subtask: one tool call, one judge call
    check_harness_cell(out, 2)  # DONE, 2 ok episodes, every call's transcript readable
    sizes = dir_bytes(out)
    kinds = storage_kinds(sizes)
    assert sum(kinds.values()) == sum(sizes.values()) == sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    assert kinds["records"] > 0 and kinds["transcripts"] > 0 and "eval logs" not in kinds
    assert any(name.endswith("episodes.jsonl.zst") for name in sizes)  # a finished cell's records are compressed


def test_the_endpoint_keeps_no_request_bodies_unless_asked():
    """A measured run's endpoint (in the measuring process, on the same cores) holds no request
    bodies (~1 GB at 10,000 episodes); a run that reads them asks for them."""
    import urllib.request

    w = workload(1, background_chars=100)

    def post(url):
        body = json.dumps({"model": "m", "messages": [{"role": "system", "content": w["judge_system"]}]}).encode()
        req = urllib.request.Request(url + "/chat/completions", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.load(r)["choices"][0]["message"]["content"]

    with ShapedEndpoint(w, latency_s=0.0, reply_chars=10) as ep:
        ep.start_run(None)
        assert post(ep.base_url) == "yes"
        assert len(ep.arrivals) == 1 and list(ep.bodies) == []
        ep.start_run(None, keep_bodies=True)
        post(ep.base_url)
        assert len(ep.arrivals) == 1 and [b["model"] for b in ep.bodies] == ["m"]
