"""ALFWorld game loader over the layout `alfworld-download` produces (docs/alfworld.md §2, §6):

    <root>/json_2.1.1/<split>/<task folder>/<trial folder>/game.tw-pddl

`<root>` is the `data_dir` parameter, else `$ALFWORLD_DATA`, else `~/.cache/alfworld` (the
alfworld package default). The selection rule is AlfredTWEnv's `collect_game_files`; the task
type is the first `-` field of the task folder, so `traj_data.json` is not needed.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TASK_TYPES = (
    "pick_and_place_simple",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "look_at_obj_in_light",
    "pick_two_obj_and_place",
)
"""The six ALFWorld task types (docs/alfworld.md §2)."""

PREFIXES = (
    ("pick_and_place", "put"),
    ("pick_clean_then_place", "clean"),
    ("pick_heat_then_place", "heat"),
    ("pick_cool_then_place", "cool"),
    ("look_at_obj", "examine"),
    ("pick_two_obj", "puttwo"),
)
"""ReAct's task-type prompt prefixes → example key `v` (ReAct alfworld.ipynb; docs/alfworld.md §2, §4.1):
the first prefix the game name starts with picks the key."""

SPLITS = ("train", "valid_seen", "valid_unseen")
EXPECTED_GAMES = {"train": 3553, "valid_seen": 140, "valid_unseen": 134}  # alfworld README counts
GAME_FILE = "game.tw-pddl"
DOWNLOAD_HINT = (
    "run `alfworld-download` (it fills $ALFWORLD_DATA), or set `data_dir` / $ALFWORLD_DATA "
    "to a folder holding json_2.1.1/<split>/<task>/<trial>/game.tw-pddl"
)


@dataclass(frozen=True)
class GameRef:
    """One playable game: `id` = `<task folder>/<trial folder>` (the manifest id)."""

    id: str
    path: Path
    task_type: str
    task_key: str
    sha256: str


def task_type_of(game_id: str) -> str:
    """Task type from the task folder name's first `-` field, e.g. `pick_heat_then_place_in_recep`."""
    head = game_id.split("/")[0].split("-")[0]
    if head not in TASK_TYPES:
        raise ValueError(
            f"ALFWorld game '{game_id}': unknown task type '{head}'; expected one of {', '.join(TASK_TYPES)}"
        )
    return head


def task_key_of(game_id: str) -> str:
    """ReAct example key (`put`, `clean`, `heat`, `cool`, `examine`, `puttwo`) of a game name."""
    name = game_id.split("/")[0]
    for prefix, key in PREFIXES:
        if name.startswith(prefix):
            return key
    raise ValueError(
        f"ALFWorld game '{game_id}': no ReAct prefix matches; expected a name starting with one of "
        f"{', '.join(p for p, _ in PREFIXES)}"
    )


def resolve_root(data_dir: str | os.PathLike[str] | None) -> Path:
    """The data root: `data_dir`, else $ALFWORLD_DATA, else ~/.cache/alfworld. The project ships
    no ALFWorld games of its own, so `data_dir: fixtures` (the offline demo's setting for every
    benchmark) falls back to $ALFWORLD_DATA like null does."""
    if str(data_dir) == "fixtures":
        data_dir = None
    raw = data_dir or os.environ.get("ALFWORLD_DATA") or "~/.cache/alfworld"
    return Path(raw).expanduser()


def split_dir(root: Path, split: str) -> Path:
    if split not in SPLITS:
        raise ValueError(f"unknown ALFWorld split '{split}'; choose one of {', '.join(SPLITS)}")
    d = root / "json_2.1.1" / split
    if not d.is_dir():
        raise FileNotFoundError(f"ALFWorld split folder {d} not found: {DOWNLOAD_HINT}")
    return d


def read_game(path: Path) -> dict[str, Any]:
    """The game JSON (`pddl_domain`, `grammar`, `pddl_problem`, `solvable`, `walkthrough`)."""
    try:
        from runners.inputs import loads

        game = loads(
            path.read_bytes(), path
        )  # lone surrogates replaced (noted for the manifest); bad bytes name the line
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: not a readable game.tw-pddl JSON ({e}); re-download the data") from e
    missing = [k for k in ("pddl_domain", "grammar", "pddl_problem") if k not in game]
    if missing:
        raise ValueError(f"{path}: game file lacks {missing}; re-download the data")
    return game


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def discover(root: Path, split: str, task_types: list[str] | None = None) -> list[GameRef]:
    """Games of a split in sorted id order, by AlfredTWEnv's selection rule (docs/alfworld.md §2):
    skip task folders named `movable`/`Sliced` (tested on the folder name only — harness choice,
    so a root path containing those words drops nothing), trials without game.tw-pddl, games not
    `solvable`, and task types not selected."""
    wanted = set(task_types or TASK_TYPES)
    unknown = wanted - set(TASK_TYPES)
    if unknown:
        raise ValueError(f"unknown ALFWorld task types {sorted(unknown)}; choose from {', '.join(TASK_TYPES)}")
    base = split_dir(root, split)
    games = []
    for task in sorted(p for p in base.iterdir() if p.is_dir()):
        if "movable" in task.name or "Sliced" in task.name:
            continue
        ttype = task.name.split("-")[0]
        if ttype not in wanted:
            continue
        for trial in sorted(p for p in task.iterdir() if p.is_dir()):
            f = trial / GAME_FILE
            if not f.is_file() or not read_game(f).get("solvable", False):
                continue
            gid = f"{task.name}/{trial.name}"
            games.append(
                GameRef(id=gid, path=f, task_type=task_type_of(gid), task_key=task_key_of(gid), sha256=_sha256(f))
            )
    return games


def verify(games: list[GameRef], manifest: Path, *, split: str, task_types: list[str] | None = None) -> dict[str, Any]:
    """Check ids and sha256 against a manifest (a JSON list of {id, task_type, sha256_v211,
    sha256_v212}); raise naming the fix on any difference. Returns the format counts."""
    try:
        rows = json.loads(manifest.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"ALFWorld manifest {manifest} unreadable ({e}); fix the file or set verify='off'") from e
    wanted = set(task_types or TASK_TYPES)
    expected = {r["id"]: r for r in rows if task_type_of(r["id"]) in wanted}
    found = {g.id: g for g in games}
    missing, extra = sorted(set(expected) - set(found)), sorted(set(found) - set(expected))
    if missing or extra:
        raise ValueError(
            f"ALFWorld {split}: {len(missing)} manifest games missing (e.g. {missing[:2]}), "
            f"{len(extra)} games not in the manifest (e.g. {extra[:2]}) under {manifest.parent}: {DOWNLOAD_HINT}"
        )
    formats = {"v2.1.1": 0, "v2.1.2+": 0}
    for gid, row in expected.items():
        digest = found[gid].sha256
        if digest == row.get("sha256_v212"):
            formats["v2.1.2+"] += 1
        elif digest == row.get("sha256_v211"):
            formats["v2.1.1"] += 1
        else:
            raise ValueError(
                f"ALFWorld game {gid}: sha256 {digest[:12]}… matches neither manifest checksum; "
                f"the file is corrupt or edited: {DOWNLOAD_HINT}"
            )
    return formats


def load_games(
    data_dir: str | os.PathLike[str] | None = None,
    *,
    split: str = "valid_unseen",
    task_types: list[str] | None = None,
    verify_mode: str = "auto",
    manifest: str | os.PathLike[str] | None = None,
) -> tuple[list[GameRef], dict[str, Any]]:
    """Discover and check a split. `verify_mode`: `auto` = check against the manifest if one is
    present (`manifest`, else `<root>/manifest_<split>.json`), else check the game count;
    `strict` = a manifest is required; `off` = no check. Returns (games, provenance)."""
    if verify_mode not in ("auto", "strict", "off"):
        raise ValueError(f"verify must be auto, strict or off, got '{verify_mode}'")
    root = resolve_root(data_dir)
    games = discover(root, split, task_types)
    if not games:
        raise FileNotFoundError(f"no solvable ALFWorld games under {split_dir(root, split)}: {DOWNLOAD_HINT}")
    man = Path(manifest).expanduser() if manifest else root / f"manifest_{split}.json"
    prov: dict[str, Any] = {
        "root": str(root),
        "split": split,
        "n_games": len(games),
        "verify": verify_mode,
        "manifest": None,
        "formats": None,
    }
    if verify_mode == "off":
        return games, prov
    if man.is_file():
        prov["formats"] = verify(games, man, split=split, task_types=task_types)
        prov["manifest"] = str(man)
    elif verify_mode == "strict":
        raise FileNotFoundError(f"ALFWorld manifest {man} not found; pass `manifest=PATH` or set verify='auto'")
    elif not task_types and split in EXPECTED_GAMES and len(games) != EXPECTED_GAMES[split]:
        raise ValueError(
            f"ALFWorld {split}: found {len(games)} games, expected {EXPECTED_GAMES[split]}: {DOWNLOAD_HINT}"
        )
    return games, prov
