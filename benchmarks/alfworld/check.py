"""ALFWorld download-layout check, as upstream PoS's data preparation checks it
(scripts/prepare_benchmarks.py `check_data`): 134 `game.tw-pddl` files under
json_2.1.1/valid_unseen and the ALFRED logic files (`logic/alfred.pddl`, `logic/alfred.twl2`,
in the data root or, as upstream copies them from, the installed alfworld package); then the
harness loader's own check (selection rule, and the sha256 manifest when present).

    python -m benchmarks.alfworld.check [--data DIR] [--split valid_unseen]

Prints one JSON report; exit status 0 iff the layout is complete."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.alfworld.data import EXPECTED_GAMES, GAME_FILE, load_games, resolve_root

LOGIC = ("alfred.pddl", "alfred.twl2")


def package_logic() -> Path | None:
    """The folder of the logic files the alfworld package ships (`alfworld/data/`, what
    `alfworld.info.ALFRED_PDDL_PATH` points at), found without importing alfworld."""
    try:
        spec = importlib.util.find_spec("alfworld")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "data"
    return folder if all((folder / n).is_file() for n in LOGIC) else None


def check(data_dir: str | None, split: str = "valid_unseen") -> dict[str, Any]:
    root = resolve_root(data_dir)
    problems: list[str] = []
    games = list((root / "json_2.1.1" / split).rglob(GAME_FILE)) if (root / "json_2.1.1" / split).is_dir() else []
    want = EXPECTED_GAMES.get(split)
    if want is not None and len(games) != want:
        problems.append(f"expected {want} {GAME_FILE} files under {root / 'json_2.1.1' / split}, found {len(games)}")
    logic = root / "logic" if all((root / "logic" / n).is_file() for n in LOGIC) else package_logic()
    if logic is None:
        problems.append(
            f"ALFRED logic files {list(LOGIC)} found neither under {root / 'logic'} nor in the alfworld package"
        )
    report: dict[str, Any] = {
        "root": str(root),
        "split": split,
        "game_files": len(games),
        "logic": str(logic) if logic else None,
    }
    try:
        loaded, prov = load_games(str(root), split=split)
        report.update(playable=len(loaded), manifest=prov["manifest"], formats=prov["formats"])
    except (OSError, ValueError) as e:
        problems.append(str(e))
    report["problems"] = problems
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None, help="data root holding json_2.1.1/ (default: $ALFWORLD_DATA)")
    ap.add_argument("--split", default="valid_unseen")
    args = ap.parse_args(argv)
    report = check(args.data, args.split)
    print(json.dumps(report, indent=1))
    return 0 if not report["problems"] else 1


if __name__ == "__main__":
    sys.exit(main())
