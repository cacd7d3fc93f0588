"""The run record: what a sweep leaves on disk, and the one way to read it back.

- `schema`: the episode record's pydantic models (`EpisodeRecord` → `RequestRecord` → `StepRecord` → `CallLog`).
- `store`: a cell's folder (manifest, `episodes.jsonl[.zst]`, `errors.jsonl`, shards), atomic writes, resume.
- `transcripts`: every message list and raw reply, deduplicated in the cell's `transcripts.sqlite`.
- `results`: `open_experiment(path)`: experiment → cells → episodes → requests → steps → calls, with texts.
- `wire`: the canonical JSON bytes of prompts (shared by the cache, the backbones and the transcripts).

This package imports only `runners.api`: the engine writes records through it, the analysis wing reads them.
"""
