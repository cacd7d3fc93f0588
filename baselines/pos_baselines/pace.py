"""PACE on Raw's loop (docs/pos-baselines.md §3, our implementation).

One chunk per executed step (its action and observation; Raw's format has no thought). Right
after a step's observation arrives the backbone writes the chunk's `detailed` and `brief`
representations (synchronously, role "memory"). Before each policy call the last `N` chunks
are shown in full and each older chunk at the level its relative relevance weight selects
(full / detailed / brief / placeholder), the thresholds rising with context pressure; chunks
are stepped down while the prompt exceeds `B_max − reserve`. `glimpse(step_id)` shows a chunk's
full text in the next prompt."""

from __future__ import annotations

from typing import Any

from baselines.pos_baselines import relevance
from baselines.pos_baselines.common import PosBaseline, Turn, aux_messages, render_turn
from baselines.pos_baselines.config import BaselineConfig
from baselines.pos_baselines.protocols import ChunkSummaryReply
from runners.api import Decision, Message, Missing, Observation, TaskView, ToolCall, ToolSpec
from runners.tokens import count, count_messages, truncate_tokens

GLIMPSE = ToolSpec(
    name="glimpse",
    description="Show the full record of an earlier step whose details are summarised or hidden. "
    "Costs no environment action; the record appears in your next prompt.",
    parameters={
        "type": "object",
        "properties": {"step_id": {"type": "integer", "description": "the step's id as shown in <history>"}},
        "required": ["step_id"],
    },
)

SUMMARIZER = """You write compact representations of one step of an agent's interaction with its environment.
- "detailed": a faithful summary of the step that keeps every exact value, identifier, name and result the task may \
need.
- "brief": one or two sentences: what was done and what came of it.
Never add anything that is not in the step."""


class PaceConfig(BaselineConfig):
    recent_full: int = 2  # N: latest chunks always in full (paper)
    tau: float = 0.3  # softmax temperature (paper)
    lam: float = 0.5  # λ pressure gain (paper; 1.0 in its stress test)
    base_thresholds: tuple[float, float, float] = (
        0.4,
        0.8,
        1.5,
    )  # (α, β, γ) of the paper formula, not the code's (0.5, 1.0, 2.0)
    t_max: int = 50  # [harness choice] T_max = the benchmark turn budget (overrides per benchmark)
    b_max: int = 128000  # B_max tokens (paper)
    reserve_tokens: int = 5000  # [harness choice] PACE code reserve below the budget
    l_max_tokens: int = 512  # encoder truncation L_max
    encoder: str = "tfidf"  # [harness choice] tfidf | minilm (local model, needs the mem0 extra)
    glimpse: bool = True  # the glimpse tool


class Pace(PosBaseline):
    own_texts = ("summarizer", "glimpse_tool")
    config_cls = PaceConfig
    base_cfg: PaceConfig
    cfg: PaceConfig
    method_name = "pace"
    lookup_tool = GLIMPSE

    @classmethod
    def missing(cls, params: dict[str, Any]) -> list[Missing]:
        from baselines.embedder import minilm_missing

        return minilm_missing("method pace (encoder: minilm)") if params.get("encoder") == "minilm" else []

    async def begin_task(self, task: TaskView) -> None:
        await super().begin_task(task)
        self.encoder = relevance.make_encoder(self.cfg.encoder)
        self.summary_protocol = ChunkSummaryReply()
        self.prev_tokens: int | None = None

    def lookup_enabled(self) -> bool:
        return self.cfg.glimpse

    async def step(self, observation: Observation) -> Decision:
        self.log: dict[str, Any] = {"encoder": self.encoder.name}
        obs = self.obs_text(observation)
        done = self.attach(obs)
        if done is not None:
            await self.summarize(done)
        if self.prev_tokens is None:  # |C_0| = system prompt + query
            self.prev_tokens = count_messages([self.system(), {"role": "user", "content": self.request.text}])
        decision = await self.decide(lambda: self.build(obs))
        self.record(decision)
        return decision

    async def summarize(self, turn: Turn) -> None:
        full = render_turn(turn)
        msgs = aux_messages(SUMMARIZER, self.summary_protocol, [("task", self.request.text), ("step", full)])
        fallback = {"detailed": truncate_tokens(full, 120)[0], "brief": f"Step {turn.uid}: {turn.action[:160]}"}
        out = await self.aux(
            msgs, self.summary_protocol, role="memory", call="chunk_summary", fallback=lambda: fallback
        )
        # PACE code: until a summary exists, detailed = the full text and brief = "".
        turn.extras.update(out or {"detailed": full, "brief": ""}, summarized=out is not None)

    def build(self, obs: str) -> list[Message]:
        n = self.cfg.recent_full
        older, recent = (self.turns[:-n], self.turns[-n:]) if n else (self.turns, [])
        weights = self.weights(older, recent)
        p = relevance.pressure(
            self.step_no + 1, self.cfg.t_max, self.prev_tokens or 0, self.cfg.b_max
        )  # t = this turn of the request
        th = relevance.thresholds(self.cfg.base_thresholds, self.cfg.lam, p)
        levels = [relevance.level(w, th) for w in weights]

        def messages() -> list[Message]:
            return self.policy_messages(
                [
                    ("history", self.render_history(older, levels)),
                    ("recent_steps", self.render_turns(recent)),
                    ("latest_observation", obs or "(no observation yet)"),
                    ("user_query", self.request.text),
                ]
            )

        msgs = messages()
        budget, stepped, total = self.cfg.b_max - self.cfg.reserve_tokens, 0, count_messages(msgs)
        while total > budget:
            est = total  # cheap per-chunk deltas, then one exact recount
            while est > budget and (i := relevance.step_down(levels, weights)) is not None:
                stepped += 1
                previous = relevance.LEVELS[relevance.LEVELS.index(levels[i]) - 1]
                est += self.chunk_tokens(older[i], levels[i]) - self.chunk_tokens(older[i], previous)
            msgs = messages()
            total = count_messages(msgs)
            if i is None:
                break
        self.prev_tokens = total
        self.log.update(
            pressure=round(p, 4),
            thresholds=[round(x, 4) for x in th],
            context_tokens=self.prev_tokens,
            levels={t.uid: lv for t, lv in zip(older, levels)},
            weights={t.uid: round(float(w), 4) for t, w in zip(older, weights)},
            budget_step_downs=stepped,
        )
        return msgs

    def weights(self, older: list[Turn], recent: list[Turn]) -> list[float]:
        """Relative weights w̃ of the older chunks against R_t = Q ⊕ R_full of the recent chunks."""
        if not older:
            return []
        trunc = lambda text: truncate_tokens(text, self.cfg.l_max_tokens)[0]  # noqa: E731
        query = trunc("\n".join([self.request.text, *(render_turn(t) for t in recent)]))
        vecs = self.encoder.encode([query, *(trunc(render_turn(t)) for t in older)])
        return [float(w) for w in relevance.relative_weights(vecs[0], vecs[1:], self.cfg.tau)]

    def render_chunk(self, t: Turn, lv: str) -> str:
        """One older chunk at level `lv` (PACE R_full / R_detailed / R_brief / R_ph)."""
        if lv == "full":
            return f"[full] {render_turn(t, latest=t is self.latest)}"
        if lv == "detailed":
            return f"[Step {t.uid} | detailed] {t.extras.get('detailed', render_turn(t))}"
        if lv == "brief":
            return f"[Step {t.uid} | brief] {t.extras.get('brief', '')}"
        return (
            f"[Step {t.uid}: step]" + (" (details via glimpse)" if self.cfg.glimpse else "")
            if lv == "placeholder"
            else ""
        )

    def chunk_tokens(self, t: Turn, lv: str) -> int:
        return count(self.render_chunk(t, lv)) + 1 if lv != "omit" else 0

    def render_history(self, older: list[Turn], levels: list[str]) -> str:
        shown = {t.uid: lv for t, lv in zip(older, levels)}
        kept = [t for t in older if shown[t.uid] != "omit"]
        return self.render_turns(kept, render=lambda t: self.render_chunk(t, shown[t.uid])) if kept else "(none)"

    def resolve_lookup(self, call: ToolCall) -> str:
        sid = call.arguments.get("step_id")
        hit = next((t for t in self.turns if isinstance(sid, int) and not isinstance(sid, bool) and t.uid == sid), None)
        if hit is None:
            return f"glimpse({sid!r}): no step with that id."
        return f"Full record of step {sid}:\n{render_turn(hit)}"
