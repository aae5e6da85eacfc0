"""docs/guide.md: its Python runs (the worked example adds a reward and trains with it), and
every ``experiments/run.py`` command on it composes and passes the compose-time checks."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from kgreason.config import compose_config, validate_config

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide.md"
TEXT = GUIDE.read_text(encoding="utf-8")


def run_commands() -> list[list[str]]:
    """The overrides of every ``python experiments/run.py`` line of the guide's bash blocks."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", TEXT, re.S):
        for line in block.splitlines():
            line, _, comment = line.partition("#")
            line = line.strip()
            if line.startswith("python experiments/run.py"):
                # a command marked as needing a GPU composes here; validating it needs vLLM
                gpu = ["<gpu>"] if "needs a GPU" in comment else []
                out.append([*gpu, *(a for a in shlex.split(line)[2:] if a != "-m")])
    return out


def test_the_guide_shows_run_commands():
    assert len(run_commands()) >= 12


@pytest.mark.parametrize("overrides", run_commands(), ids=" ".join)
def test_every_run_command_composes_and_validates(overrides):
    if overrides[0] == "<gpu>":
        cfg = compose_config(overrides[1:])
        assert cfg.trainer.accelerator == "gpu" and cfg.engine._target_ == "kgreason.rollout.VLLMEngine"
        return
    # a sweep's comma lists: each value composes (the first stands for the rest here)
    first = [o if "," not in o or o.startswith(("kb.schema", "'")) else o.split(",")[0] for o in overrides]
    for i, o in enumerate(overrides):
        if "," in o and "=" in o and not o.startswith("kb.schema"):
            key, values = o.split("=", 1)
            for v in values.split(","):
                validate_config(compose_config([*first[:i], f"{key}={v}", *first[i + 1:]]))
    validate_config(compose_config(first))


def test_the_worked_example_adds_a_reward_and_trains_with_it():
    code = re.findall(r"```python\n(.*?)```", TEXT, re.S)
    assert len(code) == 1 and "@register(\"short_answer\")" in code[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code[0], "docs/guide.md", "exec"), {})
    assert out.getvalue().strip().splitlines()[-1] == "2 True"
