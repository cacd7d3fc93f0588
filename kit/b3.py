"""FlowState App. B.3 "Runtime Prompt Templates" as a text source (docs/texts.md, docs/flowstate.md §2.1).

The paper is the upstream of FlowState's own prompts and of the layouts it gives its baselines. Its
templates are read at run time from a transcription of B.3 (never copied into the project):
1. the file named by `$HARNESS_FLOWSTATE_B3`, else
2. `$HARNESS_UPSTREAM_DIR/paper-text/flowstate_b3.txt`, or `paper-text/flowstate_b3.txt` beside
   `$HARNESS_UPSTREAM_DIR` (a data folder holding both the upstream sources and the paper text).
Without either (or with `$HARNESS_FLOWSTATE_B3=off`), every method uses the project's own wording and its
cell is marked `[paraphrased]`.

Reading the file (`parse`): the templates are found by their method headings, each split at its
"System Instruction" / "Input Prompt" lines; doubled line breaks (an artefact of the HTML text
extraction: every line followed by an empty one) are collapsed to single ones; everything else is
kept as written, `{name}` fields being the placeholders the paper defines. Known artefacts of the
extraction (headings the HTML dropped words from, "System" for "Memory System" and "State
Tracking +" for "State Tracking + Memory") are accepted as those headings. The fence around FlowState's
output example, which the extraction wrote with typographic quotes (three U+2018), is restored to
the code fence the paper shows (three backticks): the quotes are the HTML converter's rendering of
backquotes, and a model told "no code fences" should see the fence the authors wrote.
`$HARNESS_FLOWSTATE_B3_FENCE=as_written` keeps the quotes (the literal text). The manifest records
the file's path and sha256, the fence reading and each template's text sha256 (`record`).

Filling (`fill`): each `{name}` field is replaced by its value; a field written inside JSON quotes
(`"{prior_query}"`) gets the value JSON-escaped so the block stays valid JSON. FlowState's
`agent_status` (`fill_flowstate_input`) repeats the paper's one-entry examples once per item: the
innermost `{...}` entry around a field is the unit, items are joined by `,\\n`, and the paper's
`,\\n...` after an entry (its "additional entries" ellipsis) is replaced by them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

ENV_FILE = "HARNESS_FLOWSTATE_B3"
UNDER_UPSTREAM_DIR = "paper-text/flowstate_b3.txt"
ENV_FENCE = "HARNESS_FLOWSTATE_B3_FENCE"
FENCES = ("backticks", "as_written")
TYPOGRAPHIC_FENCE, CODE_FENCE = "\u2018" * 3, "`" * 3

# template key → the headings that open it (the first is the paper's; the others the extraction's artefacts)
TEMPLATES: dict[str, tuple[str, ...]] = {
    "flowstate": ("FlowState",),
    "full_context": ("Full Context",),
    "memory": ("Memory System", "System"),
    "state_tracking": ("State Tracking",),
    "state_tracking_memory": ("State Tracking + Memory", "State Tracking + Memory System", "State Tracking +"),
}
SYSTEM_LINE, INPUT_LINE = "System Instruction", "Input Prompt"
FIELD = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
ELLIPSIS = ",\n..."


class B3Error(ValueError):
    """The B.3 file cannot be read as the five templates."""


@dataclass(frozen=True)
class Template:
    system: str
    input: str


@dataclass(frozen=True)
class B3:
    path: str
    sha256: str
    templates: dict[str, Template] = field(default_factory=dict)

    def system(self, key: str) -> str:
        return self.templates[key].system

    def input(self, key: str) -> str:
        return self.templates[key].input


def collapse(text: str) -> str:
    """The extraction's doubled line breaks collapsed (CRLF read as LF)."""
    return text.replace("\r\n", "\n").replace("\n\n", "\n")


def parse(text: str, *, path: str = "<text>") -> B3:
    """The five templates of a B.3 transcription (see the module docstring)."""
    lines = collapse(text).split("\n")
    heads = [i for i in range(len(lines) - 1) if lines[i + 1].strip() == SYSTEM_LINE and lines[i].strip()]
    found: dict[str, Template] = {}
    for n, i in enumerate(heads):
        heading = lines[i].strip()
        key = next((k for k, names in TEMPLATES.items() if heading in names and k not in found), None)
        if key is None:
            raise B3Error(
                f"error: {path}: the heading {heading!r} (line before {SYSTEM_LINE!r}) names none of B.3's templates "
                f"({', '.join(v[0] for v in TEMPLATES.values())}). Fix: point ${ENV_FILE} at a transcription of "
                f"FlowState App. B.3 with one heading line per template."
            )
        end = heads[n + 1] if n + 1 < len(heads) else len(lines)
        body = lines[i + 2 : end]
        if INPUT_LINE not in [b.strip() for b in body]:
            raise B3Error(
                f"error: {path}: template {heading!r} has no {INPUT_LINE!r} line. Fix: restore the line that "
                f"separates its system instruction from its input prompt."
            )
        cut = [b.strip() for b in body].index(INPUT_LINE)
        system, user = "\n".join(body[:cut]).strip("\n"), "\n".join(body[cut + 1 :]).strip("\n")
        found[key] = Template(system=system, input=user)
    missing = [TEMPLATES[k][0] for k in TEMPLATES if k not in found]
    if missing:
        raise B3Error(
            f"error: {path}: no template for {', '.join(missing)}. Fix: point ${ENV_FILE} at a complete "
            f"transcription of FlowState App. B.3 (five templates, each with {SYSTEM_LINE!r} and {INPUT_LINE!r})."
        )
    return B3(path=path, sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(), templates=found)


def locate() -> tuple[Path | None, str]:
    """(the B.3 file, where it was found) or (None, why there is none)."""
    env = os.environ.get(ENV_FILE)
    if env == "off":
        return None, f"${ENV_FILE}=off: the project's own wording"
    if env:
        p = Path(env).expanduser()
        if not p.is_file():
            raise B3Error(
                f"error: ${ENV_FILE}={env} is not a file. Fix: point it at the B.3 transcription, or unset it "
                f"to run on the project's own wording (marked [paraphrased])."
            )
        return p, f"${ENV_FILE}"
    up = os.environ.get("HARNESS_UPSTREAM_DIR")
    if up and (Path(up).expanduser() / UNDER_UPSTREAM_DIR).is_file():
        return Path(up).expanduser() / UNDER_UPSTREAM_DIR, f"$HARNESS_UPSTREAM_DIR/{UNDER_UPSTREAM_DIR}"
    if up and (Path(up).expanduser().parent / UNDER_UPSTREAM_DIR).is_file():  # paper-text/ beside the sources
        return Path(up).expanduser().parent / UNDER_UPSTREAM_DIR, f"$HARNESS_UPSTREAM_DIR/../{UNDER_UPSTREAM_DIR}"
    return None, (
        f"FlowState App. B.3 not configured (${ENV_FILE} unset and no {UNDER_UPSTREAM_DIR} under or beside "
        f"$HARNESS_UPSTREAM_DIR): the project's own wording"
    )


_CACHE: dict[tuple[str, float, str], B3] = {}


def load() -> tuple[B3 | None, str]:
    """The configured B.3 templates (parsed once per file version) or (None, why not)."""
    p, where = locate()
    if p is None:
        return None, where
    fence = fence_reading()
    key = (str(p.resolve()), p.stat().st_mtime, fence)
    if key not in _CACHE:
        b3 = parse(p.read_text(encoding="utf-8"), path=str(p))
        if fence == "backticks":
            b3 = replace(
                b3,
                templates={
                    k: Template(*(part.replace(TYPOGRAPHIC_FENCE, CODE_FENCE) for part in (t.system, t.input)))
                    for k, t in b3.templates.items()
                },
            )
        _CACHE[key] = b3
    return _CACHE[key], where


def fence_reading() -> str:
    """How the extraction's typographic fence is read (`$HARNESS_FLOWSTATE_B3_FENCE`, default backticks)."""
    value = os.environ.get(ENV_FENCE) or "backticks"
    if value not in FENCES:
        raise B3Error(
            f"error: ${ENV_FENCE}={value!r} is not one of {', '.join(FENCES)}. Fix: unset it (the paper's code fence) "
            "or set it to as_written (the transcription's typographic quotes)."
        )
    return value


def record(sources: Any, key: str, *, fallback: str = "", fallback_reason: str | None = None) -> B3 | None:
    """Record template `key`'s source in `sources` (a runners.upstream.TextSources) under
    `b3.<key>.system` / `b3.<key>.input`; returns the templates, or None (paraphrased: `fallback`, the
    project's wording of the method's fixed rules, is what its `text_sha256` fingerprints)."""
    b3, where = load()
    for part in ("system", "input"):
        name = f"b3.{key}.{part}"
        if b3 is None:
            sources.entries[name] = {
                "source": "paraphrase",
                "reason": fallback_reason or where,
                "text_sha256": hashlib.sha256(f"{name}\n{fallback}".encode("utf-8")).hexdigest(),
            }
        else:
            text = getattr(b3.templates[key], part)
            sources.entries[name] = {
                "source": "paper",
                "paper": "FlowState arXiv 2609.34565 App. B.3",
                "path": b3.path,
                "found_via": where,
                "sha256": b3.sha256,
                "fence": fence_reading(),
                "text_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            }
    return b3


# ---------------------------------------------------------------------------- filling


def _quoted(template: str, start: int, end: int) -> bool:
    return start > 0 and template[start - 1] == '"' and end < len(template) and template[end] == '"'


def fill(template: str, values: dict[str, Any]) -> str:
    """`template` with each `{name}` replaced by `values[name]` (JSON-escaped inside quotes).
    A field without a value raises KeyError naming it; text that is not a field (JSON braces) stays."""
    out, pos = [], 0
    for m in FIELD.finditer(template):
        name = m.group(1)
        if name not in values:
            raise KeyError(f"no value for the B.3 field {{{name}}}")
        value = values[name]
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        if _quoted(template, m.start(), m.end()):
            text = json.dumps(text, ensure_ascii=False)[1:-1]
        out += [template[pos : m.start()], text]
        pos = m.end()
    out.append(template[pos:])
    return "".join(out)


def entry_span(template: str, name: str) -> tuple[int, int]:
    """(start, end) of the innermost `{...}` entry around the field `{name}` (fields are not braces)."""
    at = template.index("{" + name + "}")
    stack: list[int] = []
    i = 0
    while i < len(template):
        m = FIELD.match(template, i)
        if m:
            i = m.end()
            continue
        c = template[i]
        if c == "{":
            stack.append(i)
        elif c == "}" and stack:
            s = stack.pop()
            if s < at < i:
                return s, i + 1
        i += 1
    raise B3Error(
        f"error: the B.3 field {{{name}}} is not inside a {{...}} entry. Fix: use an unaltered B.3 transcription."
    )


def repeat(template: str, name: str, items: list[Any], render: Callable[[str, Any], str]) -> tuple[str, str, str]:
    """Split `template` around the entry holding `{name}`: (text before, the entries rendered one per
    item and joined by `,\\n`, text after); the paper's `,\\n...` after the entry is consumed. With no
    items the list is written `[]`."""
    s, e = entry_span(template, name)
    unit = template[s:e]
    tail = e + len(ELLIPSIS) if template.startswith(ELLIPSIS, e) else e
    before, after = template[:s], template[tail:]
    if not items and before.endswith("[\n") and after.startswith("\n]"):
        before, after = before[:-1], after[1:]
    return before, ",\n".join(render(unit, it) for it in items), after


def fill_flowstate_input(
    template: str, *, index: list[dict[str, Any]], active: list[dict[str, Any]], values: dict[str, Any]
) -> str:
    """FlowState's input prompt: the Historical State Index entries (`index`: {query_number,
    user_query, states: [{state_id, summary}]}), the Active State entries
    (`active`: {state_id, type, related_states: [{state_id, rel}], summary, value}) and the plain
    fields (`values`: observation, query)."""

    def state(unit: str, s: dict[str, Any]) -> str:
        return fill(unit, {"historical_state_id": s["state_id"], "historical_state_summary": s.get("summary") or ""})

    def request(unit: str, r: dict[str, Any]) -> str:
        b, mid, a = repeat(unit, "historical_state_id", r["states"], state)
        head = fill(b, {"prior_query": r["user_query"], "prior_query_id": r["query_number"]})
        if r.get("agent_response") is not None:  # switch persist_agent_message (not in B.3): a line after query_id's
            n = b[: b.find("{prior_query_id}")].count("\n") + 1
            lines = head.split("\n")
            lines.insert(n, '"agent_response": ' + json.dumps(r["agent_response"], ensure_ascii=False) + ",")
            head = "\n".join(lines)
        return head + mid + fill(a, {})

    def related(unit: str, r: dict[str, Any]) -> str:
        return fill(unit, {"related_state_id": r["state_id"], "relation": r["rel"]})

    def node(unit: str, n: dict[str, Any]) -> str:
        b, mid, a = repeat(unit, "related_state_id", n.get("related_states") or [], related)
        vals = {
            "active_state_id": n["state_id"],
            "state_type": n["type"],
            "active_state_summary": n.get("summary") or "",
            "state_value_json": json.dumps(n.get("value"), ensure_ascii=False, default=str),
        }
        return fill(b, vals) + mid + fill(a, vals)

    i_before, i_mid, i_after = repeat(template, "prior_query", index, request)
    a_before, a_mid, a_after = repeat(i_after, "active_state_id", active, node)
    head = fill(i_before, values)
    return head + i_mid + fill(a_before, values) + a_mid + fill(a_after, values)


def entries(key: str, fallback: str = "") -> dict[str, Any]:
    """The manifest entries (`text_sources.prompts` items) of template `key`'s source."""
    from runners.upstream import TextSources

    sources = TextSources()
    record(sources, key, fallback=fallback)
    return sources.entries


def messages(b3: B3, key: str, *, system: dict[str, Any], user: dict[str, Any]) -> list[dict[str, str]]:
    """Template `key`'s system instruction and input prompt, filled (one system, one user message)."""
    return [
        {"role": "system", "content": fill(b3.system(key), system)},
        {"role": "user", "content": fill(b3.input(key), user)},
    ]


def manifest(key: str, extra: dict[str, Any] | None = None, *, fallback: str | None = None) -> dict[str, Any]:
    """A method's `text_sources`: template `key`'s B.3 source plus `extra` entries (other texts).
    `fallback`: the project's fixed wording the method falls back to (default: the shared ReAct
    rules and protocol)."""
    if fallback is None:
        from kit.prompting import REACT_RULES
        from kit.react import ReactProtocol

        fallback = f"{REACT_RULES}\n{ReactProtocol().description()}"
    e = {**entries(key, fallback), **(extra or {})}
    return {
        "prompts": dict(sorted(e.items())),
        "paraphrased": sorted(k for k, v in e.items() if v.get("source") == "paraphrase"),
    }
