"""`zst_lines` yields each whole line once, newline kept, whatever the frames and reads cut."""

import random

import zstandard

from runners.records.store import Frames, zst_lines


def test_lines_across_frames_and_reads_come_back_whole(tmp_path):
    rng = random.Random(3)
    lines = [(b"x" * rng.randrange(0, 3000) + f"#{i}".encode()) + b"\n" for i in range(2000)]
    lines[5] = b"\n"  # an empty line
    path, at = tmp_path / "episodes.jsonl.zst", 0
    with open(path, "wb") as f:
        while at < len(lines):  # frames of 1 to 400 lines; 2 MB of data, so several 1 MiB reads
            n = rng.randrange(1, 400)
            f.write(zstandard.ZstdCompressor(level=1).compress(b"".join(lines[at : at + n])))
            at += n
    frames = Frames()
    assert list(zst_lines(path, frames)) == lines
    assert not frames.torn and frames.complete == path.stat().st_size


def test_a_last_line_without_newline_in_a_whole_frame_is_whole(tmp_path):
    path = tmp_path / "episodes.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(b'{"a": 1}\n{"b": 2}'))
    assert list(zst_lines(path)) == [b'{"a": 1}\n', b'{"b": 2}\n']


def test_a_frame_cut_short_yields_its_whole_lines_only(tmp_path):
    path = tmp_path / "episodes.jsonl.zst"
    whole = zstandard.ZstdCompressor().compress(b"first\n")
    cut = zstandard.ZstdCompressor(write_content_size=False).compress(b"second\nthird\n" * 2000)
    path.write_bytes(whole + cut[: len(cut) // 2])
    frames = Frames()
    got = list(zst_lines(path, frames))
    assert frames.torn and got[0] == b"first\n" and all(g.endswith(b"\n") for g in got)
    assert set(got[1:]) <= {b"second\n", b"third\n"}
