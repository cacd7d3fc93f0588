"""`python -m benchmarks.rca100.download` against a real HTTP server on 127.0.0.1 serving the
synthetic fixture in the bucket's layout: files fetched, reused on a rerun, keys validated."""

from __future__ import annotations

import functools
import json
import shutil
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

from benchmarks.rca100.data import CASE_FILES
from benchmarks.rca100.download import base_url, main


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_download_then_validate(rca_root, tmp_path, capsys):
    handler = functools.partial(Quiet, directory=str(rca_root))
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}/"
        out = tmp_path / "rca"
        out.mkdir()
        shutil.copy(rca_root / "manifest.txt", out / "manifest.txt")
        assert main(["--out", str(out), "--base-url", url]) == 2  # no answer keys yet: named, nothing fetched
        assert not (out / "cases").exists()
        assert main(["--out", str(out), "--base-url", url, "--answer-key-dir", str(rca_root / "answer_key")]) == 0
        report = json.loads(capsys.readouterr().out)
        ids = (rca_root / "manifest.txt").read_text().split()
        assert report["files_written"] == len(ids) * len(CASE_FILES) and not report["validation"]["violations"]
        for cid in ids:
            for name in CASE_FILES:
                assert (out / "cases" / cid / name).read_bytes() == (rca_root / "cases" / cid / name).read_bytes()
        assert main(["--out", str(out), "--base-url", url]) == 0
        assert json.loads(capsys.readouterr().out)["files_written"] == 0  # finished files are reused
    finally:
        srv.shutdown()
    assert base_url().startswith("https://") and base_url().endswith(
        "/v1.1/"
    )  # upstream's RCA_URL, read from the pinned script
