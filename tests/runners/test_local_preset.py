"""`experiment=local_smollm`: the shipped command for a real local model on a CPU is bounded
(completion length, context, one question, one tool iteration, every role local) and its tiny
fixture loads. The run itself: tests/test_realmodel.py (HARNESS_REALMODEL=1)."""

from hydra import compose, initialize_config_dir

from benchmarks.memoryarena.loader import resolve
from runners.config import CONF_DIR, validate
from runners.prepare import prepare_cell
from runners.sweep import expand_cells, register_resolvers


def test_the_local_model_preset_is_bounded_and_loads_one_question():
    register_resolvers()
    overrides = ["experiment=local_smollm"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cells = [validate(c) for c in expand_cells(compose(config_name="config", overrides=overrides), overrides)]
    assert len(cells) == 1
    c = cells[0]
    assert c.backbone.kind == "managed" and c.backbone.sampling["max_tokens"] == 48
    cmd = c.backbone.server["command"]
    assert cmd[cmd.index("--n_ctx") + 1] == "2048" and cmd[cmd.index("--n_threads") + 1] == "1"
    assert all(b is None for _, b in c.roles.items())  # judge, tool: the local model, no key needed
    assert (
        c.benchmark.params["judge_sampling"]["max_completion_tokens"] == 48
        and c.benchmark.params["max_tool_iterations"] == 1
    )
    assert "NOT the paper's setting" in c.experiment.note
    prep = prepare_cell(c)
    assert len(prep.tasks) == 1 and len(prep.tasks[0].payload["questions"]) == 1  # one task, one question
    path, facts = resolve("formal_reasoning_math", "fixtures/tiny")
    assert path.parent.parent.name == "tiny" and facts["source"] == "project fixture (not MemoryArena data)"
    assert len(path.read_text().splitlines()) == 1
