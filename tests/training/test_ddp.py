"""Data-parallel RL (``trainer=ddp``): two CPU processes (gloo) make the update one process
makes on the combined batch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import torch

WORKER = Path(__file__).with_name("ddp_rl_worker.py")


def trained(tmp_path: Path, devices: int) -> dict[str, dict[str, torch.Tensor]]:
    out = tmp_path / f"weights_{devices}.pt"
    p = subprocess.run([sys.executable, str(WORKER), str(out), str(devices)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return torch.load(out)


def test_two_processes_update_as_one_on_the_combined_batch(tmp_path):
    one, two = trained(tmp_path, 1), trained(tmp_path, 2)
    assert set(one) == set(two) == {"all", "masked:q1,q2", "none:q1,q2"}
    for case in one:
        lora_b = [v for k, v in one[case].items() if "lora_B" in k]  # B starts at 0
        assert max(float(v.abs().max()) for v in lora_b) > 1e-3, case  # the updates moved the weights
        # the processes hold different token counts: averaging their mean losses would miss by ~1e-2
        assert one[case].keys() == two[case].keys()
        for k in one[case]:
            torch.testing.assert_close(two[case][k], one[case][k], rtol=0, atol=5e-6, msg=f"{case}: {k}")
