"""Observation artifacts and the workspace output manifest (docs/pos-benchmarks.md §1.4 adapter additions).

Artifacts (`loca_observation_artifacts`): when the case has python_execute and a tool result is
longer than `inline_max_chars` (8000), not error-prefixed and parses as a JSON array/object (raw
text too when `structured_only` is off), it is written to `<agent_workspace>/tool_results/
tool_result_NNNN.json` and replaced by a compact view (size, payload type, fields, path, Python
access hint, first `preview_items` items).

Manifest: files the action created or modified in the agent workspace, `[{path, bytes, change,
producer}]`; a result manifest printed by agent Python (a JSON object with `path` and
`record_count`) is re-checked against the file, `change: validated` on success, else a failure note."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path
from typing import Any

from benchmarks.loca.interface import is_error_text

ARTIFACT_DIR = "tool_results"
DEFAULTS: dict[str, Any] = {
    "enabled": True,
    "inline_max_chars": 8000,
    "preview_items": 3,
    "structured_only": True,
    "materialize_transform_stdout": True,
}
"""`materialize_transform_stdout` (upstream): a long result of a tool whose declared capability effect
is `transform` (python_execute) is saved even when it is not JSON (`structured_only` does not apply)."""


def parse_payload(content: str, max_starts: int = 20) -> tuple[str, Any] | None:
    """("array"|"object", value) when `content` ends in a JSON array/object: the whole text, or
    [inferred] the text after a short prefix (tried from the first `max_starts` "[" / "{")."""
    text = content.strip()
    if not text or text[-1] not in "]}":
        return None
    starts = [i for i, ch in enumerate(text) if ch in "[{"][:max_starts]
    for i in starts:
        try:
            value = json.loads(text[i:])
        except json.JSONDecodeError:
            continue
        if isinstance(value, list):
            return "array", value
        if isinstance(value, dict):
            return "object", value
    return None


def should_save(
    content: str, settings: dict[str, Any], has_python: bool, *, transform: bool = False
) -> tuple[str, Any] | None:
    if (
        not settings["enabled"]
        or not has_python
        or len(content) <= settings["inline_max_chars"]
        or is_error_text(content)
    ):
        return None
    parsed = parse_payload(content)
    structured_only = settings["structured_only"] and not (
        transform and settings.get("materialize_transform_stdout", True)
    )
    if parsed is None and not structured_only:
        return "text", content
    return parsed


def save_artifact(
    workspace: Path,
    *,
    case_id: str,
    tool_name: str,
    call_id: str,
    counter: int,
    payload_type: str,
    payload: Any,
    content: str,
) -> Path:
    folder = workspace / ARTIFACT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"tool_result_{counter:04d}.json"
    record = {
        "version": 1,
        "case_id": case_id,
        "tool_name": tool_name,
        "tool_call_id": call_id,
        "tool_use_counter": counter,
        "payload_type": payload_type,
        "payload": payload,
        "raw_content": content,
        "raw_content_sha256": hashlib.sha256(content.encode("utf-8")).hexdigest(),
    }
    path.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    return path


def compact_view(path: Path, workspace: Path, payload_type: str, payload: Any, n_chars: int, preview: int) -> str:
    """The inline view of a saved result; the artifact path is absolute, as upstream's
    (`agent_artifact_dir=str(artifact_dir)`), so Python run from any folder finds it."""
    rel = str(path.resolve())
    lines = [
        f"[tool result saved as artifact: {n_chars} characters, too long to show inline]",
        f"artifact: {rel}",
        f"payload_type: {payload_type}",
    ]
    if payload_type == "array":
        fields = sorted({k for item in payload if isinstance(item, dict) for k in item})
        lines += [
            f"items: {len(payload)}",
            f"fields: {fields}",
            f"first {min(preview, len(payload))} items: {json.dumps(payload[:preview], ensure_ascii=False)}",
        ]
    elif payload_type == "object":
        keys = list(payload)
        lines += [
            f"keys ({len(keys)}): {keys[:50]}",
            f"first {min(preview, len(keys))} entries: "
            f"{json.dumps({k: payload[k] for k in keys[:preview]}, ensure_ascii=False)[:2000]}",
        ]
    else:
        lines.append(f"first 500 characters: {str(payload)[:500]}")
    lines.append(f"Python: import json; data = json.load(open({rel!r}))['payload']")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- workspace manifest
def snapshot(workspace: Path | None) -> dict[str, tuple[int, int]]:
    """{relative path: (bytes, mtime_ns)} of the workspace's files, the artifact folder excluded."""
    if workspace is None or not workspace.is_dir():
        return {}
    out = {}
    for p in workspace.rglob("*"):
        rel = p.relative_to(workspace).as_posix()
        if p.is_file() and not rel.startswith(f"{ARTIFACT_DIR}/"):
            st = p.stat()
            out[rel] = (st.st_size, st.st_mtime_ns)
    return out


def changes(
    before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]], producer: str
) -> list[dict[str, Any]]:
    return [
        {"path": rel, "bytes": size, "change": "created" if rel not in before else "modified", "producer": producer}
        for rel, (size, mtime) in sorted(after.items())
        if before.get(rel) != (size, mtime)
    ]


def result_manifests(text: str) -> list[dict[str, Any]]:
    """JSON objects on their own line of agent output that declare `path` and `record_count`."""
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict) and "path" in obj and "record_count" in obj:
                found.append(obj)
    return found


def count_records(path: Path) -> int | None:
    """Records in a .json (array length / 1), .jsonl (non-empty lines) or .csv (rows after header)."""
    suffix = path.suffix.lower()
    text = path.read_text(encoding="utf-8", errors="replace")
    if suffix == ".jsonl":
        return sum(1 for x in text.splitlines() if x.strip())
    if suffix == ".csv":
        return max(0, sum(1 for _ in csv.reader(text.splitlines())) - 1)
    if suffix == ".json":
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return None
        return len(value) if isinstance(value, list) else 1
    return None


def check_manifest(
    workspace: Path, manifest: dict[str, Any], producer: str
) -> tuple[dict[str, Any] | None, str | None]:
    """(validated manifest entry, None) or (None, failure note) for one declared result."""
    raw = str(manifest["path"])
    path = (workspace / raw).resolve()
    if workspace.resolve() not in path.parents:
        return None, f"result manifest check failed: {raw} is outside the workspace"
    if not path.is_file():
        return None, f"result manifest check failed: {raw} does not exist"
    n = count_records(path)
    if n is not None and n != manifest["record_count"]:
        return (
            None,
            f"result manifest check failed: {raw} has {n} records, the manifest says {manifest['record_count']}",
        )
    return {
        "path": path.relative_to(workspace.resolve()).as_posix(),
        "bytes": path.stat().st_size,
        "change": "validated",
        "producer": producer,
    }, None
