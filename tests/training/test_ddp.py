"""Data parallelism (``trainer=ddp``, ``trainer=fsdp``, ``trainer=deepspeed``): two CPU
processes (gloo) make the RL update and the SFT step one process makes on the combined
batch, and end SFT knowing every question's loss; under FSDP and ZeRO-3 each holds half of the weights."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kgreason.models import CausalLMPolicy

WORKER = Path(__file__).with_name("ddp_rl_worker.py")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """The worker's outputs with one process and with two (``weights_<devices>.pt``)."""
    d = tmp_path_factory.mktemp("ddp")
    for devices, kind in ((1, "ddp"), (2, "ddp"), (2, "fsdp")):
        name = f"weights_{devices}{'_fsdp' * (kind == 'fsdp')}.pt"
        p = subprocess.run([sys.executable, str(WORKER), str(d / name), str(devices), kind],
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
    return d


@pytest.fixture(scope="module")
def zero_runs(runs) -> Path:
    """The worker's outputs under DeepSpeed ZeRO-2 and ZeRO-3 (``weights_2_<kind>.pt``), beside ``runs``."""
    pytest.importorskip("deepspeed", reason="the deepspeed extra (make install) is not installed")
    for kind in ("zero2", "zero3"):
        p = subprocess.run([sys.executable, str(WORKER), str(runs / f"weights_2_{kind}.pt"), "2", kind],
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
    return runs


@pytest.mark.parametrize("kind", ["ddp", "fsdp"])
def test_two_processes_update_as_one_on_the_combined_batch(runs, kind):
    check_update_as_one(runs, "weights_2.pt" if kind == "ddp" else "weights_2_fsdp.pt")


@pytest.mark.parametrize("kind", ["zero2", "zero3"])
def test_deepspeed_processes_update_as_one_on_the_combined_batch(zero_runs, kind):
    """ZeRO-2 and ZeRO-3 on DeepSpeed's CPU accelerator: every case but PPO (a second optimiser)."""
    check_update_as_one(zero_runs, f"weights_2_{kind}.pt", cases={"ppo"})


@pytest.mark.slow
def test_deepspeed_with_offloading_updates_as_one_process(zero_runs):
    """ZeRO-3 with the optimiser states and the weights offloaded to host memory."""
    p = subprocess.run([sys.executable, str(WORKER), str(zero_runs / "weights_2_zero3_offload.pt"), "2", "zero3_offload"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    check_update_as_one(zero_runs, "weights_2_zero3_offload.pt", cases={"ppo"})


@pytest.mark.parametrize("kind", ["ddp", "fsdp", "zero2", "zero3"])
def test_sft_steps_of_two_processes_are_one_process_steps_on_the_combined_batch(request, kind):
    """Each process's batch holds a different number of policy tokens (14 vs 7, 12 vs 8):
    the loss is the combined batch's token mean, not the mean of the processes' means."""
    d = request.getfixturevalue("zero_runs" if kind.startswith("zero") else "runs")
    one = torch.load(d / "weights_1.pt.sft_weights.pt")
    two = torch.load(d / f"weights_2{'' if kind == 'ddp' else '_' + kind}.pt.sft_weights.pt")
    # LoRA's B starts at 0: the two steps moved it
    assert one.keys() == two.keys() and max(float(v.abs().max()) for k, v in one.items() if "lora_B" in k) > 1e-3
    for k in one:
        torch.testing.assert_close(two[k], one[k], rtol=0, atol=5e-6, msg=k)


def test_deepspeed_zero3_processes_each_hold_half_of_the_weights(zero_runs):
    whole = json.loads((zero_runs / "weights_1.pt.held0.json").read_text())
    for rank in (0, 1):
        part = json.loads((zero_runs / f"weights_2_zero3.pt.held{rank}.json").read_text())
        assert part["total"] == whole["total"] and abs(part["held"] / whole["total"] - 0.5) < 0.01
        # ZeRO-2 partitions gradients and optimiser states only: the weights stay whole
        assert json.loads((zero_runs / f"weights_2_zero2.pt.held{rank}.json").read_text()) == whole
        ddp = json.loads((zero_runs / f"weights_2.pt.sft{rank}.json").read_text())
        for kind in ("zero2", "zero3"):  # SFT under ZeRO: every question's loss as under DDP
            zero = json.loads((zero_runs / f"weights_2_{kind}.pt.sft{rank}.json").read_text())
            assert zero.keys() == ddp.keys() and all(abs(zero[q] - ddp[q]) < 1e-5 for q in ddp), kind


def check_update_as_one(runs: Path, name: str, cases: set[str] = frozenset()) -> None:
    """The weights two processes left (``name``) are one process's on the combined batch,
    in every case of the worker but ``cases`` (which ``name`` does not have)."""
    one = torch.load(runs / "weights_1.pt")
    two = torch.load(runs / name)
    assert set(one) == {"all", "masked:q1,q2", "none:q1,q2", "micro", "full", "turn:", "ppo"}
    assert set(two) == set(one) - cases
    for case in two:
        if case == "full":  # every weight trained: they moved from the tiny model's initial ones
            start = CausalLMPolicy.tiny(lora=None).model.state_dict()
            assert max(float((v - start[k]).abs().max()) for k, v in one[case].items()) > 1e-4
        else:
            lora_b = [v for k, v in one[case].items() if "lora_B" in k]  # B starts at 0
            assert max(float(v.abs().max()) for v in lora_b) > 1e-3, case  # the updates moved the weights
        # the processes hold different token counts: averaging their mean losses would miss by ~1e-2
        assert one[case].keys() == two[case].keys()
        # full fine-tuning: Adam scales a weight's step by its gradient's size, so a weight whose
        # gradient is near 0 turns reduction-order noise into steps of up to lr × 0.1 (4 steps
        # move a weight by at most 4·10⁻³; half a gradient missing would miss by about that)
        atol = 1e-4 if case == "full" else 5e-6
        for k in one[case]:
            torch.testing.assert_close(two[case][k], one[case][k], rtol=0, atol=atol, msg=f"{case}: {k}")
    # passes of one row (a process with fewer rows makes zero-loss passes) update as one pass
    for k in one["all"]:
        torch.testing.assert_close(one["micro"][k], one["all"][k], rtol=0, atol=5e-6, msg=f"micro: {k}")


def test_fsdp_processes_each_hold_half_of_the_weights(runs):
    whole = json.loads((runs / "weights_1.pt.held0.json").read_text())
    assert whole["held"] == whole["total"]
    for rank in (0, 1):
        shard = json.loads((runs / f"weights_2_fsdp.pt.held{rank}.json").read_text())
        assert shard["total"] == whole["total"] and abs(shard["held"] / whole["total"] - 0.5) < 0.01
        # SFT sharded: every question's loss as under DDP
        fsdp, ddp = (json.loads((runs / f"{w}.sft{rank}.json").read_text()) for w in ("weights_2_fsdp.pt", "weights_2.pt"))
        assert fsdp.keys() == ddp.keys() and all(abs(fsdp[q] - ddp[q]) < 1e-5 for q in ddp)
    ddp = json.loads((runs / "weights_2.pt.held0.json").read_text())
    assert ddp["held"] == ddp["total"]  # DDP: every process a whole copy


def test_every_process_ends_sft_with_every_questions_loss(runs):
    alone = json.loads((runs / "weights_1.pt.sft0.json").read_text())
    first, second = (json.loads((runs / f"weights_2.pt.sft{rank}.json").read_text()) for rank in (0, 1))
    # two steps of two: one process sees half the questions, two processes each train on two
    # of the four batches, and the hard-case stream of each needs all eight
    assert len(alone) == 4 and first == second
    assert set(first) == {f"q{i}" for i in range(8)} and all(v > 0 for v in first.values())
    # the first step's losses do not depend on the process count (same initial weights)
    step0 = [q for q in alone if q in first and abs(alone[q] - first[q]) < 1e-6]
    assert len(step0) >= 2
