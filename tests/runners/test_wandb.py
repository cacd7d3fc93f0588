"""runner.wandb=true logs each cell's metrics and token totals and the HTML report as an artifact,
in W&B offline mode (no network; skipped without the wandb extra)."""

import pytest

from tests.runners.sweep_helpers import run_sweep


def offline_env(tmp_path):
    """W&B offline, every folder it writes under `tmp_path` (no network, nothing outside the test)."""
    return {
        "WANDB_MODE": "offline",
        "WANDB_SILENT": "true",
        "WANDB_DIR": str(tmp_path / "wandb"),
        "WANDB_CACHE_DIR": str(tmp_path / "cache"),
        "WANDB_DATA_DIR": str(tmp_path / "data"),
        "WANDB_CONFIG_DIR": str(tmp_path / "config"),
        "WANDB_DISABLE_GIT": "true",
    }


def test_offline_wandb_logs_cells_and_report(tmp_path):
    pytest.importorskip("wandb", reason="wandb comes with the wandb extra")
    env = offline_env(tmp_path)
    p = run_sweep(
        tmp_path / "results",
        "runner.wandb=true",
        "method=full_context",
        "benchmark=memoryarena_phys",
        env=env,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "W&B: logged 1 cell run(s) and the report artifact" in p.stdout
    runs = sorted((tmp_path / "wandb" / "wandb").glob("offline-run-*"))
    assert len(runs) == 2
    logs = [next(r.glob("run-*.wandb")).read_bytes() for r in runs]
    cell = next(
        d.name for d in (tmp_path / "results" / "offline_demo").iterdir() if d.name.startswith("full_context__")
    )
    cell_log = next(b for b in logs if cell.encode() in b)
    for key in (b"metrics/SR", b"tokens/agent", b"tokens/method", b"tokens/judge"):
        assert key in cell_log, key
    report_log = next(b for b in logs if b is not cell_log)
    assert b"offline_demo-report" in report_log and b"report.html" in report_log


def test_missing_wandb_is_named_before_any_work(tmp_path, monkeypatch):
    import sys

    from runners.analysis.wandb_log import WandbUnavailable, require

    monkeypatch.setitem(sys.modules, "wandb", None)
    with pytest.raises(WandbUnavailable, match=r"'wandb' extra"):
        require()


def test_no_secret_from_the_command_line_reaches_wandb(tmp_path):
    """W&B records the command line (and the console): a `user:password` URL or a key given as an
    override must not be in any file of the offline runs (`wandb sync` would upload them)."""
    pytest.importorskip("wandb", reason="wandb comes with the wandb extra")
    from tests.fake_openai import FakeOpenAI, react_responder

    password = "pw-WANDB-leak-8731"
    env = offline_env(tmp_path)
    with FakeOpenAI(responder=react_responder) as srv:
        url = srv.base_url.replace("http://", f"http://bob:{password}@")
        p = run_sweep(
            tmp_path / "results",
            "runner.wandb=true",
            "method=full_context",
            "benchmark=memoryarena_math",
            "benchmark.params.data_dir=fixtures",
            "runner.limit=1",
            "experiment.name=wb",
            "backbone=openai_compatible",
            "backbone.model=fake-model",
            f"backbone.base_url={url}",
            "backbone.base_url_env=null",
            "backbone.api_key_env=null",
            "roles.judge=agent",
            "roles.tool=agent",
            env=env,
            timeout=300,
        )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    files = [f for f in (tmp_path / "wandb").rglob("*") if f.is_file()]
    assert any(f.name.endswith(".wandb") for f in files)
    leaked = [str(f) for f in files if password.encode() in f.read_bytes()]
    assert not leaked, leaked
    assert any(b"***@127.0.0.1" in f.read_bytes() for f in files if f.name.endswith(".wandb"))  # the scrubbed argv
