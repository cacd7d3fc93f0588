"""`python -m tests.runners.count_reads OVERRIDES...`: the sweep CLI as users run it, counting the
finished records read back from disk through `runners.records.store.stream_cell_lines` (what
`stream_cell`, the tables, `runners.aggregate` and the report read through); prints
`records read back: N` on stderr at exit."""

from __future__ import annotations

import atexit
import sys
from pathlib import Path
from typing import Any, Iterator

from runners.records import store

READ = [0]
_stream_cell_lines = store.stream_cell_lines


def counted_stream_cell_lines(
    cell_dir: Path,
) -> tuple[dict[str, Any], Iterator[tuple[dict[str, Any], bytes | None]], list[str]]:
    manifest, records, notes = _stream_cell_lines(cell_dir)

    def counted() -> Iterator[tuple[dict[str, Any], bytes | None]]:
        for pair in records:
            READ[0] += 1
            yield pair

    return manifest, counted(), notes


store.stream_cell_lines = counted_stream_cell_lines  # before runners.analysis imports it
atexit.register(lambda: print(f"records read back: {READ[0]}", file=sys.stderr))

if __name__ == "__main__":
    from runners.sweep import main

    main()
