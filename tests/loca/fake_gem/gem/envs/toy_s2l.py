"""A toy GEM-style env: pass iff answer.txt in the agent workspace says 42."""

from pathlib import Path


class ToyS2LEnv:
    def __init__(self, seed, task_dir, size=1):
        self.task_dir = Path(task_dir)

    def reset(self, seed=None):
        return "Write 42 into answer.txt, then claim done.", {}

    def step(self, action):
        f = self.task_dir / "agent_workspace" / "answer.txt"
        ok = f.is_file() and f.read_text().strip() == "42"
        return "evaluated", 1.0 if ok else 0.0, True, False, {}
