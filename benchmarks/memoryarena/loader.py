"""Loading `ZexueHe/memoryarena` task rows: Hugging Face at the pinned revision (sha256-checked)
or a local directory in the same `<config>/data.jsonl` layout (docs/memoryarena.md §1, §6)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runners.api import JsonlTasks

REPO_ID = "ZexueHe/memoryarena"
PINNED_REVISION = "da1a37c8b19280e18627ca01cf368195a5e1d92e"
SHA256 = {
    "bundled_shopping": "4411a2da528a33dc6aca519b49cc225895363f18b2d19b191fddb501200134ef",
    "group_travel_planner": "2f955d444f6f3ad3c5da2064359ab19f8fc1f90621ff9d00723a450a009c3732",
    "formal_reasoning_math": "ff5b0ad575847c7476a02d1e35661592a833bd0cff384cb54bc6f35b46de7803",
    "formal_reasoning_phys": "580862006af2ff2bfc8c5d2d2b9a60bf33a46cbb64f27d60a2bfe039aec61cf6",
    "progressive_search": "b445ee36fa3ccb9ad08eae9e7adda86bbc64f14f1e2a0682a8b2085cdb8e4c0e",
}
ENV_VAR = "MEMORYARENA_DATA_DIR"
FIXTURES = Path(__file__).parent / "fixtures"


class DataError(RuntimeError):
    """Missing or wrong benchmark data; the message says how to fix it."""


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def resolve(config: str, data_dir: str | None) -> tuple[Path, dict[str, Any]]:
    """Path of `<config>/data.jsonl` and provenance facts for the manifest.

    data_dir: a local directory, the word "fixtures" (the project's own small fixtures; "fixtures/tiny":
    one question of the math fixture, for a real local model on a CPU), or
    None (→ $MEMORYARENA_DATA_DIR, else download from Hugging Face at the pinned revision)."""
    if config not in SHA256:
        raise DataError(f"unknown MemoryArena config '{config}'; available: {', '.join(SHA256)}")
    data_dir = data_dir or os.environ.get(ENV_VAR)
    if data_dir == "fixtures" or str(data_dir).startswith(
        "fixtures/"
    ):  # fixtures/tiny: one question (the local real-model run)
        path = FIXTURES / str(data_dir)[len("fixtures/") :] / config / "data.jsonl"  # "fixtures" → FIXTURES/<config>
        source = "project fixture (not MemoryArena data)"
    elif data_dir:
        path = Path(data_dir).expanduser() / config / "data.jsonl"
        source = f"local directory {data_dir}"
    else:
        path, source = _download(config), f"hf://{REPO_ID}@{PINNED_REVISION}"
    if not path.is_file():
        raise DataError(
            f"MemoryArena file not found: {path}. Point benchmark.params.data_dir (or ${ENV_VAR}) at a directory "
            f"holding {config}/data.jsonl, use data_dir=fixtures for the offline fixture, or unset both to "
            f"download {REPO_ID} at revision {PINNED_REVISION}."
        )
    digest = sha256_file(path)
    pinned = digest == SHA256[config]
    if not pinned and source.startswith("hf://"):
        raise DataError(
            f"checksum mismatch for {path}: sha256 {digest}, expected {SHA256[config]} (pinned revision "
            f"{PINNED_REVISION})"
        )
    return path, {"source": source, "path": str(path), "sha256": digest, "pinned_checksum": pinned}


def _download(config: str) -> Path:
    from runners.netcheck import Unreachable, hf_endpoint, hf_offline, require_host

    fix = (
        f"Set ${ENV_VAR} or benchmark.params.data_dir to a directory holding {config}/data.jsonl (download "
        f"{REPO_ID} at revision {PINNED_REVISION} elsewhere), or benchmark.params.data_dir=fixtures for the offline "
        "fixture."
    )
    if not hf_offline():  # offline: fail in seconds, not after huggingface_hub's retry cycle
        try:
            require_host(hf_endpoint(), fix)
        except Unreachable as e:
            raise DataError(f"could not download {REPO_ID}/{config}: Hugging Face {e}") from None
    try:
        from huggingface_hub import hf_hub_download

        return Path(
            hf_hub_download(
                repo_id=REPO_ID, repo_type="dataset", filename=f"{config}/data.jsonl", revision=PINNED_REVISION
            )
        )
    except Exception as e:  # offline, gated, or renamed
        raise DataError(
            f"could not download {REPO_ID}/{config} at {PINNED_REVISION}: {type(e).__name__}: {e}. "
            f"Download it elsewhere and set ${ENV_VAR} (or benchmark.params.data_dir) to its directory."
        ) from None


def read_rows(path: Path, required: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The rows of a `data.jsonl` through the shared reader (runners/inputs.py): lone surrogates
    replaced and noted for the manifest; bytes that are not UTF-8, a line that is not a JSON object,
    a row without a `required` field and an empty file are DataErrors naming file, line and field."""
    from runners.inputs import InputError, read_jsonl

    try:
        return read_jsonl(path, required=required)
    except InputError as e:
        raise DataError(str(e)) from None


def read_tasks(
    path: Path,
    task_id: Callable[[dict[str, Any]], str],
    *,
    required: tuple[str, ...] = (),
    check: Callable[[dict[str, Any]], None] | None = None,
    limit: int | None = None,
) -> JsonlTasks:
    """The tasks of a `data.jsonl`, read lazily (`runners.api.JsonlTasks`: indexed now with
    `read_rows`' checks and errors, each row parsed again when its task is taken)."""
    from runners.api import JsonlTasks
    from runners.inputs import InputError

    try:
        return JsonlTasks(path, task_id, required=required, check=check, limit=limit)
    except InputError as e:
        raise DataError(str(e)) from None
