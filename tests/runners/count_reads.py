"""`python -m tests.runners.count_reads OVERRIDES...`: the sweep CLI as users run it, counting the
finished records read back from disk through `runners.records.store.stream_cell` (what the tables,
`runners.aggregate` and the report read); prints `records read back: N` on stderr at exit."""

from __future__ import annotations

import atexit
import sys
from pathlib import Path
from typing import Any, Iterator

from runners.records import store

READ = [0]
_stream_cell = store.stream_cell


def counted_stream_cell(cell_dir: Path) -> tuple[dict[str, Any], Iterator[dict[str, Any]], list[str]]:
    manifest, records, notes = _stream_cell(cell_dir)

    def counted() -> Iterator[dict[str, Any]]:
        for r in records:
            READ[0] += 1
            yield r

    return manifest, counted(), notes


store.stream_cell = counted_stream_cell  # before runners.analysis imports it
atexit.register(lambda: print(f"records read back: {READ[0]}", file=sys.stderr))

if __name__ == "__main__":
    from runners.sweep import main

    main()
