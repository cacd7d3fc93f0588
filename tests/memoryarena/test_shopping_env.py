"""Bundled Web Shopping: task parsing, reduced catalogue, text store, environment
(docs/memoryarena.md §2.1, §3.1, §4, §5.3)."""

import asyncio
import json

import pytest

from baselines.full_context import FullContext
from benchmarks.memoryarena.catalogue import Catalogue, goal, option_names, preamble, section, synthetic_catalogue
from benchmarks.memoryarena.loader import FIXTURES
from benchmarks.memoryarena.shopping import BundledShopping
from benchmarks.memoryarena.shopping_site import Site, parse_action
from runners.api import Decision, EpisodeContext, ToolCall
from runners.backbones.scripted import ScriptedBackbone
from runners.episode import Episode

ROW = json.loads((FIXTURES / "bundled_shopping" / "data.jsonl").read_text().splitlines()[0])


def bench(**kw):
    kw.setdefault("catalogue_path", "fixtures")
    return BundledShopping(name="memoryarena_shopping", data_dir="fixtures", **kw)


def test_task_text_parsing():
    pre = preamble(ROW["questions"])
    assert "$220" in pre and pre.rstrip().endswith("-" * 64) and "Product 1" not in pre
    sec = section(ROW["questions"], 2)
    assert sec.startswith("Product 2:\n### Select a frosting") and "Product 1:" not in sec
    assert option_names(sec) == [
        "Vanilla Almond Frosting, 16 oz",
        "Chocolate Fudge Frosting, Nut Free, 16 oz",
        "Vanilla Whipped Frosting, Nut Free, 12 oz",
        "Vanilla Buttercream Frosting, Nut Free, 16 oz",
        "Cream Cheese Frosting, 16 oz",
    ]
    assert goal(sec).startswith("Choose the lowest-priced") and option_names("no options") == []


def test_synthetic_catalogue_puts_the_target_first_on_the_goal():
    cat = synthetic_catalogue(ROW)
    assert len(cat) == 30 and len({p["asin"] for p in cat}) == 30
    assert all(p["asin"].startswith("B0") and len(p["asin"]) == 10 for p in cat)
    by = Catalogue(cat)
    for i, ans in enumerate(ROW["answers"]):
        opts = [by.get(p["asin"]) for p in cat if p["name"] in option_names(section(ROW["questions"], i + 1))]
        t = by.get(ans["target_asin"])
        assert t is not None and t in opts
        if "highest-rated" in goal(section(ROW["questions"], i + 1)):
            assert all(t["average_rating"] > o["average_rating"] for o in opts if o is not t)
        else:
            assert all(float(t["pricing"][1:]) < float(o["pricing"][1:]) for o in opts if o is not t)
    assert synthetic_catalogue(ROW) == cat  # deterministic


def test_bm25_search_top_n_and_ties_by_asin():
    cat = Catalogue(
        [
            {"asin": "B2", "name": "red cake pan"},
            {"asin": "B1", "name": "red cake pan"},
            {"asin": "B3", "name": "garden hose"},
        ]
    )
    assert [p["asin"] for p in cat.search("Cake pan")] == ["B1", "B2"]
    assert cat.search("") == [] and cat.search("zzz") == []
    many = Catalogue([{"asin": f"B{i:03d}", "name": f"cake item {i}"} for i in range(60)])
    assert len(many.search("cake")) == 50


def test_pages_and_actions():
    cat = Catalogue(json.loads((FIXTURES / "bundled_shopping" / "catalogue.json").read_text())["0"])
    s = Site(cat, "INSTR")
    assert s.render() == "WebShop [SEP] Instruction: [SEP] INSTR [SEP] Search"
    assert not s.step("click", "buy now") and s.page == "search"  # silent no-op
    assert s.step("search", "round cake pan 8 inch nonstick")
    page = s.render().split(" [SEP] ")
    assert page[3:6] == ["Back to Search", "Page 1 (Total results: 15)", "Next >"] and page[6] == "B0FIXT0004"
    assert not s.step("click", "B0NOTHERE") and s.page == "results"  # unknown product id
    assert s.step("click", "b0fixt0004") and s.page == "item"
    item = s.render()
    assert (
        "color [SEP] black [SEP] silver" in item
        and "Price: $13.21 [SEP] Rating: 3.4 [SEP] Description [SEP] Features [SEP] Reviews [SEP] Buy Now" in item
    )
    assert s.step("click", "Silver") and s.options == {"color": "silver"}
    assert s.step("click", "features") and "Nonstick" in s.render() and s.step("click", "< prev") and s.page == "item"
    assert s.step("click", "Buy Now") and s.purchased["asin"] == "B0FIXT0004"
    assert s.summary() == "Purchase completed.\nPurchase #1: B0FIXT0004 ($13.21)"
    assert parse_action("Thought: x\nAction: click[Buy Now]") == ("click", "Buy Now")
    assert parse_action("nothing") is None and parse_action(None) is None


def run(b, backbone=None):
    task = b.load_tasks()[0]
    ep = Episode(backbone or ScriptedBackbone(), cell="c", task_id=task.task_id)
    return asyncio.run(ep.run(ep.make_env(b, task), FullContext(ep.agent)))


@pytest.mark.parametrize("catalogue", ["fixtures", None])
def test_scripted_full_context_buys_every_target(catalogue):
    b = bench(catalogue_path=catalogue)
    rec = run(b)
    assert rec.status == "ok", rec.error
    assert rec.scores["subtask_correct"] == [1] * 6 and rec.scores["rewards"] == [1.0] * 6
    m = b.metrics([rec.model_dump()])
    assert m["SR"] == m["PS"] == m["soft_reward"] == 100.0 and m["Acc_6"] == 100.0
    r = rec.requests[1]
    assert [s.decision.tool_calls[0].name for s in r.steps] == ["search", "click", "click"]
    assert r.outcome["final_response"] == "B0FIXT0002"
    chunks = [r.outcome["memory_text"], *r.outcome["memory_chunks"]]
    assert len(chunks) == 3 and chunks[0].startswith("Step 1:\nUser Instruction: WebShop [SEP] Instruction:")
    assert chunks[2].startswith("Step 3:\n")  # upstream build_memory_entries: `Step {turn}:`
    assert "Agent Action: search[Vanilla Buttercream Frosting, Nut Free, 16 oz]" in chunks[0]
    assert "Env Observation: Purchase completed.\nPurchase #1: B0FIXT0002" in chunks[2] and chunks[2].endswith(
        "Done: True"
    )
    assert "B0FIXT0001" not in r.request.text and "Product 2:" in r.request.text  # earlier purchases are not shown
    assert "reduced catalogue" in b.notes()["reduction"]


def drive(env, per_request):
    async def go():
        for decisions in per_request:
            await env.next_request()
            n = 0
            for d in decisions:
                n += 1
                if (await env.act(d)).request_done:
                    break
            await env.end_request(truncated=False, steps=n)
        return await env.score_task()

    return asyncio.run(go())


def click(v):
    return Decision(tool_calls=[ToolCall(name="click", arguments={"target": v})])


def test_wrong_purchase_soft_reward_repeats_and_bad_input():
    b = bench()
    env = b.make_env(b.load_tasks()[0], EpisodeContext())
    assert env.step_budget() == 20
    search = lambda q: Decision(tool_calls=[ToolCall(name="search", arguments={"query": q})])  # noqa: E731
    scores = drive(
        env,
        [
            [
                Decision(message="search[almond flour vanilla cake mix]"),
                Decision(message="click[b0fixt0001]"),
                Decision(message="Action: click[buy now]"),
            ],
            [click("nothing")] * 7 + [click("never reached")],  # 7 identical actions end the step
            [Decision(tool_calls=[ToolCall(name="search", arguments={"kw": "x"})])],  # bad argument: no-op
            [search("round cake pan 8 inch silicone"), click("B02DBBB714"), click("Buy Now")],  # near miss
        ],
    )
    assert scores["subtask_correct"] == [1, 0, 0, 0]
    assert scores["steps"][1]["purchase"] is None and scores["rewards"][1] == 0.0
    assert scores["rewards"][3] == pytest.approx(2 / 3)  # r_type 1 × (Round, 8 inch) / 3 attributes
    assert len(env.turns) == 3 and scores["success"] == 0


def test_llm_attribute_matching_uses_the_judge_role():
    b = bench(llm_attributes=True)
    ep = Episode(ScriptedBackbone())
    env = ep.make_env(b, b.load_tasks()[0])
    scores = drive(
        env, [[], [], [], [Decision(message="search[round cake pan silicone]"), click("B02DBBB714"), click("buy now")]]
    )
    assert [c.role for c in ep.sink] == ["judge"] and scores["rewards"][3] == pytest.approx(2 / 3)
    assert json.loads(scores["judge_replies"][0])["matches"][2] == {"attribute": "Nonstick", "has_attribute": False}


def test_extra_tool_calls_are_refused_one_action_per_turn():
    b = bench()
    env = b.make_env(b.load_tasks()[0], EpisodeContext())

    async def go():
        await env.next_request()
        return await env.act(
            Decision(
                tool_calls=[
                    ToolCall(name="search", arguments={"query": "cake"}, id="a"),
                    ToolCall(name="click", arguments={"target": "next >"}, id="b"),
                ]
            )
        )

    r = asyncio.run(go())
    res = r.observation.tool_results
    assert "Page 1 (Total results:" in res[0].content and res[1].error and env.site.page_no == 1


def test_a_product_list_is_reduced_per_task(tmp_path):
    from benchmarks.memoryarena.catalogue import CatalogueSource

    real = [
        {"asin": "B0FIXT0001", "name": "Almond Flour Vanilla Cake Mix, Gluten Free, 12 oz", "pricing": "$9.99"},
        {"asin": "B0REAL0002", "name": "classic vanilla cake mix,  wheat flour, 15.25 OZ", "pricing": "$5.00"},
        {"asin": "B0OTHER003", "name": "Garden Hose", "pricing": "$20.00"},
    ]
    cat = CatalogueSource(real, scope="task").for_task(ROW)
    asins = {p["asin"] for p in cat.products}
    assert {"B0FIXT0001", "B0REAL0002"} <= asins and "B0OTHER003" not in asins and len(cat.products) == 30
    assert cat.get("B0FIXT0001")["pricing"] == "$9.99"  # the real record
    assert cat.get("B0FIXT0002")["name"].startswith("Vanilla Buttercream")  # absent from the list: synthetic
    assert len(CatalogueSource(real, scope="global").for_task(ROW).products) == 3
    with pytest.raises(ValueError, match="catalogue_scope"):
        CatalogueSource(real, scope="all")
    path = tmp_path / "items.json"
    path.write_text(json.dumps(real))
    rec = run(bench(catalogue_path=str(path), catalogue_scope="task"))
    assert rec.scores["subtask_correct"] == [1] * 6
    with pytest.raises(FileNotFoundError, match="catalogue_path"):
        bench(catalogue_path=str(tmp_path / "absent.json")).catalogue(ROW)


def test_reference_walks_pages_to_the_target():
    from benchmarks.memoryarena.shopping import ShoppingEnv

    b = bench()
    task = b.load_tasks()[0]
    products = b.catalogue(task.payload).products + [
        {"asin": f"B00000000{i:X}", "name": "cake cake cake mix"} for i in range(12)
    ]
    env = ShoppingEnv(task, EpisodeContext(), b.params, Catalogue(products))

    async def go():
        await env.next_request()
        assert env.next_action() == ("search", "Almond Flour Vanilla Cake Mix, Gluten Free, 12 oz")
        await env.act(Decision(message="search[cake]"))
        pages = 1
        while env.next_action() == ("click", "next >"):
            await env.act(click("next >"))
            pages += 1
        assert pages > 1 and env.next_action() == ("click", "b0fixt0001")
        assert "B0FIXT0001" in [p["asin"] for p in env.site.window()]
        await env.act(click("< prev"))
        assert env.next_action() == ("click", "next >")
        await env.act(click(env.site.window()[0]["asin"]))  # a wrong product
        assert env.next_action() == ("click", "< prev")
        await env.act(click("description"))
        assert env.next_action() == ("click", "< prev")

    asyncio.run(go())


def test_the_seventh_identical_action_is_not_executed():
    # webshop_plus_client: the repeat count is checked before the action runs (soft exit on the 7th)
    b = bench()
    env = b.make_env(b.load_tasks()[0], EpisodeContext())

    async def go():
        await env.next_request()
        executed, real = [], env.site.step
        env.site.step = lambda *a: executed.append(a) or real(*a)
        replies = [await env.act(click("next >")) for _ in range(7)]
        return executed, replies

    executed, replies = asyncio.run(go())
    assert len(executed) == 6 and [r.request_done for r in replies] == [False] * 6 + [True]
    assert "Soft exit" in env.turns[-1]["observation"] and env.turns[-1]["done"] is True


def test_per_category_limit_picks_the_lowest_item_numbers_of_each_prefix(tmp_path):
    from benchmarks.memoryarena.shopping import select_per_category

    rows = [
        {"id": i, "category": c}
        for i, c in enumerate(
            ["home_item_3", "baking_item_2", "home_item_0", "baking_item_10", "baking_item_1", "home_item_1"]
        )
    ]
    assert [r["category"] for r in select_per_category(rows, 2)] == [
        "home_item_0",
        "home_item_1",
        "baking_item_1",
        "baking_item_2",
    ]
    d = tmp_path / "bundled_shopping"
    d.mkdir()
    d.joinpath("data.jsonl").write_text(
        "\n".join(json.dumps({**ROW, "id": r["id"], "category": r["category"]}) for r in rows)
    )
    b = BundledShopping(name="memoryarena_shopping", data_dir=str(tmp_path), per_category_limit=1)
    assert [t.payload["category"] for t in b.load_tasks()] == ["home_item_0", "baking_item_1"]


def test_the_real_product_list_is_searched_whole_by_default(tmp_path):
    """A product LIST (the real product file) means the full set, through one bm25s index, as upstream
    searches all of WebShop; the manifest says which mode ran."""
    from benchmarks.memoryarena.catalogue import Catalogue, CatalogueSource, FullCatalogue

    real = [
        {"asin": f"B0X{i:07d}", "name": n, "small_description": [], "pricing": "$1"}
        for i, n in enumerate(
            [
                "red leather shoe",
                "blue cotton shirt",
                "red wool hat",
                "green running shoe",
                "garden hose",
                "red shoe laces",
            ]
        )
    ]
    src = CatalogueSource(real)
    assert src.scope == "global"
    full = src.for_task(ROW)
    assert isinstance(full, FullCatalogue) and src.for_task(ROW) is full and len(full.products) == 6
    # Lucene-style BM25 (bm25s default, as WebShop's Pyserini index): both query words beat one, no match → nothing
    got = [p["asin"] for p in full.search("red shoe")]
    assert set(got[:2]) == {"B0X0000000", "B0X0000005"} and set(got[2:]) == {"B0X0000002", "B0X0000003"}
    assert [p["asin"] for p in full.search("hose garden")] == ["B0X0000004"] and full.search("purple") == []
    assert {p["asin"] for p in Catalogue(real).search("red shoe")} == set(got)  # same candidates as the reduced mode
    path = tmp_path / "items.json"
    path.write_text(json.dumps(real))
    notes = bench(catalogue_path=str(path)).notes()
    assert notes["catalogue_mode"] == "full product set" and notes["reduction"] is None
    assert bench().notes()["catalogue_mode"] == "reduced catalogue" and bench().notes()["reduction"]
