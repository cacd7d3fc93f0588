"""LOCA task-config files (docs/pos-benchmarks.md §1.3) → cases, and a case → a `LocaToolEnv`.

Layout under the data root: `task-configs/final_{8k,16k,32k,64k,96k,128k,256k}_set_config.json`,
each `{"configurations": [{name, env_class, env_params{seed,...}, mcp_servers{server: {enabled,
type, params}}}]}`. Placeholders `{task_workspace}` / `{agent_workspace}` in server params are
filled per episode. `case_id = "<length>/<name>/seed_<seed>"` (§1.4 Reset)."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from benchmarks.loca.interface import LocaSetupError, LocaToolEnv

LENGTHS = ("8k", "16k", "32k", "64k", "96k", "128k", "256k")  # §1.2
ENV_VAR = "LOCA_BENCH_DIR"
FIXTURE_ROOT = Path(__file__).parent / "fixtures"
INSTALL_HINT = (
    "LOCA-Bench is an optional extra (docs/pos-benchmarks.md §1.6): clone hkust-nlp/LOCA-bench, `pip install -e .` it "
    "into "
    ".venv (fastmcp, excel-mcp-server, ...), install Node 24 with `npm i -g @modelcontextprotocol/server-filesystem "
    "@modelcontextprotocol/server-memory`, and `uv tool install cli-mcp-server pdf-tools-mcp`; then set "
    f"benchmark.params.data_dir (or ${ENV_VAR}) to the LOCA-bench checkout. For an offline run use data_dir=fixtures."
)


def resolve_root(data_dir: str | os.PathLike | None) -> tuple[Path, str]:
    """The folder holding task-configs/, and a source label ("fixtures" = the synthetic fixture)."""
    if data_dir == "fixtures":
        return FIXTURE_ROOT, "synthetic StockAlertLite fixture (benchmarks/loca/synth.py)"
    raw = data_dir or os.environ.get(ENV_VAR)
    if not raw:
        raise LocaSetupError(f"LOCA-Bench data not configured. {INSTALL_HINT}")
    root = Path(raw).expanduser()
    if not (root / "task-configs").is_dir():
        raise LocaSetupError(
            f"{root} has no task-configs/ folder; point data_dir at the LOCA-bench checkout "
            "(the folder holding task-configs/final_8k_set_config.json ...)"
        )
    return root, str(root)


def config_path(root: Path, length: str) -> Path:
    return root / "task-configs" / f"final_{length}_set_config.json"


def validate_entry(entry: Any, where: str) -> dict[str, Any]:
    """One configuration entry checked against §1.3 (the message names the broken field)."""
    if not isinstance(entry, dict):
        raise LocaSetupError(f"{where}: a configuration must be an object, got {type(entry).__name__}")
    for key, typ in (("name", str), ("env_class", str), ("env_params", dict), ("mcp_servers", dict)):
        if not isinstance(entry.get(key), typ):
            raise LocaSetupError(
                f"{where}: field '{key}' must be a {typ.__name__} (schema: docs/pos-benchmarks.md §1.3)"
            )
    if not isinstance(entry["env_params"].get("seed"), int):
        raise LocaSetupError(f"{where}: env_params.seed must be an integer")
    for server, cfg in entry["mcp_servers"].items():
        if (
            not isinstance(cfg, dict)
            or not isinstance(cfg.get("enabled"), bool)
            or not isinstance(cfg.get("params", {}), dict)
        ):
            raise LocaSetupError(f"{where}: mcp_servers.{server} must be {{enabled: bool, type: str, params: {{...}}}}")
    return entry


def load_cases(root: Path, lengths: list[str]) -> list[dict[str, Any]]:
    """All configurations of the given lengths, in file order, as {case_id, length, config}."""
    cases = []
    for length in lengths:
        if length not in LENGTHS:
            raise LocaSetupError(f"unknown LOCA length '{length}'; known: {', '.join(LENGTHS)}")
        path = config_path(root, length)
        if not path.is_file():
            raise LocaSetupError(f"missing {path}; LOCA ships task-configs/final_<length>_set_config.json per length")
        from runners.inputs import InputError, read_json

        try:
            data = read_json(
                path
            )  # lone surrogates replaced (noted for the manifest); bad bytes or JSON name file and line
        except InputError as e:
            raise LocaSetupError(str(e)) from e
        if not isinstance(data, dict) or not isinstance(data.get("configurations"), list):
            raise LocaSetupError(f'{path}: expected {{"configurations": [...]}} (docs/pos-benchmarks.md §1.3)')
        for i, entry in enumerate(data["configurations"]):
            entry = validate_entry(entry, f"{path.name} configurations[{i}]")
            cid = f"{length}/{entry['name']}/seed_{entry['env_params']['seed']}"
            cases.append({"case_id": cid, "length": length, "config": entry})
    return cases


def fill_placeholders(value: Any, task_workspace: Path, agent_workspace: Path) -> Any:
    """`{task_workspace}` / `{agent_workspace}` replaced in every string of `value` (§1.3)."""
    if isinstance(value, str):
        return value.replace("{task_workspace}", str(task_workspace)).replace("{agent_workspace}", str(agent_workspace))
    if isinstance(value, dict):
        return {k: fill_placeholders(v, task_workspace, agent_workspace) for k, v in value.items()}
    if isinstance(value, list):
        return [fill_placeholders(v, task_workspace, agent_workspace) for v in value]
    return value


def enabled_servers(config: dict[str, Any], task_dir: Path) -> dict[str, dict[str, Any]]:
    """Enabled MCP servers with placeholders filled: {name: {type, params}}."""
    agent_ws = task_dir / "agent_workspace"
    return {
        name: {"type": cfg.get("type", name), "params": fill_placeholders(cfg.get("params", {}), task_dir, agent_ws)}
        for name, cfg in config["mcp_servers"].items()
        if cfg.get("enabled")
    }


def import_class(dotted: str) -> type:
    module, _, attr = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except ModuleNotFoundError as e:
        if dotted.startswith("gem."):
            raise LocaSetupError(f"cannot import {dotted} ({e}). {INSTALL_HINT}") from e
        raise LocaSetupError(f"cannot import env_class {dotted}: {e}") from e
    except AttributeError as e:
        raise LocaSetupError(f"env_class {dotted}: module {module} has no {attr}") from e


def build_env(config: dict[str, Any], task_dir: Path, *, max_tool_uses: int, tool_timeout_s: float) -> LocaToolEnv:
    """The case's environment bound to `task_dir` (created here, with agent_workspace/).
    A class implementing `LocaToolEnv` (the fixture) is built directly; any other class is an
    upstream GEM env and goes through `upstream.GemToolEnv` (lazy import of the LOCA extra)."""
    (task_dir / "agent_workspace").mkdir(parents=True, exist_ok=True)
    servers = enabled_servers(config, task_dir)
    cls = import_class(config["env_class"])
    if isinstance(cls, type) and issubclass(cls, LocaToolEnv):
        return cls(
            env_params=dict(config["env_params"]),
            mcp_servers=servers,
            task_dir=task_dir,  # type: ignore[call-arg]  # the constructor every LocaToolEnv implementation takes; the ABC declares none
            tool_timeout_s=tool_timeout_s,
        )
    from benchmarks.loca.upstream import GemToolEnv

    return GemToolEnv(
        cls, dict(config["env_params"]), servers, task_dir, max_tool_uses=max_tool_uses, tool_timeout_s=tool_timeout_s
    )
