"""BM25 memory (docs/baselines.md §2): tokenizer, score identity with rank_bm25, retrieval rules,
chunking, and what the BM25 method stores, retrieves and puts in the prompt."""

import random

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from baselines.bm25 import BM25Memory, BM25Store, OkapiIndex, tokenize
from runners.api import Observation
from runners.tokens import count
from tests.baselines.helpers import Recorder, answer_agent, block_of, outcome, request, task_view, user_blocks

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "A fox is quick; the dog is lazy. Fox FOX fox!",
    "Integrals of x^2 from 0 to 1 equal 1/3.",
    "the the the the",
    "Lemma 3: the sequence S_n = (1 - r^n)/(1 - r) converges for |r| < 1.",
    "",
    "dog dog cat",
]


def test_tokenizer_is_lowercase_alphanumeric_runs():
    assert tokenize("Hello, World! S_n=(1-r^n); x2 Y-3") == ["hello", "world", "s", "n", "1", "r", "n", "x2", "y", "3"]
    assert tokenize("") == [] and tokenize("--- !!") == []


@pytest.mark.parametrize("query", ["quick fox", "the dog", "fox fox the", "converges sequence r", "unknownword", "the"])
def test_scores_identical_to_rank_bm25(query):
    toks = [tokenize(d) for d in CORPUS]
    ref = BM25Okapi(toks)  # k1 1.5, b 0.75, epsilon 0.25
    ours = OkapiIndex(toks)
    q = tokenize(query)
    assert np.array_equal(ours.get_scores(q), ref.get_scores(q))  # bit-identical, not approximately


def test_scores_identical_on_random_corpus_with_negative_idfs():
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(40)]
    # w0..w2 appear in almost every document → negative IDF, floored to epsilon * mean IDF
    docs = [["w0", "w1", "w2"] * rng.randint(0, 2) + rng.choices(vocab, k=rng.randint(0, 30)) for _ in range(300)]
    ref, ours = BM25Okapi(docs), OkapiIndex(docs)
    common = [w for w in ref.idf if sum(w in d for d in docs) > 150]
    assert common and all(ref.idf[w] == ref.epsilon * ref.average_idf for w in common)  # the floor is exercised
    for _ in range(25):
        q = rng.choices(vocab + ["zzz"], k=rng.randint(1, 6))
        assert np.array_equal(ours.get_scores(q), ref.get_scores(q))
    for w in ref.idf:
        assert ours.idf[w] == ref.idf[w]


def test_top3_regardless_of_score_and_ties_keep_insertion_order():
    s = BM25Store()
    for text in ["alpha beta", "gamma delta", "epsilon zeta", "eta theta", "gamma"]:
        s.add(text)
    # no document matches: every score is 0 → the first three, in insertion order
    assert s.search("nothing matches here") == ["alpha beta", "gamma delta", "epsilon zeta"]
    # "gamma": the shorter doc scores higher, then the longer one, then insertion order
    assert s.search("gamma") == ["gamma", "gamma delta", "alpha beta"]


def test_empty_store_or_query_retrieves_nothing():
    s = BM25Store()
    assert s.search("anything") == []
    s.add("some text")
    assert s.search("") == [] and s.search("?!") == []


def test_chunks_are_split_at_2048_tokens_and_indexed_separately():
    s = BM25Store()
    long = " ".join(f"token{i} filler" for i in range(1500)) + " needle"
    n = s.add(long)
    assert n == len(s) >= 2
    assert all(count(p) <= 2048 for p in s.pieces)
    assert s.search("needle")[0] == s.pieces[-1]  # only the last piece holds the needle


def test_index_rebuilt_on_add_changes_idf():
    s = BM25Store()
    s.add("apple banana")
    first = s.index
    s.add("apple cherry")
    assert s.index is not first and s.index.corpus_size == 2
    assert s.index.idf["apple"] != first.idf["apple"]


async def test_bm25_method_stores_retrieves_and_builds_b3_prompt():
    bb = Recorder(answer_agent("S_n = 1/(1-r)"))
    m = BM25Memory(bb)
    await m.begin_task(task_view())
    assert m.store.pieces == ["Initial result: Empty"]
    q1 = request(0, "Compute the geometric series sum S_n.")
    await m.begin_request(q1)
    assert m.retrieved == ["Initial result: Empty"]
    d = await m.step(Observation())
    assert d.message == "S_n = 1/(1-r)"
    await m.end_request(
        outcome(q1, "## Task:\ngeometric series\n## solution:\nS_n = (1-r^n)/(1-r)", feedback="correct")
    )
    await m.end_request(
        outcome(
            q1, "## Task:\nprime numbers\n## solution:\ninfinitely many", memory_chunks=["per-turn chunk about dogs"]
        )
    )
    assert len(m.store) == 4 and "## Feedback:\ncorrect" in m.store.pieces[1]

    q2 = request(1, "Using the geometric series result, find the limit.")
    await m.begin_request(q2)
    assert m.retrieved[0].startswith("## Task:\ngeometric series") and len(m.retrieved) == 3
    await m.step(Observation())
    msgs = bb.last("agent")["messages"]
    assert user_blocks(msgs) == ["memory", "trajectory_history", "latest_observation", "user_query"]
    mem = block_of(msgs, "memory")
    assert mem.count("<memory_item>") == 3 and "geometric series" in mem
    traj = block_of(msgs, "trajectory_history")
    assert "(t0/q2)" in traj and "(t0/q1)" not in traj
    assert (
        q2.text not in traj and q1.text not in traj
    )  # the current query's trajectory only; its text is in <user_query> once
    assert block_of(msgs, "user_query") == q2.text
    assert "<tool_calls>" in msgs[0]["content"] and "<policy>" in msgs[0]["content"]
    assert set(bb.roles()) == {"agent"}  # BM25 makes no memory-side model call


async def test_empty_memory_block_reads_none():
    bb = Recorder(answer_agent())
    m = BM25Memory(bb)
    await m.begin_task(task_view(initial=[]))
    await m.begin_request(request(0, "First question"))
    await m.step(Observation())
    assert block_of(bb.last("agent")["messages"], "memory") == "None"


async def test_feedback_switch_off_keeps_it_out():
    m = BM25Memory(Recorder(), include_feedback=False)
    await m.begin_task(task_view(initial=[]))
    await m.end_request(outcome(request(0, "q"), "text", feedback="secret verdict"))
    assert m.store.pieces == ["text"]


def test_blank_pieces_are_not_indexed():
    # rag.py add_chunk: `if not piece.strip(): continue` (a blank document would change N and avgdl)
    s = BM25Store()
    s.add("apple banana")
    assert s.add(" \n\t  ") == 0 and len(s) == 1 and s.index.corpus_size == 1
    long = "word" + " word" * 2047 + "\n" * 4000  # 2,048 word tokens, then a whitespace-only piece
    assert count("word" + " word" * 2047) == 2048
    n = s.add(long)
    assert n == 1 and all(p.strip() for p in s.pieces)
