"""τ² data loading (docs/tau-bench.md §1): local directory or $TAU2_DATA_DIR, sha256 verification,
download from the pinned commit (served here over 127.0.0.1), clear errors; splits; the YAML
configs instantiate."""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import pytest
import yaml

from benchmarks.tau import data as tau_data
from benchmarks.tau.benchmark import TauBenchmark
from tests.conftest import REPO, shared_path


def mirror(src: Path, dst: Path, edit: str | None = None) -> Path:
    """A data dir of symlinks to the real files (nothing copied); `edit` = one file rewritten."""
    for rel in tau_data.SHA256:
        p = dst / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if rel == edit:
            p.write_bytes((src / rel).read_bytes() + b"\n")
        else:
            p.symlink_to(src / rel)
    return dst


def test_splits_and_files():
    for domain, sizes in (("airline", (50, 30, 20)), ("retail", (114, 74, 40))):
        d = tau_data.DomainData(domain, shared_path("tau2"))
        assert tuple(len(d.split(s)) for s in ("base", "train", "test")) == sizes
        assert len(d.tasks) == sizes[0] and d.policy.startswith("#") and "###STOP###" in d.guidelines
        a, b = d.fresh_db(), d.fresh_db()
        assert a == b and a is not b and list(a)[0] in ("flights", "products")
        with pytest.raises(tau_data.DataError, match="unknown split 'dev'"):
            d.split("dev")


def test_env_var_and_inner_folder(monkeypatch):
    root = shared_path("tau2")
    monkeypatch.setenv(tau_data.ENV_VAR, str(root))
    assert tau_data.DomainData("airline").source == f"local directory {root}"
    assert tau_data.resolve_root(root / "tau2")[0] == root
    with pytest.raises(tau_data.DataError, match="has no tau2/domains"):
        tau_data.resolve_root(REPO)
    with pytest.raises(tau_data.DataError, match="unknown τ³ domain 'telecom'"):
        tau_data.domain_files("telecom")


def test_checksum_mismatch_is_an_error(tmp_path):
    src = shared_path("tau2")
    root = mirror(src, tmp_path, edit="tau2/domains/airline/policy.md")
    with pytest.raises(tau_data.DataError, match="checksum mismatch .*policy.md.*verify_checksums=false"):
        tau_data.DomainData("airline", root)
    original = (src / "tau2/domains/airline/policy.md").read_text()
    assert tau_data.DomainData("airline", root, verify=False).policy == original + "\n"
    (root / "tau2/domains/airline/tasks.json").unlink()
    with pytest.raises(tau_data.DataError, match="τ² file missing"):
        tau_data.DomainData("airline", root, verify=False)


@pytest.fixture
def server(tmp_path):
    """Serves a directory over 127.0.0.1 as raw.githubusercontent.com would: /<commit>/data/<path>."""
    site = tmp_path / "site"
    (site / tau_data.COMMIT).mkdir(parents=True)
    (site / tau_data.COMMIT / "data").symlink_to(shared_path("tau2"))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/{{commit}}/data/{{path}}", site
    httpd.shutdown()


def test_download_from_pinned_commit(server, tmp_path, monkeypatch):
    url, site = server
    monkeypatch.setattr(tau_data, "URL", url)
    monkeypatch.delenv(tau_data.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    d = tau_data.DomainData("retail")
    assert d.source.startswith("github.com/sierra-research/tau2-bench@") and len(d.split("base")) == 114
    cached = tau_data.cache_dir() / "tau2/domains/retail/db.json"
    assert (
        cached.is_file()
        and tau_data.sha256_bytes(cached.read_bytes()) == tau_data.SHA256["tau2/domains/retail/db.json"]
    )
    # A corrupted upstream file is rejected.
    bad = tmp_path / "bad"
    mirror(shared_path("tau2"), bad, edit="tau2/domains/airline/split_tasks.json")
    (site / tau_data.COMMIT / "data").unlink()
    (site / tau_data.COMMIT / "data").symlink_to(bad)
    with pytest.raises(tau_data.DataError, match="checksum mismatch for downloaded"):
        tau_data.DomainData("airline")


def test_offline_download_error(tmp_path, monkeypatch):
    monkeypatch.setattr(tau_data, "URL", "http://127.0.0.1:9/{commit}/data/{path}")
    monkeypatch.delenv(tau_data.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(tau_data.DataError, match="could not download .*set \\$TAU2_DATA_DIR"):
        tau_data.DomainData("airline")


@pytest.mark.parametrize("name,n", [("tau_airline", 50), ("tau_retail", 114)])
def test_yaml_configs_instantiate(name, n):
    cfg = yaml.safe_load((REPO / "conf" / "benchmark" / f"{name}.yaml").read_text())
    assert cfg["name"] == name and cfg["_target_"] == "benchmarks.tau.benchmark.TauBenchmark"
    params = {**cfg["params"], "data_dir": str(shared_path("tau2"))}
    bench = TauBenchmark(name=cfg["name"], **params)
    tasks = bench.load_tasks()
    assert len(tasks) == n and tasks[0].task_id == f"{name.split('_')[1]}-0"
    assert bench.notes()["data"]["commit"] == tau_data.COMMIT
    with pytest.raises(tau_data.DataError, match="not in the"):
        TauBenchmark(name=name, **{**params, "task_ids": ["999"]}).load_tasks()
    with pytest.raises(ValueError, match="requests: Input should be 'dialogue' or 'user_turn'"):
        TauBenchmark(name=name, **{**params, "requests": "turns"})
