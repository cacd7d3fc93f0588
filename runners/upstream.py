"""Upstream text at run time: prompts, tool docstrings, judge instructions and fault definitions
read from the pinned upstream source files, never copied into the project.

A file is found, in order, in
1. `$HARNESS_UPSTREAM_DIR/<name>@<commit>/<path>` (a local folder in that layout, e.g. a checkout
   per repository; the tests point it at the shared copies),
2. the download cache `~/.cache/harness/upstream/<name>@<commit>/<path>`,
3. `https://raw.githubusercontent.com/<owner>/<repo>/<commit>/<path>` (unless
   `HARNESS_UPSTREAM_OFFLINE=1`), stored in the cache,
and is accepted only when its sha256 equals the pin in `upstream_pins.json`.

Callers ask for a named piece of text (`py_string`, `py_fstring`, `py_docstring`, `file_text`) together with
their own fallback wording; `TextSources` records which one each prompt used, and cells record it
in their manifest ("upstream" with repository, commit, path, symbol and sha256, or "paraphrase"
with the reason), so a table can say that a cell ran on paraphrased prompts.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import json
import os
import threading
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, TypeVar

ENV_DIR = "HARNESS_UPSTREAM_DIR"
ENV_OFFLINE = "HARNESS_UPSTREAM_OFFLINE"
RAW_URL = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"
_PINS_FILE = Path(__file__).with_name("upstream_pins.json")
_T = TypeVar("_T")  # TextSources.use: the text (or value) read from upstream and its fallback


class UpstreamError(RuntimeError):
    """An upstream file exists but is not the pinned one (checksum mismatch)."""


@functools.lru_cache(maxsize=1)
def pins() -> dict[str, dict[str, Any]]:
    """{name: {"repo": owner/repo, "commit": sha, "files": {path: sha256}}}."""
    return json.loads(_PINS_FILE.read_text())


@dataclass(frozen=True)
class UpstreamFile:
    """One pinned upstream file, e.g. `UpstreamFile("tau2-bench", "src/tau2/domains/airline/tools.py")`."""

    name: str
    path: str

    @property
    def pin(self) -> dict[str, Any]:
        try:
            p = pins()[self.name]
        except KeyError:
            raise KeyError(f"unknown upstream repository '{self.name}'; pinned: {', '.join(sorted(pins()))}") from None
        if self.path not in p["files"]:
            raise KeyError(
                f"{self.name}: '{self.path}' is not a pinned file; add its sha256 to runners/upstream_pins.json"
            )
        return p

    @property
    def sha256(self) -> str:
        return self.pin["files"][self.path]

    @property
    def commit(self) -> str:
        return self.pin["commit"]

    @property
    def repo(self) -> str:
        return self.pin["repo"]

    @property
    def folder(self) -> str:
        return f"{self.name}@{self.commit}"

    @property
    def url(self) -> str:
        return RAW_URL.format(repo=self.repo, commit=self.commit, path=self.path)

    def provenance(self, symbol: str | None = None) -> dict[str, Any]:
        out = {"source": "upstream", "repo": self.repo, "commit": self.commit, "path": self.path, "sha256": self.sha256}
        if symbol:
            out["symbol"] = symbol
        return out


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "harness" / "upstream"


def _checked(data: bytes, f: UpstreamFile, where: str) -> bytes:
    got = hashlib.sha256(data).hexdigest()
    if got != f.sha256:
        raise UpstreamError(
            f"{where}: sha256 {got} does not match the pinned {f.sha256} of {f.repo}@{f.commit}:{f.path}; "
            f"point ${ENV_DIR} at the pinned checkout or delete the stale copy"
        )
    return data


@functools.lru_cache(maxsize=256)
def _load(f: UpstreamFile, env_dir: str | None, offline: bool) -> tuple[bytes | None, str]:
    """(bytes, where) or (None, why not)."""
    if env_dir:
        p = Path(env_dir).expanduser() / f.folder / f.path
        if p.is_file():
            return _checked(p.read_bytes(), f, str(p)), str(p)
    cached = _cache_root() / f.folder / f.path
    if cached.is_file():
        return _checked(cached.read_bytes(), f, str(cached)), str(cached)
    if offline:
        return None, f"not found locally (${ENV_DIR} unset or without {f.folder}/{f.path}) and ${ENV_OFFLINE}=1"
    try:
        with urllib.request.urlopen(f.url, timeout=20) as r:
            data = r.read()
    except OSError as e:
        return None, f"download of {f.url} failed ({type(e).__name__}: {e}); set ${ENV_DIR} to a local copy"
    _checked(data, f, f.url)
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(cached.suffix + ".part")
    tmp.write_bytes(data)
    tmp.replace(cached)
    return data, f.url


_READING_RECORDS: list[bool] = []


@contextlib.contextmanager
def reading_records() -> Iterator[None]:
    """While analysis rebuilds a benchmark from a finished cell's manifest (to compute its
    metrics), nothing is downloaded and nothing is said: the texts a cell ran on are in its
    manifest and records, not in what this machine can fetch today."""
    _READING_RECORDS.append(True)
    try:
        yield
    finally:
        _READING_RECORDS.pop()


def fetch(f: UpstreamFile) -> tuple[bytes | None, str]:
    """The pinned file's bytes and where they came from, or (None, the reason it is unavailable).
    A copy with the wrong checksum raises UpstreamError (a silent mismatch would change prompts)."""
    offline = bool(_READING_RECORDS) or os.environ.get(ENV_OFFLINE, "") not in ("", "0")
    return _load(f, os.environ.get(ENV_DIR) or None, offline)


def file_text(f: UpstreamFile) -> str | None:
    data, _ = fetch(f)
    return None if data is None else data.decode("utf-8")


_PARSE_LOCK = threading.RLock()
_TREES: dict[str, ast.Module] = {}


def _tree(f: UpstreamFile) -> ast.Module | None:
    """The parsed file, parsed once. Cells open in worker threads, and CPython 3.11's `ast.parse`
    is not safe to run in two threads at once ("AST constructor recursion depth mismatch"), so
    parsing is serialised."""
    src = file_text(f)
    if src is None:
        return None
    return parse_python(src)


def parse_python(src: str) -> ast.Module:
    """`ast.parse(src)`, once per distinct source, serialised across threads (see `_tree`).
    Treat the tree as read-only: it is shared."""
    key = hashlib.sha256(src.encode()).hexdigest()
    with _PARSE_LOCK:
        if key not in _TREES:
            _TREES[key] = ast.parse(src)
        return _TREES[key]


def compile_python(tree: ast.AST, filename: str, mode: str = "exec") -> Any:
    """`compile(tree, filename, mode)` under the same lock (CPython 3.11 converts ASTs with
    per-thread recursion bookkeeping that concurrent conversions corrupt)."""
    with _PARSE_LOCK:
        return compile(tree, filename, mode)  # type: ignore[call-overload]  # typeshed lists the AST subclasses, not ast.AST


def _scope(tree: ast.AST, qualname: str) -> ast.AST | None:
    """The class/function node named by a dotted path ('' = the module)."""
    node: ast.AST = tree
    for part in [p for p in qualname.split(".") if p]:
        body = getattr(node, "body", [])
        found = next(
            (
                n
                for n in body
                if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == part
            ),
            None,
        )
        if found is None:
            return None
        node = found
    return node


def _assigned(f: UpstreamFile, symbol: str) -> Iterator[ast.expr]:
    """The values assigned to `symbol` ('NAME' at module level, or 'Class.NAME'), in file order."""
    tree = _tree(f)
    if tree is None:
        return
    scope_name, _, name = symbol.rpartition(".")
    for node in getattr(_scope(tree, scope_name), "body", []):
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) and node.value is not None:
            yield node.value


def py_string(f: UpstreamFile, symbol: str) -> str | None:
    """The string constant assigned to `symbol` ('NAME' at module level, or 'Class.NAME'); implicit
    concatenation and `+` of constants are folded; anything computed at run time is not read."""
    return next((v for v in map(_fold, _assigned(f, symbol)) if v is not None), None)


def py_fstring(f: UpstreamFile, symbol: str) -> str | None:
    """The f-string assigned to `symbol` as a `str.format` template: each `{name}` field stays
    `{name}` and literal braces are doubled, so `template.format(name=...)` reproduces upstream's
    text. Only plain-name fields (and `self.<attr>`, read as `{attr}`) without conversion or format
    spec are read; anything else is None."""
    value = next((v for v in _assigned(f, symbol) if isinstance(v, ast.JoinedStr)), None)
    if value is None:
        return None
    parts = []
    for v in value.values:
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            parts.append(v.value.replace("{", "{{").replace("}", "}}"))
        elif (
            isinstance(v, ast.FormattedValue)
            and isinstance(v.value, ast.Name)
            and v.conversion == -1
            and v.format_spec is None
        ):
            parts.append("{" + v.value.id + "}")
        elif (
            isinstance(v, ast.FormattedValue)
            and isinstance(v.value, ast.Attribute)
            and isinstance(v.value.value, ast.Name)
            and v.value.value.id == "self"
            and v.conversion == -1
            and v.format_spec is None
        ):
            parts.append("{" + v.value.attr + "}")  # {self.last_action} → {last_action}
        else:
            return None
    return "".join(parts)


def _lenient_literal(node: ast.AST) -> Any:
    """A literal's value with every non-literal part (a name, a call, an f-string) read as None."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_lenient_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {_lenient_literal(k): _lenient_literal(v) for k, v in zip(node.keys, node.values) if k is not None}
    folded = _fold(node)
    return folded


def py_literal(f: UpstreamFile, symbol: str) -> Any:
    """The literal (dict/list/str/number, nested) assigned to `symbol`, e.g. a tool list or a
    messages list; parts computed at run time (names, calls, f-strings) read as None. None when
    `symbol` is not assigned in that scope."""
    value = next(_assigned(f, symbol), None)
    return None if value is None else _lenient_literal(value)


def py_messages(f: UpstreamFile, qualname: str) -> list[Any] | None:
    """The first chat-message list literal (`[{"role": ..., "content": ...}, ...]`) written inside
    the function `qualname`, e.g. one passed straight to a client call; computed parts read as None."""
    tree = _tree(f)
    node = None if tree is None else _scope(tree, qualname)
    if node is None:
        return None
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.List)
            and sub.elts
            and all(
                isinstance(e, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == "role" for k in e.keys)
                for e in sub.elts
            )
        ):
            return _lenient_literal(sub)
    return None


def py_default(f: UpstreamFile, qualname: str, arg: str) -> Any:
    """The literal default of parameter `arg` of the function `qualname` (None when absent)."""
    tree = _tree(f)
    fn = None if tree is None else _scope(tree, qualname)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    a = fn.args
    positional = a.posonlyargs + a.args
    pairs = list(zip(positional[len(positional) - len(a.defaults) :], a.defaults))
    pairs += [(k, d) for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
    for param, default in pairs:
        if param.arg == arg:
            return _lenient_literal(default)
    return None


def _fold(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = _fold(node.left), _fold(node.right)
        return None if a is None or b is None else a + b
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("strip", "lstrip", "rstrip")
        and not node.args
        and not node.keywords
    ):  # """...""".strip()
        inner = _fold(node.func.value)
        return None if inner is None else getattr(inner, node.func.attr)()
    return None


def py_function_strings(f: UpstreamFile, qualname: str) -> list[str] | None:
    """The sentences written inside a function's body (string constants with a space in them, in
    source order; implicit concatenation folded; an f-string becomes a template with `{name}` for
    each field), e.g. a correction message a function builds inline. None when unavailable."""
    tree = _tree(f)
    return None if tree is None else strings_of(tree, qualname)


def strings_of(tree: ast.AST, qualname: str) -> list[str] | None:
    """`py_function_strings` on a parsed tree."""
    node = _scope(tree, qualname)
    if node is None or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    body = node.body[1:] if ast.get_docstring(node) is not None else node.body
    out: list[str] = []
    skip: set[int] = set()
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.JoinedStr):
                parts = []
                for v in n.values:
                    skip.add(id(v))
                    if isinstance(v, ast.Constant) and isinstance(v.value, str):
                        parts.append(v.value.replace("{", "{{").replace("}", "}}"))
                    elif isinstance(v, ast.FormattedValue):
                        if isinstance(v.value, ast.Constant):
                            skip.add(id(v.value))
                        parts.append("{" + ast.unparse(v.value) + "}")
                out.append("".join(parts))
            elif isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip and " " in n.value:
                out.append(n.value)
    return [s for s in out if " " in s]


def py_docstring(f: UpstreamFile, qualname: str, *, clean: bool = True) -> str | None:
    """The docstring of a module (''), class or function ('Class.method'). `clean=True` dedents as
    `inspect.cleandoc` does (what docstring_parser and tau2's tool schemas see)."""
    tree = _tree(f)
    if tree is None:
        return None
    node = _scope(tree, qualname)
    if node is None:
        return None
    return ast.get_docstring(node, clean=clean)  # type: ignore[arg-type]


def text_sha256(text: Any) -> str:
    """sha256 of a text as sent (a non-string literal: its canonical JSON)."""
    if isinstance(text, str):
        data = text
    else:
        try:
            data = json.dumps(text, sort_keys=True, ensure_ascii=False, default=str)
        except TypeError:  # keys that do not sort (e.g. None next to strings): the literal's own order
            data = json.dumps(text, ensure_ascii=False, default=str)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


_CAPTURE: list[dict[str, tuple[str, Any]]] = []


@contextlib.contextmanager
def capture_texts() -> Iterator[dict[str, tuple[str, Any]]]:
    """Within the block, every text a `TextSources` hands out: key → (source, text), source "upstream"
    (the text read from the pinned file) or "paraphrase" (the project's fallback). Not stored anywhere:
    the provenance map (runners/provenance.py) rebuilds a cell's texts with it at read time."""
    got: dict[str, tuple[str, Any]] = {}
    _CAPTURE.append(got)
    try:
        yield got
    finally:
        _CAPTURE.remove(got)


_SAID: set[str] = set()
DOWNLOAD_FAILED: list[str] = []
"""`repo@commit:path` of every upstream file this process could not download, in order: the first is
said when it happens, the count at the end of the run (`download_failures`)."""


def download_failures() -> str | None:
    """One line for the end of a run in which more than one upstream file could not be downloaded."""
    if len(DOWNLOAD_FAILED) < 2:
        return None
    return (
        f"warning: {len(DOWNLOAD_FAILED)} upstream files were not downloaded (the first is said above; ${ENV_DIR} "
        "fixes it): their texts ran on the project's own wording, cells marked [paraphrased]; detail: each cell's "
        "manifest.json text_sources"
    )


def _say_once(message: str, once_for: str | None = None) -> None:
    """A loud console line (stderr), once per process and message (or per `once_for`: one line per file)."""
    import sys

    tag = once_for or message
    if tag not in _SAID:
        _SAID.add(tag)
        print(message, file=sys.stderr, flush=True)


class TextSources:
    """Which text each model-facing prompt of a cell came from (recorded in the manifest)."""

    def __init__(self) -> None:
        self.entries: dict[str, dict[str, Any]] = {}

    def use(self, key: str, f: UpstreamFile, text: _T | None, fallback: _T, *, symbol: str | None = None) -> _T:
        """`text` (read from `f`) when available, else `fallback`; records which one and why."""
        if text is not None:
            self.entries[key] = {**f.provenance(symbol), "text_sha256": text_sha256(text)}
            for got in _CAPTURE:
                got[key] = ("upstream", text)
            return text
        data, where = fetch(f)
        why = where if data is None else f"symbol {symbol!r} not found in {f.path}"
        if data is None and where.startswith("download of") and not _READING_RECORDS and f.url not in _SAID:
            label = f"{f.repo}@{f.commit[:7]}:{f.path}"
            DOWNLOAD_FAILED.append(label)
            if len(DOWNLOAD_FAILED) == 1:  # the first in full; the others are counted (`download_failures`)
                _say_once(
                    f"warning: {where.replace(f.url, label)}. The run uses the project's own wording for that file's "
                    "texts and marks the cell [paraphrased]; other files that fail are counted at the end.",
                    once_for=f.url,
                )
            _SAID.add(f.url)
        self.entries[key] = {
            "source": "paraphrase",
            "upstream": f.provenance(symbol),
            "reason": why,
            "text_sha256": text_sha256(fallback),
        }
        for got in _CAPTURE:
            got[key] = ("paraphrase", fallback)
        return fallback

    def annotate(self, key: str, **fields: Any) -> None:
        """Add what the manifest should say beside an entry `use` recorded (e.g. the request settings
        read from a run config); an unknown key is a programming error."""
        if key not in self.entries:
            raise KeyError(f"no text source {key!r} recorded yet (call use() first)")
        self.entries[key].update(fields)

    def string(self, key: str, f: UpstreamFile, symbol: str, fallback: str) -> str:
        return self.use(key, f, py_string(f, symbol), fallback, symbol=symbol)

    def fstring(self, key: str, f: UpstreamFile, symbol: str, fallback: str) -> str:
        """An f-string template (see `py_fstring`); `fallback` must use the same field names."""
        return self.use(key, f, py_fstring(f, symbol), fallback, symbol=symbol)

    def literal(self, key: str, f: UpstreamFile, symbol: str, fallback: Any, path: tuple[Any, ...] = ()) -> Any:
        """The part at `path` of the literal assigned to `symbol` (see `py_literal`), e.g.
        `("0", "content")` of a messages list; `fallback` when absent or not a literal there."""
        value = py_literal(f, symbol)
        try:
            for p in path:
                value = value[p]
        except (KeyError, IndexError, TypeError):
            value = None
        return self.use(key, f, value, fallback, symbol=symbol + "".join(f"[{p!r}]" for p in path))

    def docstring(self, key: str, f: UpstreamFile, qualname: str, fallback: str) -> str:
        return self.use(key, f, py_docstring(f, qualname), fallback, symbol=qualname or "<module>")

    def file(self, key: str, f: UpstreamFile, fallback: str) -> str:
        return self.use(key, f, file_text(f), fallback)

    def own(self, key: str, reason: str) -> None:
        """Record a text that is the project's own with no upstream counterpart (e.g. an unreleased
        ablation's wording); listed under `own`, not as paraphrased."""
        self.entries[key] = {"source": "project", "reason": reason}

    @property
    def paraphrased(self) -> list[str]:
        return sorted(k for k, v in self.entries.items() if v["source"] == "paraphrase")

    def as_manifest(self) -> dict[str, Any]:
        return {"prompts": dict(sorted(self.entries.items())), "paraphrased": self.paraphrased}


def _local_assigned(f: UpstreamFile, qualname: str, name: str) -> Iterator[ast.expr]:
    """The values assigned to the local `name` anywhere inside the function `qualname`, in walk order."""
    tree = _tree(f)
    fn = None if tree is None else _scope(tree, qualname)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            yield node.value


def py_local_string(f: UpstreamFile, qualname: str, name: str) -> str | None:
    """The string constant assigned to the local `name` inside the function `qualname` (folded as
    in `py_string`); None when unavailable."""
    return next((v for v in map(_fold, _local_assigned(f, qualname, name)) if v is not None), None)


def py_fstring_parts(f: UpstreamFile, qualname: str, name: str) -> list[tuple[str, str]] | None:
    """The f-string assigned to the local `name` inside the function `qualname`, as parts:
    ("text", literal) or ("field", the field's expression as `ast.unparse` writes it, e.g.
    `state['observation']`). Fill it with `fill_parts`. None when unavailable; a field with a
    conversion or format spec makes it unreadable (None)."""
    value = next((v for v in _local_assigned(f, qualname, name) if isinstance(v, ast.JoinedStr)), None)
    if value is None:
        return None
    parts: list[tuple[str, str]] = []
    for v in value.values:
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            parts.append(("text", v.value))
        elif isinstance(v, ast.FormattedValue) and v.conversion == -1 and v.format_spec is None:
            parts.append(("field", ast.unparse(v.value)))
        else:
            return None
    return parts


def fill_parts(parts: list[tuple[str, str]], values: dict[str, str]) -> str:
    """`parts` (see `py_fstring_parts`) with each field replaced by `values[expression]`."""
    missing = sorted({p for k, p in parts if k == "field" and p not in values})
    if missing:
        raise KeyError(f"no value for the upstream template field(s) {missing}")
    return "".join(p if k == "text" else str(values[p]) for k, p in parts)


def fill_fields(template: str, values: dict[str, Any]) -> str:
    """A `py_function_strings` template with each `{expression}` replaced by `values[expression]`
    (doubled literal braces undone); a field without a value raises KeyError naming it."""
    import re

    def sub(m: "re.Match[str]") -> str:
        tok = m.group(0)
        if tok in ("{{", "}}"):
            return tok[0]
        key = tok[1:-1]
        if key not in values:
            raise KeyError(f"no value for the upstream template field {key!r}")
        return str(values[key])

    return re.sub(r"\{\{|\}\}|\{[^{}]+\}", sub, template)
