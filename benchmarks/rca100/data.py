"""RCA-100 case layout (docs/pos-benchmarks.md §2.2, §2.3): where the data lives, which cases to run,
the task file, the answer key, and the per-case tables (read lazily with pandas).

Layout under the data root:
    manifest.txt                 one t-ID per line (fixes the order; optional, else sorted dirs)
    cases/tNNN/task.json, topology.json, metrics|logs|traces|events|alerts.parquet
    answer_key/tNNN.gt.json      root_cause_entities, root_cause_types (or `answer_key_dir` elsewhere)
No RCA-100 data ships with this project (CC BY-NC-SA 4.0; keys only through the team)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

ENV_VAR = "RCA100_DATA_DIR"
TABLES = ("metrics", "logs", "traces", "events", "alerts")
COLUMNS: dict[str, tuple[str, ...]] = {  # §2.2: the columns the tools read
    "metrics": ("entity_name", "metric", "value", "time"),
    "logs": ("_pod_name_", "content", "_time_"),
    "traces": ("serviceName", "spanName", "startTime", "duration", "statusCode", "statusMessage"),
    "events": ("eventId",),
    "alerts": ("time", "status", "severity", "data"),
}
CASE_FILES = ("task.json", "topology.json", *(f"{t}.parquet" for t in TABLES))
_CASE_ID = re.compile(r"^t\d+$")


class RcaDataError(ValueError):
    """The RCA-100 data folder is missing or malformed (the message names the fix)."""


def resolve_root(data_dir: str | os.PathLike | None) -> tuple[Path, str]:
    """The data root and its source label. "fixtures" = our synthetic fixture (written on demand)."""
    if data_dir == "fixtures":
        from benchmarks.rca100.synth import fixture_root

        return fixture_root(), "synthetic fixture (invented values, benchmarks/rca100/synth.py)"
    raw = data_dir or os.environ.get(ENV_VAR)
    if not raw:
        raise RcaDataError(
            f"RCA-100 data not configured: set benchmark.params.data_dir or ${ENV_VAR} to the folder holding cases/ "
            "(and answer_key/). No RCA-100 data ships with this project (CC BY-NC-SA 4.0; the answer keys come only "
            "from the Alibaba Cloud AIOps team). For a smoke test use data_dir=fixtures."
        )
    root = Path(raw).expanduser()
    if not (root / "cases").is_dir():
        raise RcaDataError(
            f"RCA-100 data root {root} has no cases/ folder; point data_dir at the folder that holds "
            "cases/tNNN/ (and manifest.txt, answer_key/)"
        )
    return root, str(root)


def case_ids(root: Path, manifest: str | os.PathLike | None = None) -> list[str]:
    """Case IDs in manifest order (`manifest` or <root>/manifest.txt), else sorted t-dirs."""
    path = Path(manifest) if manifest else root / "manifest.txt"
    if manifest and not path.is_file():
        raise RcaDataError(f"RCA-100 manifest {path} not found; fix benchmark.params.manifest or set it to null")
    if path.is_file():
        ids = [
            line.strip()
            for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")
        ]
        missing = [i for i in ids if not (root / "cases" / i).is_dir()]
        if missing:
            raise RcaDataError(f"{len(missing)} case(s) of {path} are missing under {root / 'cases'}: {missing[:5]}")
        return ids
    ids = sorted(p.name for p in (root / "cases").iterdir() if p.is_dir() and _CASE_ID.match(p.name))
    if not ids:
        raise RcaDataError(f"no case folders (t001, t002, …) under {root / 'cases'}")
    return ids


def read_json(path: Path) -> Any:
    from runners.inputs import InputError, read_json as read_checked

    try:
        return read_checked(
            path
        )  # lone surrogates replaced (noted for the manifest); bad bytes or JSON name file and line
    except FileNotFoundError:
        raise RcaDataError(f"missing file {path}") from None
    except InputError as e:
        raise RcaDataError(str(e)) from None


def load_case(root: Path, case_id: str, keys_dir: Path) -> dict[str, Any]:
    """A case's payload: folder, task (minus `prompt_text`, §2.6) and the gold labels."""
    case_dir = root / "cases" / case_id
    missing = [f for f in CASE_FILES if not (case_dir / f).is_file()]
    if missing:
        raise RcaDataError(f"RCA-100 case {case_dir} lacks {missing}; each case needs {list(CASE_FILES)}")
    task = read_json(case_dir / "task.json")
    if not isinstance(task, dict):
        raise RcaDataError(f"{case_dir / 'task.json'} must hold a JSON object")
    key_path = keys_dir / f"{case_id}.gt.json"
    if not key_path.is_file():
        raise RcaDataError(
            f"no answer key {key_path}; RCA-100 keys are obtained separately (see the key README's "
            "terms) and go in <data_dir>/answer_key/ or benchmark.params.answer_key_dir"
        )
    key = read_json(key_path)
    for field in ("root_cause_entities", "root_cause_types"):
        if not isinstance(key.get(field), list) or not key[field]:
            raise RcaDataError(f"{key_path}: `{field}` must be a non-empty list")
    return {
        "case_id": case_id,
        "case_dir": str(case_dir),
        "task": {k: v for k, v in task.items() if k != "prompt_text"},
        "gold": {
            "root_cause_entities": [str(e) for e in key["root_cause_entities"]],
            "root_cause_types": [str(t) for t in key["root_cause_types"]],
            "incident_id": key.get("incident_id") or key.get("case_id"),
        },
    }


class CaseData:
    """One case's tables, read on first use (a real case is ≈35 MB, traces ≈26 MB)."""

    def __init__(self, case_dir: str | os.PathLike) -> None:
        self.dir = Path(case_dir)
        self._tables: dict[str, Any] = {}
        self._topology: dict[str, Any] | None = None

    def table(self, name: str) -> pd.DataFrame:
        if name not in self._tables:
            import pandas as pd  # lazy: only RCA episodes need it

            df = pd.read_parquet(self.dir / f"{name}.parquet")
            absent = [c for c in COLUMNS[name] if c not in df.columns]
            if absent:
                raise RcaDataError(
                    f"{self.dir / (name + '.parquet')} lacks columns {absent} (schema: docs/pos-benchmarks.md §2.2)"
                )
            self._tables[name] = df
        return self._tables[name]

    @property
    def topology(self) -> dict[str, Any]:
        if self._topology is None:
            topo = read_json(self.dir / "topology.json")
            topo.setdefault("entities", [])
            topo.setdefault("edges", [])
            self._topology = topo
        return self._topology
