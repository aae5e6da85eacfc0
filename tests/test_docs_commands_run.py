"""Every ``python experiments/run.py ...`` command the docs show, run to its end with its
sizes cut (``SHRINK``: one SFT step, one RL iteration, eight training and three evaluation
questions, one a hop where a preset stratifies by hops): the composition each command names — its method, preset, KB, reward, objective,
rollout, engine, stage and ablation sweep — trains and evaluates on the real model and KB,
not only composes (``tests/test_docs_commands.py``). Commands that name the papers'
hardware (``preset=full``) or a GPU are skipped with that reason; ``resume=`` commands are
run by ``tests/training/test_resume.py``. Slow: about 45 minutes on 2 CPU cores
(``pytest -m slow tests/test_docs_commands_run.py``). Commands that differ only in those
sizes, the seed or paths run once; an ablation table's sweep is run row by row in
``tests/experiments/test_ablations.py``."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from kgreason.config import CONFIG_DIR, compose_config
from tests.test_docs_commands import DOC_COMMANDS, REFUSED, TOOL_COMMANDS, argv_of

ROOT = Path(__file__).resolve().parents[1]

#: key → the value a command runs with here (only the keys its config has)
SHRINK = {"sft.steps": 1, "rl.iterations": 1, "rl.checkpoint_every": 1, "data.train_limit": 8,
          "data.eval_limit": 3, "curriculum.batch_size": 2, "rollout.n_rollouts": 2, "objective.mini_batch_size": 4,
          "cold_start.limit": 8, "ranker_training.epochs": 1, "eval.untrained": False}
#: what makes a command the papers' hardware's (a reason to skip it here)
GPU_ONLY = {"preset=full": "the paper's model and cards (hardware.*)", "trainer=gpu": "a CUDA device",
            "trainer.accelerator=gpu": "a CUDA device", "engine=vllm": "vLLM on a GPU",
            "engine.weight_sync=vllm_lora": "a vLLM server on a GPU",
            "engine.weight_sync=sglang_disk": "an SGLang server on a GPU"}
#: what makes a command need a server of the reader's (a reason to skip it here), and the test that runs one
NEEDS_SERVER = {"engine=openai": "completion servers: tests/serve/test_openai_engine.py starts two and runs a smoke run",
                "kb=sparql_endpoint": "the reader's SPARQL endpoint: tests/experiments/test_own_data.py starts one"}

#: ablation tables shown as sweeps: their rows run in tests/experiments/test_ablations.py
ABLATION_TABLES = tuple(p.stem for p in (CONFIG_DIR / "ablation").glob("*.yaml"))


def composition(command: str) -> tuple[str, ...]:
    """What a command composes: its arguments less the sizes :data:`SHRINK` replaces, the
    seed, the output folder and the reader's checkpoint path. Commands that differ only
    there run once."""
    argv = argv_of(command, Path("checkpoint")) or [command]
    return tuple(sorted(a for a in argv if a.split("=", 1)[0] not in {*SHRINK, "seed"}))


GROUPS: dict[tuple[str, ...], list[str]] = {}
for _c in sorted({c for _, c in DOC_COMMANDS}):
    GROUPS.setdefault(composition(_c), []).append(_c)
COMMANDS = [cs[0] for cs in GROUPS.values()]


def shrunk(argv: list[str]) -> list[str]:
    """``argv`` with the sizes of :data:`SHRINK` its composed config has; a size the command
    gives itself is cut to SHRINK's unless it is smaller (``sft.steps=0`` stays) or a switch."""
    own = dict(a.split("=", 1) for a in argv if "=" in a)
    sweep = "-m" in argv  # composed with each swept key's first value
    cfg = compose_config([a.split(",")[0] if sweep else a for a in argv
                          if a != "-m" and not a.startswith("ablation=")])
    missing = object()
    out = [a for a in argv if a.split("=", 1)[0] not in SHRINK]
    for key, value in SHRINK.items():
        if key in own and (isinstance(value, bool) or (own[key].isdigit() and int(own[key]) < value)):
            value = own[key]
        elif OmegaConf.select(cfg, key, default=missing) is missing and key not in own:
            continue
        out.append(f"{key}={str(value).lower() if isinstance(value, bool) else value}")
    return out


def run(argv: list[str], out: Path) -> subprocess.CompletedProcess:
    where = f"hydra.sweep.dir={out}" if "-m" in argv else f"hydra.run.dir={out}"
    return subprocess.run([sys.executable, str(ROOT / "experiments" / "run.py"), *argv, where],
                          cwd=ROOT, capture_output=True, text=True, timeout=1800)


@cache
def trained(method: str, preset: str, workdir: str) -> Path:
    """A shrunk run of ``method`` and ``preset``, whose checkpoints stand in for the reader's."""
    out = Path(workdir) / f"{method}-{preset}"
    if not (out / "checkpoints" / "policy.pt").is_file():
        p = run(shrunk([f"method={method}", f"preset={preset}"]), out)
        assert p.returncode == 0, p.stderr[-3000:]
    return out / "checkpoints"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("docs_runs"))


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS,
                         ids=[re.sub(r"[^\w=.,-]+", "_", c.removeprefix("python experiments/run.py ")) for c in COMMANDS])
def test_every_docs_command_runs_to_its_end_shrunk(command, workdir, tmp_path):
    if command in REFUSED:
        pytest.skip("shown refused; tests/test_docs_commands.py checks the refusal")
    for phrase, needs in GPU_ONLY.items():
        if phrase in command.split():
            pytest.skip(f"requires a GPU: {needs}")
    for phrase, needs in NEEDS_SERVER.items():
        if phrase in command.split():
            pytest.skip(f"needs {needs}")
    if any(f"ablation={t}" in command.split() for t in ABLATION_TABLES):
        pytest.skip("an ablation table: every row runs in tests/experiments/test_ablations.py")
    argv = argv_of(command, tmp_path / "policy.pt")
    if argv is None:
        pytest.skip("a template (method=kg_r1|isp_dtpo, ablation_row=<row>)")
    if any(a.startswith("resume=") for a in argv):
        pytest.skip("resume reads the checkpoint's own run: tests/training/test_resume.py")
    if any(a.startswith("checkpoint=") for a in argv):
        shown = re.search(r"checkpoint=(\S+)", command).group(1)
        method = next(a for a in argv if a.startswith("method=")).split("=", 1)[1]
        preset = next(a for a in argv if a.startswith("preset=")).split("=", 1)[1]
        ckpt = trained(method, preset, workdir) / ("policy_sft.pt" if "policy_sft" in shown else "policy.pt")
        argv = [f"checkpoint={ckpt}" if a.startswith("checkpoint=") else a for a in argv]
    plain = [a for a in argv if a.startswith(("method=", "preset="))]
    if argv == plain and len(plain) == 2:  # the run other commands take their checkpoints from
        out = trained(plain[0].split("=", 1)[1], plain[1].split("=", 1)[1], workdir).parent
    else:
        out = tmp_path / "run"
        p = run(shrunk(argv), out)
        assert p.returncode == 0, f"{command}\n{p.stderr[-3000:]}"
    results = sorted(out.rglob("results.json"))
    assert results, f"{command}: no results.json under {out}"
    jobs: list[str] = []
    if "-m" in argv:  # a sweep: every job ran and the sweep's table names each as done
        table = (out / "results.md").read_text()
        jobs = [r for r in table.splitlines() if r.startswith("| ") and not r.startswith("| job |")]
        assert jobs and all("| done |" in r for r in jobs), table
    stage = next((a.split("=", 1)[1] for a in argv if a.startswith("stage=")), "all")
    for path in results:
        record = json.loads(path.read_text())
        if isinstance(record, list):  # a sweep's own summary: one entry a job
            assert len(record) == len(jobs), (command, path)
            continue
        reports = record.get("eval", {})
        if stage in ("all", "eval"):
            assert reports, f"{command}: {path} has no evaluation"
        # every evaluation answered the three questions
        assert all(r["overall"]["n"] == 3 for r in reports.values()), (command, path)


#: ``python -m kgreason...`` commands not run here, and why
MODULES_NOT_RUN = {"kgreason.serve": "a server that runs until stopped: tests/serve/ starts and queries it",
                   "kgreason.data.demo.build": "rewrites the shipped demo questions: tests/data/ checks them",
                   "kgreason.eval.plans": "reads a MetaQA run's episodes against MetaQA's gold paths: "
                                          "tests/eval/test_plans.py runs it on a teacher's MetaQA episodes"}
MODULE_COMMANDS = sorted({c for _, c in TOOL_COMMANDS if c.startswith("-m kgreason")})


@pytest.mark.slow
@pytest.mark.parametrize("command", MODULE_COMMANDS, ids=[re.sub(r"[^\w=.,-]+", "_", c[3:]) for c in MODULE_COMMANDS])
def test_every_docs_module_command_runs(command, workdir):
    """The ``python -m kgreason...`` tools the docs show; ``<run>`` is a shrunk KG-R1 demo run."""
    module = command.split()[1]
    if module in MODULES_NOT_RUN:
        pytest.skip(MODULES_NOT_RUN[module])
    args = shlex.split(command)[2:]
    if re.search(r"<(?!run>)[^<>]*>|…|\.\.\.$|outputs/(?!<run>)", command):
        pytest.skip("names the files of one experiment (<sft eval>, outputs/pass8, …)")
    run_dir = trained("kg_r1", "demo", workdir).parent if any("<run>" in a for a in args) else None
    args = [a.replace("outputs/<run>", str(run_dir)).replace("<run>", str(run_dir)) for a in args]
    p = subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert p.returncode == 0, f"{command}\n{p.stderr[-3000:]}"
    assert p.stdout.strip() or p.stderr.strip(), f"{command} printed nothing"
