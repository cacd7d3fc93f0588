"""The records' zstd level (`runner.compact_level`; xz presets before 2026-12-06): storage against
harness CPU, in one run: `python -m scripts.perf.compact_levels [--levels 1 3 6 9] [--rounds 2]`.

`scripts/perf/tail.py`'s workload (Full Context on 12-call memoryarena_math-shaped episodes,
transcripts on, the loopback endpoint at 100 ms per call), the sweep as a whole process, once per
preset and round (the order of the presets flipped every round):

- storage per episode in a cell of `--storage-episodes` (default 96) at 32 in flight, as
  `scripts/perf/inspect_compare.py` measures it (every file the run leaves / episodes), split into
  the records (`episodes.jsonl.zst`), the transcripts and the rest;
- harness CPU per call (first request to exit) at `--episodes` (default 512) / `--concurrency`
  (default 128) in flight.

Medians over the rounds; load average before and after. Results and how to read them:
scripts/perf/README.md ("Harness CPU per call").
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
from pathlib import Path

from scripts.perf.inspect_compare import (
    REPO,
    ShapedEndpoint,
    check_harness_cell,
    harness_cmd,
    harness_env,
    run_one,
    storage_kinds,
    workload,
    write_workload,
)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--levels", type=int, nargs="+", default=[1, 3, 6, 9])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--episodes", type=int, default=512)
    ap.add_argument("--concurrency", type=int, default=128)
    ap.add_argument("--storage-episodes", type=int, default=96)
    a = ap.parse_args(argv)
    n_rows = max(a.episodes, a.storage_episodes)
    w = workload(n_rows, 3000)
    root = Path(tempfile.mkdtemp(prefix="perf-compact-"))
    data_dir = write_workload(root / "data", w["rows"])
    env = harness_env()
    env["PYTHONPATH"] = str(REPO)
    storage: dict[int, list[dict[str, int]]] = {lv: [] for lv in a.levels}
    cpu: dict[int, list[float]] = {lv: [] for lv in a.levels}
    print(f"load average before {os.getloadavg()}", flush=True)
    try:
        with ShapedEndpoint(w, 0.1, 1500) as ep:
            for rnd in range(a.rounds):
                for lv in a.levels if rnd % 2 == 0 else a.levels[::-1]:
                    for kind, n, conc in (("storage", a.storage_episodes, 32), ("cpu", a.episodes, a.concurrency)):
                        out = root / f"r{rnd}-{lv}-{kind}"
                        cmd = harness_cmd(ep.base_url, data_dir, out, conc, n) + [f"runner.compact_level={lv}"]
                        r = run_one(ep, "harness", cmd, out, conc, n, env, cwd=REPO)
                        check_harness_cell(out, n)
                        if kind == "storage":  # (not told apart by size: the two counts may be equal)
                            storage[lv].append(storage_kinds(r.storage))
                        else:
                            cpu[lv].append(r.cpu_ms)
                        shutil.rmtree(out, ignore_errors=True)
                    kinds = storage[lv][-1]
                    print(
                        f"  round {rnd} level {lv}: {sum(kinds.values()) / a.storage_episodes:,.0f} B per episode "
                        f"(records {kinds.get('records', 0) / a.storage_episodes:,.0f} B), "
                        f"CPU/call {cpu[lv][-1]:.3f} ms, load {os.getloadavg()[0]:.2f}",
                        flush=True,
                    )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"load average after: {os.getloadavg()}")
    med = statistics.median
    print(f"\n{'level':>6} {'records B/ep':>13} {'transcripts B/ep':>17} {'all files B/ep':>15} {'CPU/call ms':>12}")
    for lv in a.levels:
        ep_n = a.storage_episodes
        print(
            f"{lv:>6} {med(s.get('records', 0) for s in storage[lv]) / ep_n:>13,.0f} "
            f"{med(s.get('transcripts', 0) for s in storage[lv]) / ep_n:>17,.0f} "
            f"{med(sum(s.values()) for s in storage[lv]) / ep_n:>15,.0f} {med(cpu[lv]):>12.3f}"
        )


if __name__ == "__main__":
    main()
