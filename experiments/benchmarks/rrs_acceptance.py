"""Referenced vs standard rejection sampling (KBQA-R1 Table VII) on the demo training set:
per question type, the acceptance rate (F1 ≥ 0.9 and the tag format) with the gold actions
shown step by step (the paper), all at once, and not at all, side by side.

    python experiments/benchmarks/rrs_acceptance.py [--limit 400] [--engine 20]

``--engine N`` also runs SmolLM2-135M-Instruct through the HF engine as a teacher on N
questions (slow on a CPU: ~6 turns of generation per episode).
"""

from __future__ import annotations

import argparse
import time

from kgreason.data import load_dataset, load_demo_kb
from kgreason.data.splits import sample_subset
from kgreason.envs import EnvFactory
from kgreason.methods.kbqa_r1 import KBQAR1ActionSpace, ReferencedRejectionSampledColdStart
from kgreason.methods.kbqa_r1.teacher import ScriptedKBQAR1Teacher
from kgreason.models import CausalLMPolicy
from kgreason.rankers import DenseRanker

MODES = ("stepwise", "all", "none")


def run(teacher, questions, make, policy) -> tuple[dict, dict, float]:
    out, kept = {}, {}
    t0 = time.perf_counter()
    for ref in MODES:
        b = ReferencedRejectionSampledColdStart([teacher], reference=ref, attempts=2, max_per_question=3)
        try:
            kept[ref] = len(b(questions, make, policy))
        except Exception:  # noqa: BLE001 - no episode passed: reported as 0
            kept[ref] = 0
        out[ref] = b.report.get(teacher.name, {})
    return out, kept, time.perf_counter() - t0


def table(name: str, report: dict, kept: dict, secs: float) -> None:
    print(f"\n{name}  ({secs:.0f} s)")
    print(f"{'type':<12} " + " ".join(f"{m:>9}" for m in MODES))
    for qtype in sorted(report["stepwise"]):
        print(f"{qtype:<12} " + " ".join(f"{report[m].get(qtype, {}).get('rate', 0.0):>9.2f}" for m in MODES))
    print(f"{'kept':<12} " + " ".join(f"{kept[m]:>9}" for m in MODES))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=400)
    ap.add_argument("--engine", type=int, default=0, help="questions for the SmolLM2 teacher (0: skip)")
    args = ap.parse_args()
    kb = load_demo_kb()
    train = sample_subset(load_dataset("demo", split="train"), args.limit, 2)  # every question type
    make = EnvFactory(KBQAR1ActionSpace, kb, max_turns=6, ranker=DenseRanker())
    tiny = CausalLMPolicy.tiny()
    table("scripted teacher", *run(ScriptedKBQAR1Teacher(), train, make, tiny))
    if args.engine:
        from kgreason.rollout import HFEngine
        from kgreason.training.teachers import EngineTeacher

        pol = CausalLMPolicy.from_pretrained("smollm2-135m-instruct")
        teacher = EngineTeacher(HFEngine(pol), pol.chat_ids, max_new_tokens=112, name="smollm2")
        table("SmolLM2-135M-Instruct teacher", *run(teacher, train[: args.engine], make, tiny))


if __name__ == "__main__":
    main()
