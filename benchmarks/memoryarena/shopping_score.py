"""Bundled Web Shopping scoring (docs/memoryarena.md §5.3): the run-time exact-ASIN step match and
upstream's post-hoc soft attribute reward (`compute_reward.py`). Pure functions; fractions.

Which of the two the paper's PS is remains unstated [uncertain]. We report both: `PS` = mean
per-bundle fraction of exact step matches (FlowState B.5 reads PS as correctly completed
subtasks), `soft_reward` = mean soft reward over steps (upstream `average_reward`; the
MemoryLake audit suggests the MemoryArena paper's PS is this one [inferred])."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from runners.api import Backbone, Message

CATEGORY_SEP = " › "  # U+203A, WebShop `product_category`


def step_match(bought: str | None, target: str) -> bool:
    """Run-time step match: the purchased ASIN equals the target (case-insensitive)."""
    return bool(bought) and str(bought).strip().upper() == str(target).strip().upper()


def normalize_for_match(text: str | None) -> str:
    """Upstream `reward_helpers.normalize_for_match`: lower-case, `-` and `/` → space, runs of
    whitespace collapsed, stripped."""
    return re.sub(r"\s+", " ", re.sub(r"[-/]", " ", (text or "").lower())).strip()


def _tokens(name: str | None) -> set[str]:
    # upstream `reward_helpers.tokenize`: `[a-z0-9]+` runs of the normalised name
    return set(re.findall(r"[a-z0-9]+", normalize_for_match(name)))


def name_overlap(target_name: str | None, bought_name: str | None) -> float:
    """|target tokens ∩ bought tokens| / |target tokens| (0 when the target has no tokens)."""
    t = _tokens(target_name)
    return len(t & _tokens(bought_name)) / len(t) if t else 0.0


def category_overlap(target_cat: str | None, bought_cat: str | None) -> float:
    """Share of the target's ` › `-separated category segments also in the bought item's."""
    seg = lambda c: {s.strip().lower() for s in (c or "").split(CATEGORY_SEP.strip()) if s.strip()}  # noqa: E731
    t, b = seg(target_cat), seg(bought_cat)  # sets, as upstream `category_similarity`
    return len(t & b) / len(t) if t else 0.0


def r_type(name: float, cat: float) -> float:
    """Type reward from name and category overlap: 1.0 if cat ≥ 0.5 or name > 0.2, else 0.5;
    then 0.1 if name < 0.1; 0 if name == 0 (the later rules override)."""
    r = 1.0 if (cat >= 0.5 or name > 0.2) else 0.5
    if name < 0.1:
        r = 0.1
    if name == 0:
        r = 0.0
    return r


def substring_matches(name: str | None, attributes: Sequence[str]) -> list[bool]:
    """`--no-llm` attribute test: the normalised attribute is a substring of the normalised name."""
    n = normalize_for_match(name)
    return [bool(normalize_for_match(a)) and normalize_for_match(a) in n for a in attributes]


def soft_reward(
    *,
    bought: Mapping[str, Any] | None,
    bought_asin: str | None,
    target_asin: str,
    target: Mapping[str, Any] | None,
    attributes: Sequence[str],
    attr_matches: Sequence[bool] | None = None,
    price_ok: bool | None = None,
) -> float:
    """Post-hoc reward of one step. 1.0 on ASIN match (overrides everything); 0.0 if nothing was
    bought; else r_type × (attr_matches + r_price) / (len(attributes) + [price constraint]).
    `bought`/`target` are catalogue records (`name`, `product_category`); an unknown bought
    product scores 0. `price_ok` None = no price constraint (every HF row)."""
    if step_match(bought_asin, target_asin):
        return 1.0
    if not bought_asin or bought is None:
        return 0.0
    target = target or {}
    name = name_overlap(target.get("name"), bought.get("name"))
    cat = category_overlap(target.get("product_category"), bought.get("product_category"))
    matches = attr_matches if attr_matches is not None else substring_matches(bought.get("name"), attributes)
    den = len(attributes) + (1 if price_ok is not None else 0)
    if den == 0:
        return 0.0
    return r_type(name, cat) * (sum(map(bool, matches)) + (1.0 if price_ok else 0.0)) / den


def aggregate(bundles: Sequence[Sequence[Mapping[str, Any]]]) -> dict[str, float | None]:
    """Bundles of per-step dicts {match: bool, reward: float}. SR = all steps matched;
    PS = mean per-bundle fraction matched; soft_reward = mean reward over all steps run
    (upstream `average_reward`); PS_soft = mean per-bundle mean reward; SR_soft = all steps
    reward 1.0 (upstream `item_success_rate`); average_success_rate = mean over step positions of
    the share of steps with reward 1.0 at that position (upstream `average_success_rate`)."""
    bundles = [b for b in bundles if len(b)]
    if not bundles:
        return {
            "SR": None,
            "PS": None,
            "soft_reward": None,
            "PS_soft": None,
            "SR_soft": None,
            "average_success_rate": None,
        }
    steps = [s for b in bundles for s in b]
    n = len(bundles)
    positions = [[b[i]["reward"] == 1.0 for b in bundles if i < len(b)] for i in range(max(map(len, bundles)))]
    return {
        "average_success_rate": sum(sum(p) / len(p) for p in positions) / len(positions),
        "SR": sum(all(s["match"] for s in b) for b in bundles) / n,
        "PS": sum(sum(bool(s["match"]) for s in b) / len(b) for b in bundles) / n,
        "soft_reward": sum(s["reward"] for s in steps) / len(steps),
        "PS_soft": sum(sum(s["reward"] for s in b) / len(b) for b in bundles) / n,
        "SR_soft": sum(all(s["reward"] == 1.0 for s in b) for b in bundles) / n,
    }


# ----------------------------------------------------------------------------- LLM attribute matching
ATTR_SYSTEM = "You check which attributes a product has, judging from its name. Reply with JSON only."


def attribute_messages(product_name: str, attributes: Sequence[str]) -> list[Message]:
    user = (
        f"Product name: {product_name}\n"
        f"Attributes: {json.dumps(list(attributes), ensure_ascii=False)}\n"
        "For each attribute, decide whether the product has it. Reply with JSON of the form "
        '{"matches": [{"attribute": "<attribute>", "has_attribute": true or false}]}, one entry per attribute.'
    )
    return [{"role": "system", "content": ATTR_SYSTEM}, {"role": "user", "content": user}]


def parse_attribute_reply(text: str, attributes: Sequence[str]) -> tuple[list[bool], str | None]:
    """Matches per attribute from the judge's JSON (total: bad JSON → all False plus an error)."""
    m = re.search(r"\{.*\}", text or "", re.DOTALL)
    try:
        data = json.loads(m.group(0)) if m else None
        items = data.get("matches") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise ValueError("no 'matches' list")
    except (ValueError, AttributeError) as e:
        return [False] * len(attributes), f"bad judge reply: {str(e)[:120]}"
    # upstream AttributeJudge: entries need a string `attribute` and a JSON boolean `has_attribute`;
    # attributes are matched after `normalize_for_match`; only `true` counts ("false" strings do not)
    has = {
        normalize_for_match(i["attribute"]): i["has_attribute"]
        for i in items
        if isinstance(i, dict) and isinstance(i.get("attribute"), str) and isinstance(i.get("has_attribute"), bool)
    }
    return [has.get(normalize_for_match(a)) is True for a in attributes], None


JUDGE_ATTEMPTS = 3  # upstream AttributeJudge max_retries: a reply without a `matches` list is asked again


async def llm_attribute_matches(
    backbone: Backbone, product_name: str, attributes: Sequence[str], **sampling: Any
) -> tuple[list[bool], str, str | None]:
    """Upstream's LLM attribute check (default gpt-4o, temperature 0), role `judge`; up to
    `JUDGE_ATTEMPTS` calls until the reply parses, else no attribute matches (upstream)."""
    matches, text, err = [False] * len(attributes), "", None
    for attempt in range(JUDGE_ATTEMPTS):
        c = await backbone.complete(
            attribute_messages(product_name, attributes), role="judge", attempt=attempt, **sampling
        )
        text = c.text
        matches, err = parse_attribute_reply(text, attributes)
        if err is None:
            break
    return matches, text, err
