"""The transcript encoder's CPU per call: `python -m scripts.perf.encoder [--episodes 50]
[--repeats 5] [--against DIR]`.

What a recording backbone does on the event loop before each model call when transcripts are on
(`runners.records.transcripts.Encoder.messages`): hash the prompt's messages, store the new ones
whole or as a line delta of the message at the same place last time, and find the prompt's node
(its prefix chain). The workload is Full Context's: 12 calls per episode, the prompt growing by an
assistant reply and an observation each call, with a 500-word system prompt and a user message
that also grows inside itself each call (a history kept in one message: the line delta's case).
Each call's prompt is made of fresh dict copies, as a method that rebuilds its messages sends them.

Also `line_delta` on four pairs of ~9 KB texts: a text that grew at its end, one whose start
changed, one changed in the middle, and one wholly new.

Each checkout runs in its own fresh process (`--against DIR`: this checkout and DIR in `--repeats`
rounds, alternating which goes first); the medians and their ratio are printed. Results:
scripts/perf/README.md ("Harness CPU per call, seventh pass").
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

from scripts.perf import checkout


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(["alpha", "beta", "gamma", "delta", "x=1", "step", "tool"]) for _ in range(n))


def _lines(rng: random.Random, n: int) -> str:
    return "\n".join(_words(rng, 12) for _ in range(n))


def _episode(rng: random.Random) -> list[list[dict[str, str]]]:
    system = {"role": "system", "content": _words(rng, 500)}
    history = _lines(rng, 20)
    turns: list[dict[str, str]] = []
    prompts = []
    for _ in range(12):
        user = {"role": "user", "content": history}
        prompts.append([dict(system), dict(user)] + [dict(m) for m in turns])
        turns += [{"role": "assistant", "content": _words(rng, 80)}, {"role": "user", "content": _words(rng, 60)}]
        history += "\n" + _lines(rng, 2)
    return prompts


def run(episodes: int) -> dict[str, float]:
    from runners.records.transcripts import Encoder, Pending, line_delta

    rng = random.Random(1)
    eps = [_episode(rng) for _ in range(episodes)]
    t = time.process_time()
    for prompts in eps:
        enc = Encoder()
        for p in prompts:
            enc.messages(p, Pending(), "agent")
    out = {"messages_us": (time.process_time() - t) / (episodes * 12) * 1e6}
    base = _lines(rng, 150)
    pairs = {
        "grew": (base, base + "\n" + _lines(rng, 5)),
        "start": (base, _lines(rng, 3) + base[200:]),
        "middle": (base, base[:4000] + _lines(rng, 2) + base[4100:]),
        "new": (base, _lines(rng, 150)),
    }
    for name, (a, b) in pairs.items():
        t = time.process_time()
        for _ in range(2000):
            line_delta(a, b)
        out[f"line_delta_{name}_us"] = (time.process_time() - t) / 2000 * 1e6
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--against", help="another checkout, measured in alternating fresh processes")
    ap.add_argument("--harness", help=argparse.SUPPRESS)
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.json:  # one measurement of the harness at --harness (or this one), as one JSON line
        if a.harness:
            checkout.use(a.harness)
        print(json.dumps({"harness": a.harness or checkout.location(), **run(a.episodes)}))
        return
    trees = {"this": str(checkout.REPO)} | ({"against": a.against} if a.against else {})
    got: dict[str, list[dict[str, float]]] = {k: [] for k in trees}
    for r in range(a.repeats):  # alternating which goes first, as `checkout.compare` does
        for name in list(trees) if r % 2 == 0 else list(reversed(trees)):
            got[name].append(checkout.measure("scripts.perf.encoder", trees[name], ["--episodes", str(a.episodes)]))
    keys = [k for k in got["this"][0] if k != "harness"]
    print(f"{a.episodes} episodes of 12 Full Context calls; CPU µs, medians of {a.repeats} fresh processes")
    print(f"{'':24}" + "".join(f"{k:>10}" for k in trees) + ("     ratio" if a.against else ""))
    for k in keys:
        med = {n: statistics.median(r[k] for r in rs) for n, rs in got.items()}
        ratio = f"{med['this'] / med['against']:10.2f}" if a.against else ""
        print(f"{k:24}" + "".join(f"{v:10.2f}" for v in med.values()) + ratio)


if __name__ == "__main__":
    main()
