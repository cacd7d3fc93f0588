"""Mem0 via mem0ai 1.0.11 (docs/baselines.md §4): the classic fact extraction + ADD/UPDATE/DELETE
algorithm with real MiniLM embeddings and a real FAISS store, its LLM calls routed through the
harness backbone (role "memory"), all with no network beyond loopback. Skips without the extra."""

import json
import os
import socket

import pytest

from baselines.mem0_method import MIN_FACTS_REPLY, Mem0JsonProtocol, Mem0Memory, mem0_version
from runners.api import BackboneError, Decision, Observation
from tests.baselines.helpers import Recorder, block_of, request, task_view

pytestmark = [
    pytest.mark.mem0,
    pytest.mark.skipif(mem0_version() is None, reason="needs the mem0 extra: pip install -e '.[mem0]'"),
]


def test_guard_refuses_non_loopback(no_network):
    s = socket.socket()
    try:
        with pytest.raises(ConnectionRefusedError):
            s.connect(("93.184.216.34", 80))
    finally:
        s.close()
    assert no_network == ["connect ('93.184.216.34', 80)"]
    no_network.clear()


def test_protocol_minimal_render_is_valid_for_both_calls():
    text = Mem0JsonProtocol().render(Decision(message=""))
    assert text == MIN_FACTS_REPLY and json.loads(text)["facts"] == [] and json.loads(text)["memory"] == []
    bad = Mem0JsonProtocol().parse("not json")
    assert bad.decision == Decision(message="not json")  # mem0 reads its JSON itself: the text goes through
    assert [(e.kind, e.detail) for e in bad.errors] == [("bad_json", "Expecting value: line 1 column 1 (char 0)")]


def mem0_oracle(facts: list[list[str]], updates: list[dict]):
    """role memory: a system+user call is fact extraction, a single user message the update call."""
    facts, updates = list(facts), list(updates)

    def fn(role, messages):
        if role == "memory":
            if messages[0]["role"] == "system":
                return Decision(message=json.dumps({"facts": facts.pop(0)}))
            return Decision(message=json.dumps(updates.pop(0)))
        return Decision(message="ok") if role == "agent" else None

    return fn


async def test_add_update_search_offline(no_network):
    bb = Recorder(
        mem0_oracle(
            facts=[["Likes green tea"], ["Now prefers black coffee instead of tea"]],
            updates=[
                {"memory": [{"id": "0", "text": "Likes green tea", "event": "ADD"}]},
                {
                    "memory": [
                        {
                            "id": "0",
                            "text": "Prefers black coffee instead of tea",
                            "event": "UPDATE",
                            "old_memory": "Likes green tea",
                        }
                    ]
                },
            ],
        )
    )
    m = Mem0Memory(bb)
    await m.begin_task(task_view(initial=[]))
    await m.add_chunk("## Task:\nI love a cup of green tea every morning.")
    await m.add_chunk("## Task:\nThese days I drink black coffee, not tea.")
    assert bb.roles() == ["memory"] * 4  # facts, update, facts, update (classic algorithm)
    second_update = bb.calls[3]["messages"][0]["content"]
    assert "Likes green tea" in second_update  # the nearest stored memory was offered for the decision
    assert [e["event"] for e in m.events] == ["ADD", "UPDATE"]
    assert (
        bb.calls[0]["sampling"]["response_format"] == {"type": "json_object"}
        and bb.calls[0]["sampling"]["temperature"] == 0.1
    )

    await m.begin_request(request(0, "What Does The User Drink?"))
    assert m.retrieved == ["Prefers black coffee instead of tea"]
    await m.step(Observation())
    assert "Prefers black coffee instead of tea" in block_of(bb.last("agent")["messages"], "memory")
    assert os.environ["MEM0_TELEMETRY"] == "False"
    import mem0.memory.main as main

    assert main.MEM0_TELEMETRY is False


async def test_delete_and_no_facts_skip_the_update_call(no_network):
    bb = Recorder(
        mem0_oracle(
            facts=[["Lives in Paris"], [], ["Moved away from Paris"]],
            updates=[
                {"memory": [{"id": "0", "text": "Lives in Paris", "event": "ADD"}]},
                {"memory": [{"id": "0", "text": "Lives in Paris", "event": "DELETE"}]},
            ],
        )
    )
    m = Mem0Memory(bb)
    await m.begin_task(task_view(initial=[]))
    await m.add_chunk("I live in Paris.")
    await m.add_chunk("Nothing to remember here.")
    await m.add_chunk("I moved away from Paris.")
    assert bb.roles() == ["memory"] * 5  # the empty extraction made no update call
    assert [e["event"] for e in m.events] == ["ADD", "DELETE"]
    assert await m.retrieve("where does the user live") == []


class FailingSecondCall(Recorder):
    async def complete(self, messages, *, role, protocol=None, attempt=0, **sampling):
        if len(self.calls) == 1:
            self.calls.append({"role": role, "messages": messages, "sampling": sampling, "text": None})
            raise BackboneError("HTTP 503 after retries")
        return await super().complete(messages, role=role, protocol=protocol, attempt=attempt, **sampling)


async def test_backbone_failure_inside_mem0_is_not_swallowed(no_network):
    bb = FailingSecondCall(mem0_oracle(facts=[["a fact"]], updates=[]))
    m = Mem0Memory(bb)
    await m.begin_task(task_view(initial=[]))
    with pytest.raises(BackboneError, match="503"):
        await m.add_chunk("something")  # mem0 catches errors of its update call; the method re-raises


async def test_initial_memory_and_scripted_minimal_replies(no_network):
    bb = Recorder()  # no opinion: every memory call gets the minimal valid reply
    m = Mem0Memory(bb)
    await m.begin_task(task_view())
    assert bb.roles() == ["memory"] and m.stored == 1 and m.events == []


def test_unsupported_version_is_a_clear_error():
    with pytest.raises(ValueError, match="1.0.11"):
        Mem0Memory(Recorder(), version="2.x")


def test_memory_notes_record_version_and_search_limit():
    m = Mem0Memory(Recorder(), limit=7)
    notes = m.memory_notes()
    assert notes["mem0ai"] == "1.0.11" and notes["search_limit"] == 7
    assert Mem0Memory(Recorder()).memory_notes()["search_limit"] == 100  # mem0ai 1.0.11 search() default


async def test_hits_without_memory_text_are_not_injected():
    class FakeStore:
        def search(self, query, **kw):
            self.seen = (query, kw)
            return {
                "results": [
                    {"memory": "likes tea", "categories": ["food"]},
                    {"memory": ""},
                    {"memory": None},
                    {"id": "x"},
                ]
            }

    class FakeLLM:
        context = failure = None

    m = Mem0Memory(Recorder())
    m.memory, m.llm, m.user_id = FakeStore(), FakeLLM(), "t0"
    assert await m.retrieve("What Does The User Drink?") == ["likes tea (categories: food)"]
    assert m.memory.seen == ("what does the user drink?", {"user_id": "t0", "limit": 100})
