"""The stages of a run, importable: ``kgreason.pipeline.run(cfg)`` with a composed config.

Stages (``stage=all``): ranker training (``ranker_training``; a trainable ranker is part
of the environment) → evaluate the untrained policy → cold start (SFT on the
``cold_start`` builder's trajectories) → RL → evaluate again. Every part is built from
its config group by :mod:`kgreason.compose`; this module only orders the stages and
writes the outputs: the resolved config, checkpoints, metrics CSVs, trajectories JSONL
(appended and flushed as they are made), results as JSON and Markdown, and PNG plots of
the training curves.

The command line is :func:`cli` (``python experiments/run.py`` or ``kgreason-run``),
with the configs shipped in the package (:data:`kgreason.config.CONFIG_DIR`); each stage
is a function of its own (:func:`run_eval`, :func:`cold_start`, :func:`reinforce`) for
scripts that order them differently.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

# only the config checks load before the command line is known to be good; torch,
# Lightning, transformers and the KBs load after (a typo is answered in about a second)
from kgreason.config import CONFIG_DIR, check_overrides, policy_run_of, validate_config
from kgreason.errors import ConfigError, KGReasonError

if TYPE_CHECKING:
    import lightning as L

    from kgreason.compose import Parts
    from kgreason.eval import EvalReport
    from kgreason.training.cold_start_cache import ColdStartCache
    from kgreason.types import KBQASample

log = logging.getLogger("kgreason.run")


def save_policy(policy, path: Path) -> None:
    """Save the trained weights (the LoRA adapter stack, or everything when fully fine-tuned)."""
    from kgreason.training.resume import atomic_save

    atomic_save(policy.checkpoint_state(), path)


def trainer(cfg: DictConfig, out: Path, name: str, logger: Any = None, **kw: Any) -> L.Trainer:
    import lightning as L
    from hydra.utils import instantiate

    loggers = [logger or L.pytorch.loggers.CSVLogger(out, name=name, version="")]
    if cfg.logger.get("extra") is not None:  # logger=tensorboard|wandb: beside the CSV
        loggers.append(instantiate(cfg.logger.extra)(save_dir=str(out), name=name))
    settings = OmegaConf.to_container(cfg.trainer, resolve=True)
    if settings.get("strategy") == "fsdp":  # FSDP2, each process one shard of the data-parallel mesh
        from lightning.pytorch.strategies import ModelParallelStrategy

        # checkpoints as folders of torch.distributed.checkpoint shards: no process gathers the
        # whole weights and optimiser states, and a resume reshards them for any number of processes
        settings["strategy"] = ModelParallelStrategy(
            data_parallel_size=int(settings["devices"]) * int(settings.get("num_nodes", 1)),
            tensor_parallel_size=1, save_distributed_checkpoint=True)
    zero = settings.pop("zero", None)
    if settings.get("strategy") == "deepspeed":  # ZeRO-2/3 (kgreason.training.zero)
        from kgreason.training.zero import deepspeed_strategy

        # RL clips its gradient norm (objective.max_grad_norm), the cold start does not
        settings["strategy"] = deepspeed_strategy(zero or {}, cfg.objective.get("max_grad_norm") if name == "rl" else None,
                                                 str(settings.pop("precision", "32-true")))
    return L.Trainer(**settings, default_root_dir=out, logger=loggers, enable_model_summary=False,
                     log_every_n_steps=1, **kw)


def quiet() -> None:
    """Silence what no user can act on: Lightning's hardware lines and tips, a deprecation
    raised inside Lightning, and the SFT module's unused validation step."""
    for name in ("lightning.pytorch.utilities.rank_zero", "lightning.fabric.utilities.rank_zero"):
        logging.getLogger(name).setLevel(logging.WARNING)
    for message in (r".*isinstance\(treespec, LeafSpec\).*",
                    r".*defined a `validation_step` but have no `val_dataloader`.*"):
        warnings.filterwarnings("ignore", message=message)


def whole_again(p: Parts, cfg: DictConfig) -> None:
    """After a training stage: under ``trainer=fsdp`` or ``trainer=deepspeed`` the trained
    weights gathered from every process's shard into a whole policy model, which the next
    stage shards again and the evaluation (first process only) runs as it is; then the
    policy back on the run's device. Every process must call it; a policy that is not
    sharded is only moved. Under DeepSpeed the model is rebuilt at any stage: the engine's
    gradient hooks stay on the one it trained."""
    from kgreason.compose import build_policy
    from kgreason.training.devices import place_policy, run_device
    from kgreason.training.sharding import is_sharded

    if is_sharded(p.policy.model) or cfg.trainer.get("strategy") == "deepspeed":
        state = p.policy.checkpoint_state()  # a collective: every process gathers the shards
        whole = build_policy(cfg, None)
        whole.load_checkpoint_state(state)
        p.policy.adopt(whole)
    # Lightning's fit ends with the module on the CPU; the evaluations and cold-start
    # episodes between the stages decode where the run trains
    place_policy(p.policy, run_device(cfg.trainer))


def run_hparams(cfg: DictConfig) -> dict[str, Any]:
    """The run's resolved config and its Hydra choices, saved as the modules' hyper-parameters."""
    return {"config": OmegaConf.to_container(cfg, resolve=True),
            "choices": dict(HydraConfig.get().runtime.choices) if HydraConfig.initialized() else {}}


def end_stage(tr: L.Trainer) -> None:
    """End the stage's W&B run: the next stage opens its own (its steps start at 0 again)."""
    for lg in tr.loggers:
        if type(lg).__name__ == "WandbLogger" and getattr(lg, "_experiment", None) is not None:
            lg.experiment.finish()


def run_eval(p: Parts, cfg: DictConfig, out: Path, tag: str) -> EvalReport:
    """Evaluate the policy as it is now; rows and trajectories are written batch by batch.

    With ``eval.resume=true`` the rows an interrupted evaluation left in ``out`` are kept
    and only the other questions are evaluated; the report covers both.
    """
    from tqdm import tqdm

    from kgreason.eval import EvalReport, evaluate, turn_budget
    from kgreason.eval.files import EvalSink

    sink = EvalSink(out, tag, resume=cfg.eval.resume)
    todo = resume_todo(p.dev, sink.done, sink.path)
    # counted in turns: a lock-step batch of questions finishes all at once, its turns one by one
    bar = tqdm(total=turn_budget(p.make_env, todo, cfg.eval.runs), desc=f"eval ({tag}, {len(todo)} questions)",
               unit="turn")
    report, _ = evaluate(p.eval_rollout, p.make_env, todo, batch_size=cfg.eval.batch_size,
                         n_runs=cfg.eval.runs, seed=cfg.seed, progress=bar.update, on_chunk=sink)
    bar.close()
    return EvalReport.from_rows(sink.done + report.rows) if sink.done else report


def resume_todo(dev: list[KBQASample], done: list[dict[str, Any]], path: Path) -> list[KBQASample]:
    """The questions of ``dev`` an earlier evaluation (its rows ``done``, from ``path``) has
    not scored (``eval.resume=true``).

    Raises:
        ConfigError: a row kept is not one of ``dev``'s questions (another evaluation set).
    """
    ids = {s.id for s in dev}
    stray = [r["id"] for r in done if r["id"] not in ids]
    if stray:
        raise ConfigError(f"eval.resume: {len(stray)} of the {len(done)} rows in {path} are not questions of this "
                          f"evaluation (e.g. id {stray[0]!r}); resume with the data settings that wrote them")
    if done:
        log.info("eval.resume: %d of %d questions already scored in %s; evaluating the other %d",
                 len(done), len(dev), path, len(dev) - len(done))
    seen = {r["id"] for r in done}
    return [s for s in dev if s.id not in seen]


def cold_start(p: Parts, cfg: DictConfig, out: Path) -> int:
    """SFT on the cold-start builder's trajectories; returns how many there were."""
    from hydra.utils import instantiate
    from torch.utils.data import DataLoader

    from kgreason.models import resolve_bf16
    from kgreason.training import (
        LengthGroupedBatches,
        SFTLitModule,
        annotate_sft_losses,
        collate,
        length_fit,
    )

    trajs = p.cold_start(p.train, p.make_env, p.policy)
    if not trajs:
        return 0
    log.info("SFT on %d cold-start trajectories (%r)", len(trajs), p.cold_start)
    fit = length_fit(trajs, cfg.sft.max_len, cfg.model.max_response_tokens, cfg.model.max_new_tokens)
    (log.info if fit.fits else log.warning)("cold-start lengths: %s", fit)
    batches = LengthGroupedBatches([len(t.token_ids) for t in trajs], cfg.sft.batch_size, seed=cfg.seed)
    loader = DataLoader(trajs, batch_sampler=batches,
                        collate_fn=functools.partial(collate, pad_id=p.policy.tokenizer.pad_token_id,
                                                     max_len=cfg.sft.max_len))
    steps = sft_steps(cfg, len(loader))
    schedule = None
    if cfg.sft.schedule is not None:  # a schedule over the steps that run (sft.epochs makes them)
        total = {"total_steps": steps} if "total_steps" in cfg.sft.schedule else {}
        schedule = instantiate(cfg.sft.schedule, **total)
    # bf16 for the training passes where the host multiplies it faster; weights stay as they are
    bf16 = not p.policy.bf16 and resolve_bf16(cfg.sft.bf16, p.policy.device, "train")
    if bf16:
        log.info("SFT under bf16 autocast (sft.bf16=%s); weights and generation stay float32", cfg.sft.bf16)
    module = SFTLitModule(p.policy, lr=cfg.sft.lr, lr_lambda=schedule, bf16=bf16, hparams=run_hparams(cfg))
    # epochs bounded too, so that the progress bar counts "epoch 2/3", not "2/-2"
    epochs = -(-steps // max(1, len(loader)))
    # a single epoch cut short by sft.steps: its bar counts the steps that run ("100/100", not "100/133")
    limit = steps if epochs == 1 else None
    # under data parallelism the batch sampler shards itself (Lightning cannot wrap it)
    tr = trainer(cfg, out, "sft", max_steps=steps, max_epochs=epochs, enable_checkpointing=False,
                 limit_train_batches=limit, use_distributed_sampler=False)
    tr.fit(module, loader)
    end_stage(tr)
    whole_again(p, cfg)
    if tr.is_global_zero:
        save_policy(p.policy, out / "checkpoints" / "policy_sft.pt")
        # what a resumed run reports of the cold start it does not redo
        (out / "checkpoints" / "cold_start.json").write_text(json.dumps(
            {"sft_trajectories": len(trajs), "cold_start_report": getattr(p.cold_start, "report", None)},
            default=str))
        # each question's SFT loss, for curricula that sample by it
        (out / "sft_losses.json").write_text(json.dumps(module.question_losses, indent=0, sort_keys=True))
    annotate_sft_losses(p.train, module.question_losses)
    return len(trajs)


def sft_steps(cfg: DictConfig, batches_per_epoch: int) -> int:
    """The cold start's optimiser steps: ``sft.epochs`` passes over its batches when set,
    else ``sft.steps``.

    >>> from omegaconf import OmegaConf
    >>> steps = OmegaConf.create({"sft": {"steps": 100, "epochs": None}})
    >>> epochs = OmegaConf.create({"sft": {"steps": 100, "epochs": 8}})
    >>> sft_steps(steps, 30), sft_steps(epochs, 30)
    (100, 240)
    """
    epochs = cfg.sft.get("epochs")
    return int(epochs) * batches_per_epoch if epochs else int(cfg.sft.steps)


def sft_wanted(cfg: DictConfig) -> bool:
    """Whether the run has a cold-start SFT stage (``sft.steps`` or ``sft.epochs`` set)."""
    return cfg.sft.steps > 0 or bool(cfg.sft.get("epochs"))


def reuse_cache(cfg: DictConfig, results: dict[str, Any]) -> ColdStartCache | None:
    """The run's :class:`~kgreason.training.cold_start_cache.ColdStartCache`, or None when
    ``cold_start_cache`` is unset."""
    if not cfg.get("cold_start_cache"):
        return None
    from kgreason.training.cold_start_cache import ColdStartCache, cold_start_key

    return ColdStartCache(cfg.cold_start_cache, *cold_start_key(cfg, results["precision"].get("sft")))


def check_questions(p: Parts, cfg: DictConfig, results: dict[str, Any]) -> None:
    """Look the questions' topic entities and answers up in the KB (a sample of 500),
    name what it lacks in the log and ``results.json`` (``data_check``), and keep, drop or
    refuse those questions as ``data.on_missing`` says."""
    from kgreason.data.checks import apply_kb_check, check_against_kb

    check = check_against_kb([*p.train, *p.dev], p.kb, seed=cfg.seed)
    results["data_check"] = check.as_dict()
    on_missing = (cfg.get("data") or {}).get("on_missing", "keep")
    # one call: one warning (or error) for both splits
    kept = {q.id for q in apply_kb_check([*p.train, *p.dev], check, on_missing)}
    p.train = [q for q in p.train if q.id in kept]
    p.dev = [q for q in p.dev if q.id in kept]


def load_cold_start(p: Parts, where: Path, results: dict[str, Any], losses: Path | None = None) -> None:
    """Give a run a cold start it does not redo (a killed run's, resumed, or another run's,
    reused): the SFT weights in ``where`` (``policy_sft.pt``), which RL's reference and the
    saved policy build on (``reinforce`` merges them as an uninterrupted run does), each
    question's SFT loss (``losses``, by default ``where/sft_losses.json``;
    curricula that sample by it read them) and what ``results.json`` said of it
    (``cold_start.json``)."""
    import torch

    from kgreason.training import annotate_sft_losses

    sft = where / "policy_sft.pt"
    if sft.is_file():
        p.policy.load_checkpoint_state(torch.load(sft, map_location="cpu"))
        log.info("on the cold start's weights (%s)", sft)
    losses = losses or where / "sft_losses.json"
    if losses.is_file():
        annotate_sft_losses(p.train, json.loads(losses.read_text(encoding="utf-8")))
    record = where / "cold_start.json"
    if record.is_file():
        kept = json.loads(record.read_text(encoding="utf-8"))
        results["sft_trajectories"] = kept.get("sft_trajectories")
        if kept.get("cold_start_report"):
            results["cold_start_report"] = kept["cold_start_report"]


def take_sft_losses(p: Parts, run: Path | None, results: dict[str, Any]) -> None:
    """RL started from another run's checkpoint samples its questions as that run's own RL
    stage would have: by the SFT losses the run wrote (``run/sft_losses.json``), which the
    hard-case curricula read. Without them such a curriculum finds no hard case and keeps
    sampling every question."""
    from kgreason.training import annotate_sft_losses

    src = run / "sft_losses.json" if run is not None else None
    if src is None or not src.is_file():
        return
    n = annotate_sft_losses(p.train, json.loads(src.read_text(encoding="utf-8")))
    results["sft_losses_from"] = {"file": str(src), "questions": n}
    log.info("SFT losses of %d of %d training questions taken from %s", n, len(p.train), src)


def reinforce(p: Parts, cfg: DictConfig, out: Path, start: int = 0) -> None:
    """The RL stage; ``start`` > 0 resumes ``cfg.resume`` after that many iterations."""
    import lightning as L
    from torch.utils.data import DataLoader

    from kgreason.training import JsonlSink, RLLitModule
    from kgreason.training.distributed import is_first_process
    from kgreason.training.progress import IterationProgressBar
    from kgreason.training.resume import IterationCheckpoint, ResumingCSVLogger, drop_jsonl_rows

    # RL's random numbers (its new adapters' initial weights, the sampled rollouts) follow
    # from the seed alone, not from what ran before it: a run that reused its cold start
    # (cold_start_cache) samples what one that trained it samples
    L.seed_everything(cfg.seed, verbose=False)
    p.policy.merge_lora()  # RL's reference (adapters off) is what RL starts from: SFT's or the checkpoint's weights
    module = RLLitModule(p.policy, p.source, p.make_env, p.objective, sink=JsonlSink(out / "trajectories.jsonl"),
                         hparams=run_hparams(cfg))
    if module.bf16:
        log.info("RL updates under bf16 autocast (objective.bf16=%s); weights and rollouts stay float32",
                 cfg.objective.bf16)
    if start:
        # what the killed run wrote after its checkpoint is redone now: drop it first, in the
        # first process only (another one, started later, would drop the rows redone by then)
        if is_first_process():
            n = drop_jsonl_rows(out / "trajectories.jsonl",
                                lambda r: (r.get("stage") == "train" and r.get("step", -1) >= start)
                                or r.get("stage") == "eval/trained")
            log.info("resuming RL after iteration %d; dropped %d trajectories written after the checkpoint", start, n)
        try:
            prompts = p.prompts(p.train, start=start)
        except TypeError as e:
            raise ConfigError(f"curriculum {cfg.curriculum.get('_target_')} takes no `start`: "
                              "it cannot resume at a later batch") from e
    else:
        prompts = p.prompts(p.train)
    tr = trainer(cfg, out, "rl", logger=ResumingCSVLogger(out, name="rl", version="", start=start),
                 max_steps=-1, max_epochs=1, enable_checkpointing=False,
                 callbacks=[IterationCheckpoint(out / "checkpoints" / "rl", every=cfg.rl.checkpoint_every),
                            IterationProgressBar(cfg.rl.iterations)])
    # One epoch of an endless prompt stream, which the module ends after its iterations.
    with warnings.catch_warnings():
        # resuming mid-epoch of an endless stream: the stream itself skips what was done
        warnings.filterwarnings("ignore", message=".*resuming from a mid-epoch checkpoint.*")
        try:
            tr.fit(module, DataLoader(prompts, batch_size=None), ckpt_path=cfg.resume)
        except RuntimeError as e:
            if cfg.resume and "Error(s) in loading state_dict" in str(e):  # a checkpoint moved out of its run
                raise ConfigError(f"resume={str(cfg.resume)!r} does not fit this run's policy: "
                                  f"{str(e).splitlines()[0]} ({str(e).count('size mismatch')} size mismatches); "
                                  "resume with the overrides that wrote it") from None
            raise
    end_stage(tr)
    whole_again(p, cfg)
    if tr.is_global_zero:
        save_policy(p.policy, out / "checkpoints" / "policy.pt")


@hydra.main(config_path=str(CONFIG_DIR), config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> dict[str, Any]:
    try:
        results = run(cfg)
    except KGReasonError as e:
        # a user's error (a bad file, a KB that went away): one line, no traceback, unless
        # asked for (HYDRA_FULL_ERROR=1); a sweep job raises, so the sweep reports it
        if os.environ.get("HYDRA_FULL_ERROR") == "1" or HydraConfig.get().mode != RunMode.RUN:
            raise
        log.error("%s: %s", type(e).__name__, e)
        sys.exit(f"{type(e).__name__}: {e}")
    from kgreason.training import leave_process_group

    leave_process_group()  # trainer=ddp: every process, after a clean end only
    return results


def split_record(cfg: DictConfig) -> dict[str, str] | None:
    """What ``results.json`` records of the run's splits, their roles
    (:mod:`kgreason.data.roles`) included; a sweep that would tune on the report split is
    refused here, before anything loads.

    Raises:
        ConfigError: a sweep varies a tuned value and evaluates on the report split
            (:func:`~kgreason.data.roles.check_report_sweep`).
    """
    from kgreason.data.roles import check_report_sweep, eval_role

    data = cfg.get("data") or {}
    if "name" not in data:
        return None
    name, train, evaluated = str(data.name), str(data.get("train_split")), str(data.get("eval_split"))
    if HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN:
        check_report_sweep(name, evaluated, swept_keys(sys.argv[1:], HydraConfig.get().sweeper.get("params")))
    role = eval_role(name, evaluated)
    if role in ("report", "covers report") and cfg.stage in ("all", "eval"):
        log.warning("evaluating on %r, the report split of %r: a figure to report, not to choose settings by "
                    "(docs/data.md#three-splits)", evaluated, name)
    return {"dataset": name, "train": train, "eval": evaluated, "eval_role": role}


def run(cfg: DictConfig) -> dict[str, Any]:
    """Every stage the config asks for, in one process; the results ``main`` returns."""
    out = Path(HydraConfig.get().runtime.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
    validate_config(cfg)
    split = split_record(cfg)
    quiet()
    import lightning as L
    from lightning.fabric.utilities.rank_zero import rank_zero_only

    from kgreason.compose import build_parts
    from kgreason.eval import EvalReport
    from kgreason.eval.files import read_rows
    from kgreason.training.cost import StageCost
    from kgreason.training.devices import place_policy, run_device
    from kgreason.training.distributed import share_cpu_threads
    from kgreason.training.resume import rl_progress

    L.seed_everything(cfg.seed, verbose=False)
    cost = StageCost()  # results.json's "cost": wall, CPU (the query process too) and peak RSS a stage
    # trainer=ddp: Lightning starts the other processes at the first fit, running this
    # script again; they train their share and leave evaluation and results to the first
    lead = rank_zero_only.rank == 0
    results: dict[str, Any] = {"output_dir": str(out)}
    if split:
        results["split"] = split
    device = run_device(cfg.trainer)
    devices = cfg.trainer.get("devices")
    if device.type == "cpu" and isinstance(devices, int):
        # before Lightning starts the other processes, which inherit OMP_NUM_THREADS
        share_cpu_threads(devices)
    with cost.stage("start"):
        p = build_parts(cfg)
        check_questions(p, cfg, results)
        place_policy(p.policy, device)  # every stage decodes there, not only those Lightning fits
    results["device"] = str(device)
    from kgreason.models.precision import stage_precisions

    # decided from the host's declared capabilities, so known before any stage runs
    results["precision"] = stage_precisions(p.policy.bf16, cfg.sft.get("bf16"), cfg.objective.get("bf16"),
                                            p.policy.device)
    decodes_in = getattr(p.engine, "precision", None)  # an engine on its own weights copy (ct2, ort)
    if decodes_in:
        results["precision"].update(rollouts=decodes_in, eval=decodes_in)
    log.info("policy %s; precision %s", type(p.policy.model).__name__,
             ", ".join(f"{k}: {v}" for k, v in results["precision"].items()))
    reports: dict[str, EvalReport] = {}
    # a resumed run continues the killed one's RL stage, in its folder, and keeps its evaluations
    start = rl_progress(cfg.resume) if cfg.resume else 0
    if cfg.resume:
        results["resumed"] = {"checkpoint": str(cfg.resume), "after_iteration": start}
        for tag in ("untrained", "sft"):
            if (out / f"eval_{tag}.jsonl").is_file():
                reports[tag] = EvalReport.from_rows(read_rows(out / f"eval_{tag}.jsonl"))
        load_cold_start(p, out / "checkpoints", results, losses=out / "sft_losses.json")
    elif cfg.stage == "rl" and cfg.checkpoint:
        take_sft_losses(p, policy_run_of(cfg.checkpoint), results)

    # the ranker is part of the environment: trained (or reloaded) before any episode is
    # played, so evaluations and cold-start episodes see the ranking the policy will get
    with cost.stage("ranker_training"):
        figures = p.ranker_training(p.train, p.make_env, out, OmegaConf.to_container(cfg.trainer, resolve=True),
                                   from_run=policy_run_of(cfg.checkpoint))
    if figures:
        results["ranker"] = figures
    else:  # a method without a trainable ranker: nothing ran
        del cost.stages["ranker_training"]

    if lead and not cfg.resume and (cfg.stage == "eval" or (cfg.stage == "all" and cfg.eval.untrained)):
        tag = "untrained" if cfg.stage == "all" else "checkpoint"
        with cost.stage(f"eval/{tag}"):
            reports[tag] = run_eval(p, cfg, out, tag)

    builds = not cfg.resume and cfg.stage in ("all", "sft") and sft_wanted(cfg)
    cache = reuse_cache(cfg, results) if builds else None
    sft_eval = lead and cfg.stage == "all" and cfg.eval.after_sft
    if cache is not None and cache.hit():
        with cost.stage("cold_start"):  # another run's, with this run's key
            # every data-parallel process loads the entry; the lead copies it into the run
            restored = lead and cache.restore(out, with_eval=bool(sft_eval))
            load_cold_start(p, cache.entry, results)
        results["cold_start_reused"] = {"cache": str(cache.entry), **cache.made_by()}
        log.info("cold start reused from %s (made by %s)", cache.entry, results["cold_start_reused"].get("run"))
        if restored:
            reports["sft"] = EvalReport.from_rows(read_rows(out / "eval_sft.jsonl"))
        elif sft_eval and results.get("sft_trajectories"):
            with cost.stage("eval/sft"):
                reports["sft"] = run_eval(p, cfg, out, "sft")
    elif builds:
        with cost.stage("cold_start"):  # building the episodes and SFT on them
            results["sft_trajectories"] = cold_start(p, cfg, out)
        if getattr(p.cold_start, "report", None):  # e.g. acceptance per teacher and question type
            results["cold_start_report"] = p.cold_start.report
        if getattr(p.cold_start, "skipped", None):  # questions no teacher episode was accepted for
            results["cold_start_skipped"] = p.cold_start.skipped
        if sft_eval and results["sft_trajectories"]:
            with cost.stage("eval/sft"):
                reports["sft"] = run_eval(p, cfg, out, "sft")
        if cache is not None and lead:
            cache.store(out, row=cfg.get("row"))

    if cfg.stage in ("all", "rl") and cfg.rl.iterations > 0:
        with cost.stage("rl"):
            reinforce(p, cfg, out, start)
    if not lead:
        return results

    if cfg.stage == "all":
        with cost.stage("eval/trained"):
            reports["trained"] = run_eval(p, cfg, out, "trained")

    results["eval"] = {k: {"overall": r.overall, "by_level": r.by_level, "by_qtype": r.by_qtype, "by_hops": r.by_hops}
                       for k, r in reports.items()}
    results["cost"] = cost.as_dict()
    (out / "results.json").write_text(json.dumps(results, indent=2))
    choices = HydraConfig.get().runtime.choices
    # what a reader needs to tell two runs apart: the method, the preset, and the KB and questions
    what = " ".join(f"{g}={choices.get(g)}" for g in ("method", "preset", "kb", "data"))
    md = [f"# Results: {what}"]
    if split:
        md.append(f"Evaluated on split `{split['eval']}` (role: **{split['eval_role']}**) of `{split['dataset']}`; "
                  f"trained on `{split['train']}`.")
    md += [r.markdown(k) for k, r in reports.items()]
    md.append(cost.markdown())
    (out / "results.md").write_text("\n\n".join(md) + "\n")
    from kgreason.eval.plots import plot_run  # the runner extra: matplotlib, pandas

    plot = plot_run(out, title=f"{what}  ({out.name})")
    results["plots"] = [str(plot)] if plot else []
    for k, r in reports.items():
        print(f"[{k}] dev F1 {r.overall['f1']:.3f}  Hit@1 {r.overall['hit1']:.3f}  (n={r.overall['n']})")
    bill = results["cost"]
    print(f"cost: training {bill['training']['cpu_min']:.1f} CPU-minutes, run {bill['total']['cpu_min']:.1f} "
          f"CPU-minutes in {bill['total']['wall_s'] / 60:.1f} min wall (results.md)")
    print(f"outputs: {out}")
    return results


#: Hydra flags that take a value (the value is not an override)
_VALUED_FLAGS = {"--cfg", "-c", "--package", "-p", "--config-path", "-cp", "--config-name", "-cn",
                 "--config-dir", "-cd", "--experimental-rerun", "--shell-completion", "-sc"}
#: Hydra flags that only print (nothing runs, nothing to check)
_PRINT_ONLY = {"--help", "-h", "--hydra-help", "--version", "--info", "-i", "--shell-completion", "-sc"}
#: a sweep larger than this is checked on its first combinations only
MAX_CHECKED_JOBS = 64


def command_overrides(argv: list[str]) -> tuple[list[str], bool] | None:
    """The overrides of a command line and whether it is a multirun; ``None`` for a
    command that only prints (``--help``, ``--info``).

    >>> command_overrides(["method=mine", "--cfg", "job", "-m", "reward=f1,em", "hydra.verbose=true"])
    (['method=mine', 'reward=f1,em'], True)
    """
    if any(a in _PRINT_ONLY for a in argv):
        return None
    out, multirun, skip = [], False, False
    for a in argv:
        if skip:
            skip = False
        elif a in _VALUED_FLAGS:
            skip = True
        elif a in ("-m", "--multirun"):
            multirun = True
        elif not a.startswith("-") and not a.lstrip("+~").startswith("hydra"):
            out.append(a)
    return out, multirun


def sweep_jobs(overrides: list[str], limit: int = MAX_CHECKED_JOBS) -> list[list[str]]:
    """The jobs of a ``-m`` sweep (choice and range sweeps expanded, as Hydra's basic sweeper
    does), at most ``limit`` of them.

    >>> sweep_jobs(["method=mine", "reward=f1,em", "seed=range(2)"])
    [['method=mine', 'reward=f1', 'seed=0'], ['method=mine', 'reward=f1', 'seed=1'], ['method=mine', 'reward=em', 'seed=0'], ['method=mine', 'reward=em', 'seed=1']]
    """
    import itertools

    from hydra.core.override_parser.overrides_parser import OverridesParser

    axes = []
    for o in OverridesParser.create().parse_overrides(overrides):
        key = o.get_key_element()
        values = list(o.sweep_string_iterator()) if o.is_sweep_override() else [o.get_value_element_as_str()]
        axes.append([f"{key}={v}" for v in values])
    return [list(job) for job in itertools.islice(itertools.product(*axes), limit)]


def config_dirs(argv: list[str]) -> list[str]:
    """The folders ``--config-dir``/``-cd`` add to Hydra's config search path.

    >>> config_dirs(["-cd", "mine", "method=mine", "--config-dir=theirs"])
    ['mine', 'theirs']
    """
    out = []
    for i, a in enumerate(argv):
        if a in ("--config-dir", "-cd") and i + 1 < len(argv):
            out.append(argv[i + 1])
        elif a.startswith("--config-dir="):
            out.append(a.split("=", 1)[1])
    return out


def swept_keys(argv: list[str], sweeper_params: Any = None) -> set[str]:
    """The keys a ``-m`` sweep varies: the command line's sweeps and ``hydra.sweeper.params``
    (an ``ablation`` config's rows).

    >>> sorted(swept_keys(["-m", "method=mine", "reward=f1,em", "seed=range(2)"], {"ablation_row": "a,b"}))
    ['ablation_row', 'reward', 'seed']
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = command_overrides(argv)
    keys = set(sweeper_params or {})
    if parsed is not None:
        keys |= {o.get_key_element().lstrip("+~") for o in OverridesParser.create().parse_overrides(parsed[0])
                 if o.is_sweep_override()}
    return keys


def _precheck(argv: list[str]) -> None:
    """Answer a bad override before Hydra and the heavy imports: a single run, ``--cfg job``
    and every job of a ``-m`` sweep (each job named in the message)."""
    parsed = command_overrides(argv)
    if parsed is None:
        return
    overrides, multirun = parsed
    try:
        jobs = sweep_jobs(overrides) if multirun else [overrides]
    except Exception as e:  # the sweep syntax itself: Hydra says it best, when it parses the line
        log.debug("sweep not expanded for the precheck: %s", e)
        return
    swept = swept_keys(argv) if multirun else set()
    # a user's own configs (--config-dir) are searched as Hydra will search them
    extra = [f"hydra.searchpath=[{','.join('file://' + str(Path(d).resolve()) for d in dirs)}]"] if (
        dirs := config_dirs(argv)) else []
    for job in jobs:
        try:
            cfg = check_overrides([*job, *extra])
            validate_config(cfg)
            if swept and "name" in (cfg.get("data") or {}):
                from kgreason.data.roles import check_report_sweep

                check_report_sweep(str(cfg.data.name), str(cfg.data.eval_split), swept)
        except ConfigError as e:
            where = f" (sweep job {' '.join(job)})" if multirun else ""
            sys.exit(f"ConfigError{where}: {e}")


def cli() -> None:
    """``python experiments/run.py <overrides>``: check the command line, then run."""
    _precheck(sys.argv[1:])
    main()
