"""Every method × preset composes and builds every part in-process (no subprocess), and
the runner names no part: methods land as config files."""

from __future__ import annotations

import hashlib
import inspect
import re
from pathlib import Path

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from kgreason.compose import CONFIG_DIR, build_parts, compose_config, rl_iterations, validate_config
from kgreason.envs import KGEnv
from kgreason.errors import ConfigError, DatasetError, RewardError
from kgreason.training import ColdStart, ExperienceSource, RLConfig, length_fit
from kgreason.types import KBQASample

METHODS = sorted(p.stem for p in (CONFIG_DIR / "method").glob("*.yaml"))
PRESETS = sorted(p.stem for p in (CONFIG_DIR / "preset").glob("*.yaml"))
METAQA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "metaqa"

_policies: dict[str, object] = {}
_kbs: dict[str, object] = {}


def _build(cfg):
    """build_parts, with one policy and one KB per distinct config (they are the slow parts)."""
    key = OmegaConf.to_yaml(cfg.model.policy)
    if key not in _policies:
        _policies[key] = instantiate(cfg.model.policy)
    kb_key = hashlib.sha1(OmegaConf.to_yaml(cfg.kb).encode()).hexdigest()
    if kb_key not in _kbs:
        _kbs[kb_key] = instantiate(cfg.kb)
    cfg = cfg.copy()
    OmegaConf.set_struct(cfg, False)
    cfg.kb = {"_target_": "tests.experiments.test_compose._kb", "key": kb_key}
    return build_parts(cfg, policy=_policies[key])


def _kb(key: str):
    return _kbs[key]


def test_there_are_methods_and_presets():
    assert {"kg_r1", "isp_dtpo"} <= set(METHODS) and {"smoke", "demo", "metaqa", "full"} <= set(PRESETS)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("method", METHODS)
def test_every_method_and_preset_builds_every_part(method, preset):
    if preset == "metaqa" and not METAQA.exists():
        pytest.skip(f"MetaQA data not at {METAQA}")
    cfg = compose_config([f"method={method}", f"preset={preset}"])
    p = _build(cfg)
    env = p.make_env()
    assert isinstance(env, KGEnv) and env is not p.make_env()
    assert env.max_turns == cfg.env.max_turns
    assert isinstance(p.source, ExperienceSource) and isinstance(p.objective, RLConfig)
    iterations = rl_iterations(cfg.rl.epochs, len(p.train), cfg.curriculum.batch_size) if cfg.rl.get("epochs") \
        else cfg.rl.iterations
    assert isinstance(p.cold_start, ColdStart) and p.objective.iterations == iterations
    assert p.dev and all(isinstance(q, KBQASample) for q in p.dev)
    assert not {q.id for q in p.train} & {q.id for q in p.dev}
    stream = iter(p.prompts(p.train))
    assert len(next(stream)) == cfg.curriculum.batch_size
    messages = env.reset(p.dev[0])
    assert messages[-1]["content"] and p.ranker_training is not None


def test_the_preset_sizes_the_method_and_specialises_its_parts():
    demo = compose_config(["method=kg_r1", "preset=demo"])
    assert demo.rollout.n_rollouts == 4 and demo.cold_start.oracle.list_relations  # preset over method
    metaqa = compose_config(["method=kg_r1", "preset=metaqa"])
    assert metaqa.sft.steps == 300 and metaqa.model.policy.lora.top_layers == 12  # its own, and demo's
    assert metaqa.cold_start.oracle.restate_question and metaqa.cold_start.limit == 1000
    assert metaqa.eval.batch_size == 50 and metaqa.data.hops == 1
    kc = {p: instantiate(compose_config(["method=knowcoder_a1", f"preset={p}"]).cold_start.teachers[0])
          for p in ("demo", "metaqa")}
    assert kc["metaqa"].plan_hops and kc["metaqa"].restate and kc["metaqa"].plan_path and kc["metaqa"].path_kinds
    assert kc["metaqa"].plan_after_look
    assert kc["metaqa"].p_detour == kc["demo"].p_detour
    assert not (kc["demo"].plan_hops or kc["demo"].restate or kc["demo"].plan_path or kc["demo"].path_kinds
                or kc["demo"].plan_after_look)  # measured on MetaQA only
    assert compose_config(["method=knowcoder_a1"]).env.space.end_without_call  # the official RL loop
    isp = compose_config(["method=isp_dtpo", "preset=demo"])
    assert isp.rollout.max_active == 2 and "oracle" not in isp.cold_start  # the tree's own cap only
    assert compose_config(["method=isp_dtpo", "preset=smoke"]).rollout.max_active is None


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("method", METHODS)
def test_a_reward_curriculum_switches_inside_the_presets_rl_stage(method, preset):
    # a component that starts (from_step) or stops (until_step) at or after the last RL
    # iteration never takes its turn: the F0.5 -> F1 switch of a preset sized for 14
    # iterations would never come in a 4-iteration stage
    cfg = compose_config([f"method={method}", f"preset={preset}"])
    steps = [c.get(k) for c in cfg.reward.get("components", []) for k in ("from_step", "until_step")]
    # a share of the stage (< 1) always falls inside it; an iteration number must be below
    # the stage's length, which rl.epochs makes only once the data is known
    iterations = cfg.rl.iterations
    if cfg.rl.get("epochs") and any(s is not None and s >= 1 for s in steps):
        train, _ = instantiate(cfg.data)
        iterations = rl_iterations(cfg.rl.epochs, len(train), cfg.curriculum.batch_size)
    assert all(0 < s < 1 or 0 < s < iterations for s in steps if s is not None), (steps, iterations)


@pytest.mark.parametrize(("method", "preset"), [*((m, "demo") for m in METHODS), ("knowcoder_a1", "metaqa")])
def test_the_preset_fits_its_cold_start_episodes(method, preset, tmp_path):
    # each method's preset lengths were sized on its cold start (kgreason/conf/method_preset/):
    # SFT would cut an episode that overran sft.max_len, a rollout stop one that overran
    # the response budget before its answer
    if preset == "metaqa" and not METAQA.exists():
        pytest.skip(f"MetaQA data not at {METAQA}")
    cfg = compose_config([f"method={method}", f"preset={preset}"])
    p = _build(cfg)
    # a trained ranker shows the gold relations the cold start writes (KG-Reasoner), as in a run
    p.ranker_training(p.train, p.make_env, tmp_path, OmegaConf.to_container(cfg.trainer, resolve=True))
    trajs = p.cold_start(p.train[:: max(1, len(p.train) // 60)][:60], p.make_env, p.policy)  # across the split
    assert len(trajs) >= 20
    fit = length_fit(trajs, cfg.sft.max_len, cfg.model.max_response_tokens, cfg.model.max_new_tokens)
    assert fit.fits, str(fit)


@pytest.mark.parametrize("trainer", ["cpu", "gpu", "ddp"])
def test_trainer_options_are_lightning_arguments(trainer):
    import lightning as L

    cfg = compose_config(["method=kg_r1", "preset=full", f"trainer={trainer}"])
    kw = OmegaConf.to_container(cfg.trainer)
    assert set(kw) <= set(inspect.signature(L.Trainer.__init__).parameters)
    assert kw["strategy"] == ("ddp" if trainer == "ddp" else "auto")


def test_a_tree_reward_on_a_linear_rollout_fails_with_a_typed_error():
    cfg = compose_config(["method=kg_r1", "preset=smoke", "reward=isp_dtpo"])
    reward = instantiate(cfg.reward)
    from kgreason.types import Trajectory

    with pytest.raises(RewardError, match="rollout=tree"):
        reward(Trajectory(sample_id="q", prompt=[]), KBQASample(id="q", question="?"))


def test_the_runner_names_no_part():
    """run.py orders stages; which action space, reward, rollout or cold start runs is config."""
    import ast

    tree = ast.parse((CONFIG_DIR.parent / "pipeline.py").read_text())
    tree.body = tree.body[1:]  # the module docstring shows example command lines
    src = ast.unparse(tree)
    names = set()
    for group in ("method", "reward", "rollout", "cold_start", "curriculum", "env", "objective", "engine"):
        names |= {p.stem for p in (CONFIG_DIR / group).glob("*.yaml")}
    names -= {"none", "f1", "em"}  # an English word and two metric names
    found = sorted(n for n in names if re.search(rf"\b{re.escape(n)}\b", src))
    assert not found, f"the pipeline names parts: {found}"
    for cls in ("HFEngine", "TreeRollout", "MultiTurnRollout", "PathOracle", "CompositeReward", "TreeExperience"):
        assert cls not in src


def test_the_ranker_group_reaches_spaces_that_rank_and_only_those(demo_oxigraph):
    from kgreason.envs import EnvFactory
    from kgreason.errors import ConfigError
    from kgreason.methods.isp_dtpo import ISPActionSpace
    from kgreason.methods.kg_r1 import KGR1ActionSpace

    class Fixed:
        def rank(self, query, candidates, top_k=None):
            return [(c, 1.0) for c in candidates][:top_k]

    ranker = Fixed()
    assert EnvFactory(ISPActionSpace, demo_oxigraph, ranker=ranker)().action_space.ranker is ranker
    with pytest.raises(ConfigError, match="KGR1ActionSpace ranks nothing.*ranker=null"):
        EnvFactory(KGR1ActionSpace, demo_oxigraph, ranker=ranker)
    assert compose_config(["method=kg_r1"]).get("ranker") is None
    assert compose_config(["method=isp_dtpo"]).ranker._target_ == "kgreason.rankers.DenseRanker"


@pytest.mark.parametrize("override, message", [
    ("stage=evl", r"stage='evl' is not a stage; choose one of all, eval, sft, rl \(did you mean 'eval'\?\)"),
    ("checkpoint=/nonexistent/policy.pt", r"checkpoint='/nonexistent/policy.pt': no such file"),
    ("resume=/nonexistent/last.ckpt", r"resume='/nonexistent/last.ckpt': no such file"),
    ("data.stratify=hop", r"data.stratify='hop' is not a question field; choose one of id, .*hops.*\(did you mean 'hops'\?\)"),
    ("sft.bf16=half", r"sft.bf16 must be true, false or 'auto', got 'half'"),
    ("objective.bf16=fp16", r"objective.bf16 must be true, false or 'auto', got 'fp16'"),
])
def test_a_config_that_cannot_run_is_refused_before_anything_loads(override, message):
    cfg = compose_config(["method=kg_r1", "preset=smoke", override])
    with pytest.raises(ConfigError, match=message):
        validate_config(cfg)
    validate_config(compose_config(["method=kg_r1", "preset=smoke"]))  # the same without it is fine


def test_an_empty_split_is_a_dataset_error_naming_the_key():
    cfg = compose_config(["method=kg_r1", "preset=smoke", "data.eval_split=validation"])
    with pytest.raises(DatasetError, match=r"data.eval_split='validation': dataset 'demo' has no questions"):
        build_parts(cfg)


def test_an_unknown_key_is_answered_with_the_keys_that_exist():
    from kgreason.config import check_overrides

    with pytest.raises(ConfigError, match=r"rl.iteration is not a key of rl \(keys: checkpoint_every, epochs, iterations\); "
                                          r"did you mean rl.iterations\?"):
        check_overrides(["method=kg_r1", "preset=smoke", "rl.iteration=3"])
    with pytest.raises(ConfigError, match=r"trainer.acelerator is not a key of trainer .*did you mean trainer.accelerator"):
        check_overrides(["trainer.acelerator=gpu"])
    with pytest.raises(ConfigError, match=r"trainer.rl_iteration is not a key of trainer .*did you mean rl.iterations\?"):
        check_overrides(["trainer.rl_iteration=3"])  # the key lives in another group
    assert check_overrides(["method=kg_r1", "rl.iterations=3"]).rl.iterations == 3


def test_the_command_line_is_checked_before_torch_loads():
    import subprocess
    import sys

    run_py = CONFIG_DIR.parents[1] / "experiments" / "run.py"
    probe = (f"import sys; sys.argv = ['run.py']; sys.path.insert(0, {str(run_py.parent)!r}); import run; "
             "print(sorted(m for m in ('torch', 'lightning', 'transformers', 'pyoxigraph') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == "[]"
    for bad, message in [("rl.iteration=3", "did you mean rl.iterations?"),
                         ("stage=evl", "did you mean 'eval'?"),
                         ("reward=isp_dtpo", "Choose env=isp_dtpo, or a reward that fits")]:
        p = subprocess.run([sys.executable, str(run_py), "method=kg_r1", "preset=smoke", bad],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode != 0 and message in p.stderr, p.stderr[-2000:]
        assert "Traceback" not in p.stderr


@pytest.mark.parametrize("overrides, message", [
    (["method=kg_r1", "reward=isp_dtpo"],
     r"'isp_format' \(reward.components.0\) scores the output of action space 'isp_dtpo', but env uses 'kg_r1'"),
    (["method=isp_dtpo", "rollout=linear"],
     r"'dtpo_progress' \(reward.components.1\) scores tree nodes: it needs rollout=tree, but the rollout is linear\. "
     r"Choose rollout=tree, or a reward that fits rollout=linear and env=isp_dtpo: em, f1$"),
    (["method=isp_dtpo", "reward=kg_r1"], r"action space 'kg_r1', but env uses 'isp_dtpo'.*Choose env=kg_r1"),
    (["method=kg_reasoner", "reward=knowcoder_a1"], r"'knowcoder_format' .*env uses 'kg_reasoner'.*: em, f1, kg_reasoner$"),
])
def test_a_reward_that_does_not_fit_the_rollout_or_the_action_space_is_refused(overrides, message):
    with pytest.raises(ConfigError, match=message):
        validate_config(compose_config([*overrides, "preset=smoke"]))


@pytest.mark.parametrize("method", METHODS)
def test_every_method_and_its_single_module_ablations_pass_the_check(method):
    validate_config(compose_config([f"method={method}", "preset=smoke"]))
    for reward in ("f1", "em"):  # the outcome rewards fit every composition
        validate_config(compose_config([f"method={method}", "preset=smoke", f"reward={reward}"]))


def test_parts_from_outside_kgreason_are_not_judged():
    cfg = compose_config(["method=kg_r1", "preset=smoke"])
    cfg.reward.components[0].name = "my_own_reward"  # not registered: nothing declared
    validate_config(cfg)
    cfg = compose_config(["method=kg_r1", "preset=smoke", "reward=isp_dtpo"])
    cfg.env.space._target_ = "my_package.MySpace"  # an action space we do not know
    cfg.rollout._target_ = "my_package.MyTreeRollout"
    validate_config(cfg)


def test_the_check_knows_every_registered_action_space_and_rollout():
    from hydra.utils import get_class, get_method

    from kgreason.compat import facts
    from kgreason.envs import ACTION_SPACES

    # every shipped env option names a registered action space, found by its target alone
    spaces = {f.stem: OmegaConf.load(f)["space"]["_target_"] for f in (CONFIG_DIR / "env").glob("*.yaml")}
    assert {ACTION_SPACES.name_of(t) for t in spaces.values()} == set(ACTION_SPACES.names())
    for option, target in spaces.items():
        assert ACTION_SPACES.name_of(target) == option and ACTION_SPACES.get(option) is get_class(target)
    assert ACTION_SPACES.name_of("my_package.MySpace") is None
    targets = {OmegaConf.load(f)["_target_"] for f in (CONFIG_DIR / "rollout").glob("*.yaml")}
    kinds = {facts(OmegaConf.load(f)).get("rollout") for f in (CONFIG_DIR / "rollout").glob("*.yaml")}
    assert kinds == {"linear", "tree"} and all(callable(get_method(t)) for t in targets)
