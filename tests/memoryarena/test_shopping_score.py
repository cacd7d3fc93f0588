"""Shopping scorers (docs/memoryarena.md §5.3) on hand-computed cases."""

import pytest

from benchmarks.memoryarena import shopping_score


def test_r_type_thresholds():
    assert shopping_score.r_type(0.25, 0.0) == 1.0  # name > 0.2
    assert shopping_score.r_type(0.2, 0.5) == 1.0  # cat ≥ 0.5
    assert shopping_score.r_type(0.2, 0.4) == 0.5  # neither
    assert shopping_score.r_type(0.15, 0.0) == 0.5
    assert shopping_score.r_type(0.05, 1.0) == 0.1  # name < 0.1 overrides the category
    assert shopping_score.r_type(0.0, 1.0) == 0.0  # name == 0 → 0


def test_overlaps():
    assert shopping_score.name_overlap("Rainbow Nonpareil Sprinkles", "rainbow sugar pearls") == pytest.approx(1 / 3)
    assert shopping_score.name_overlap("", "x") == 0.0
    assert shopping_score.category_overlap(
        "Grocery › Baking › Sprinkles", "Grocery › Baking › Candles"
    ) == pytest.approx(2 / 3)
    assert shopping_score.category_overlap(None, "a") == 0.0


def test_substring_attribute_test_normalises_dashes_and_slashes():
    assert shopping_score.substring_matches(
        "Gluten Free Cake Mix w/ Almond Flour", ["gluten-free", "w/", "Almond Flour", "vanilla", ""]
    ) == [True, True, True, False, False]


def test_asin_match_overrides_soft_reward_and_no_purchase_is_zero():
    unrelated = {"name": "Garden Hose", "product_category": "Tools"}
    assert (
        shopping_score.soft_reward(
            bought=unrelated, bought_asin="b0fixt0001", target_asin="B0FIXT0001", target=None, attributes=["x"]
        )
        == 1.0
    )
    assert (
        shopping_score.soft_reward(
            bought=None, bought_asin=None, target_asin="B0FIXT0001", target=None, attributes=["x"]
        )
        == 0.0
    )
    assert (
        shopping_score.soft_reward(
            bought=None, bought_asin="B0UNKNOWN1", target_asin="B0FIXT0001", target=None, attributes=["x"]
        )
        == 0.0
    )


def test_soft_reward_of_a_near_miss():
    target = {"name": "Round Cake Pan, 8 inch, Nonstick", "product_category": "Grocery › Baking › Pans"}
    bought = {"name": "Round Cake Pan, 8 inch, Silicone", "product_category": "Grocery › Baking › Pans"}
    attrs = ["Round", "8 inch", "Nonstick"]
    # name overlap 5/6 > 0.2 → r_type 1; attributes 2 of 3 by substring
    assert shopping_score.soft_reward(
        bought=bought, bought_asin="B1", target_asin="B2", target=target, attributes=attrs
    ) == pytest.approx(2 / 3)
    # LLM matches replace the substring test; a price constraint adds one to the denominator
    assert shopping_score.soft_reward(
        bought=bought,
        bought_asin="B1",
        target_asin="B2",
        target=target,
        attributes=attrs,
        attr_matches=[True, True, True],
        price_ok=False,
    ) == pytest.approx(3 / 4)
    assert (
        shopping_score.soft_reward(bought=bought, bought_asin="B1", target_asin="B2", target=target, attributes=[])
        == 0.0
    )


def test_aggregate():
    b1 = [{"match": True, "reward": 1.0}, {"match": False, "reward": 0.5}]
    b2 = [{"match": True, "reward": 1.0}, {"match": True, "reward": 1.0}, {"match": False, "reward": 1.0}]
    out = shopping_score.aggregate([b1, b2])
    assert out["SR"] == 0.0 and out["PS"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert out["soft_reward"] == pytest.approx(4.5 / 5) and out["PS_soft"] == pytest.approx((0.75 + 1.0) / 2)
    assert out["SR_soft"] == 0.5  # a non-target with every attribute scores 1.0 (upstream)
    assert shopping_score.aggregate([])["SR"] is None
    # upstream average_success_rate: per step position (1: 1,1; 2: .5→fail,1; 3: 1), then the mean
    assert out["average_success_rate"] == pytest.approx((1.0 + 0.5 + 1.0) / 3)


def test_attribute_reply_parsing_is_total():
    attrs = ["Rainbow", "Gluten Free"]
    ok, err = shopping_score.parse_attribute_reply(
        '```json\n{"matches": [{"attribute": "rainbow", "has_attribute": true}, '
        '{"attribute": "Gluten Free", "has_attribute": false}]}\n```',
        attrs,
    )
    assert ok == [True, False] and err is None
    bad, err = shopping_score.parse_attribute_reply("I think yes", attrs)
    assert bad == [False, False] and "bad judge reply" in err


# ----------------------------------------------------------------------------- upstream reward_helpers.py details
def test_name_tokens_are_alphanumeric_runs_of_the_normalised_name():
    # upstream tokenize = re.findall("[a-z0-9]+", normalize_for_match(name)): punctuation never splits a match
    assert shopping_score.name_overlap("Cake Pan, Nonstick", "Nonstick Cake Pan") == 1.0
    assert shopping_score.name_overlap("Heat-Resistant Pan/Tray", "heat resistant tray pan") == 1.0


def test_category_overlap_uses_segment_sets():
    assert shopping_score.category_overlap("Grocery › Grocery › Baking", "Grocery › Candles") == pytest.approx(1 / 2)


def test_substring_test_collapses_whitespace_like_upstream():
    assert shopping_score.substring_matches("Gluten - Free  Cake Mix", ["gluten-free", "cake mix"]) == [True, True]


def test_llm_reply_needs_json_booleans_and_normalised_attribute_names():
    attrs = ["Gluten-Free", "Rainbow", "Vanilla"]
    reply = (
        '{"matches": [{"attribute": "gluten free", "has_attribute": true}, '
        '{"attribute": "Rainbow", "has_attribute": "false"}, {"attribute": "Vanilla", "has_attribute": 1}]}'
    )
    got, err = shopping_score.parse_attribute_reply(reply, attrs)
    assert err is None and got == [True, False, False]  # only a JSON `true` counts (upstream isinstance bool)


async def test_llm_judge_is_asked_again_on_a_bad_reply_like_upstream():
    from runners.api import Backbone, Completion

    class Replies(Backbone):
        def __init__(self, texts):
            self.texts, self.calls = list(texts), []

        async def complete(self, messages, *, role, protocol=None, attempt=0, **sampling):
            self.calls.append((role, attempt, sampling))
            return Completion(text=self.texts.pop(0), role=role, model="m")

    good = '{"matches": [{"attribute": "Rainbow", "has_attribute": true}]}'
    bb = Replies(["not json", good])
    got, text, err = await shopping_score.llm_attribute_matches(bb, "Rainbow Sprinkles", ["Rainbow"], temperature=0.0)
    assert got == [True] and err is None and text == good
    assert bb.calls == [("judge", 0, {"temperature": 0.0}), ("judge", 1, {"temperature": 0.0})]
    bad = Replies(["x", "y", "z", "never asked"])
    got, _, err = await shopping_score.llm_attribute_matches(bad, "Rainbow Sprinkles", ["Rainbow"])
    assert got == [False] and err and len(bad.calls) == 3
