"""Transcripts of concurrent episodes share a transaction (group commit, `put_async`), each still
one pack, each readable; a record that cannot be stored fails alone."""

import asyncio

import pytest

from runners.records.transcripts import TranscriptError, TranscriptReader, TranscriptStore
from tests.runners.test_transcripts import _rb, _record


def records(n, steps=4):
    out = []
    for i in range(n):
        sink = []
        rec = _record(steps, _rb(sink), sink)
        rec.task_id = f"t{i}"
        # a text only this episode has, so that each episode brings its own pack
        rec.requests[0].steps[0].calls[0].pending_transcript().blobs[f"{i:02d}" * 16] = (
            f"episode {i} only ".encode() * 30
        )
        out.append(rec)
    return out


def test_concurrent_episodes_share_commits_and_read_back(tmp_path):
    recs = records(12)
    store = TranscriptStore(tmp_path).open()
    commits = []
    store._db.set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)

    async def main():
        return await asyncio.gather(*(store.put_async(r) for r in recs))

    counts = asyncio.run(main())
    store.close()
    assert all(n > 0 for n in counts)
    assert 1 <= len(commits) < len(recs)  # episodes waiting together were committed together
    reader = TranscriptReader(tmp_path)
    assert reader.stats()["packs"] == len(recs)  # one pack per episode, as with put
    for i, r in enumerate(recs):
        assert reader.text(f"{i:02d}" * 16) == f"episode {i} only " * 30
        last = r.requests[0].steps[-1].calls[0]
        assert reader.messages(last.prompt)[0]["content"] == "S" * 2000 and last.pending_transcript() is None


def test_a_record_that_cannot_be_stored_fails_alone(tmp_path):
    recs = records(6)
    recs[3].requests[0].steps[0].calls[0].pending_transcript().blobs["ff" * 16] = (
        12345  # not bytes: its pack cannot be built
    )
    store = TranscriptStore(tmp_path).open()

    async def main():
        return await asyncio.gather(*(store.put_async(r) for r in recs), return_exceptions=True)

    results = asyncio.run(main())
    store.close()
    assert isinstance(results[3], TypeError)
    assert all(isinstance(n, int) and n > 0 for i, n in enumerate(results) if i != 3)
    reader = TranscriptReader(tmp_path)
    for i in (0, 1, 2, 4, 5):
        assert reader.text(f"{i:02d}" * 16) == f"episode {i} only " * 30
    with pytest.raises(TranscriptError, match="missing"):
        reader.text("03" * 16)
