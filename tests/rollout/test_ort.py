"""ORTEngine against HFEngine: same greedy tokens and the trainer's log-probs at float32,
stop strings, export again after updates, seeded sampling, typed errors; and a lock-step
rollout on the real SmolLM2 with the demo KG."""

from __future__ import annotations

import pytest
import torch

from kgreason.errors import KGReasonError
from kgreason.models import CausalLMPolicy
from kgreason.rollout import HFEngine, ORTEngine
from tests.rollout.test_ct2 import LORA, lora_tiny, nudge, prompts, tokens
from tests.rollout.test_logprobs import assert_trainer_agrees

pytest.importorskip("onnxruntime_genai")


def test_float32_greedy_equals_hf_with_merged_adapters():
    policy = lora_tiny()
    ps = prompts(policy, 4)  # prompts of different lengths in one batch
    hf = HFEngine(policy).generate(ps, max_new_tokens=16, greedy=True)
    ort = ORTEngine(policy).generate(ps, max_new_tokens=16, greedy=True)
    assert tokens(ort) == tokens(hf)
    assert [g.text for g in ort] == [g.text for g in hf]
    plain = HFEngine(CausalLMPolicy.tiny(lora=LORA, seed=0)).generate(ps, max_new_tokens=16, greedy=True)
    assert tokens(plain) != tokens(hf)  # the adapters matter, so the export merged them


def test_a_batch_larger_than_the_runtimes_limit_is_decoded_in_chunks():
    """ONNX Runtime GenAI decodes at most 32 rows in a generator; the demo evaluates 50
    questions in one lock-step batch."""
    policy = lora_tiny()
    ps = prompts(policy, 3) * 12  # 36 rows
    ort = ORTEngine(policy).generate(ps, max_new_tokens=6, greedy=True)
    assert len(ort) == 36 and tokens(ort) == tokens(HFEngine(policy).generate(ps, max_new_tokens=6, greedy=True))


def test_stop_strings_cut_where_hf_cuts():
    policy = lora_tiny()
    ps = prompts(policy, 4)
    stops = ["e", "a", "o"]  # frequent letters: most rows stop early
    hf = HFEngine(policy).generate(ps, stop=stops, max_new_tokens=30, greedy=True)
    ort = ORTEngine(policy).generate(ps, stop=stops, max_new_tokens=30, greedy=True)
    assert [(g.token_ids, g.text, g.finish) for g in ort] == [(g.token_ids, g.text, g.finish) for g in hf]
    assert any(g.finish == "stop" for g in ort)


def test_length_limit_counts_new_tokens_only():
    policy = lora_tiny()
    gens = ORTEngine(policy).generate(prompts(policy, 2), max_new_tokens=5, greedy=True)
    assert all(len(g.token_ids) <= 5 for g in gens)
    assert any(g.finish == "length" and len(g.token_ids) == 5 for g in gens)


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_logprobs_are_the_trainers_in_float32(temperature):
    torch.manual_seed(0)
    policy = lora_tiny()
    ps = prompts(policy, 3)
    gens = ORTEngine(policy, temperature=temperature).generate(ps, stop=["e"], max_new_tokens=12)
    assert_trainer_agrees(policy, ps, gens, temperature)


def test_weights_are_exported_again_after_an_update():
    policy = lora_tiny()
    ps = prompts(policy, 3)
    eng = ORTEngine(policy)
    before = eng.generate(ps, max_new_tokens=12, greedy=True)
    eng.generate(ps, max_new_tokens=12, greedy=True)
    assert eng.syncs == 1  # no change, no export
    nudge(policy, 2.0)
    after = eng.generate(ps, max_new_tokens=12, greedy=True)
    assert eng.syncs == 2
    assert tokens(after) == tokens(HFEngine(policy).generate(ps, max_new_tokens=12, greedy=True))
    assert tokens(after) != tokens(before)


def test_sampling_follows_torchs_seed():
    policy = lora_tiny()
    ps = prompts(policy, 4)
    eng = ORTEngine(policy)

    def sample(seed: int):
        torch.manual_seed(seed)
        return tokens(eng.generate(ps, max_new_tokens=20))

    assert sample(0) == sample(0)
    assert sample(0) != sample(1)


def test_a_prompt_holding_the_pad_token_is_refused():
    policy = lora_tiny()
    eng = ORTEngine(policy)
    with pytest.raises(KGReasonError, match=f"pads with token {eng._pad}"):
        eng.generate([prompts(policy, 1)[0] + [eng._pad]], max_new_tokens=2)


def test_real_smollm2_greedy_rollout_matches_hf(smollm2_play):
    hf = smollm2_play.hf[0]
    ort = smollm2_play.play(ORTEngine(smollm2_play.policy))[0]
    assert [[t.text for t in tr.turns] for tr in ort] == [[t.text for t in tr.turns] for tr in hf]
    assert any(len(tr.turns) == 2 for tr in ort)  # observations came back and decoding went on



def test_a_run_on_engine_ort_trains_and_records_what_it_decoded_in(tmp_path):
    """``method=kg_r1 preset=smoke engine=ort`` end to end: an RL iteration on the exported
    copy and both evaluations; ``results.json`` names the engine's precision."""
    import json

    from tests.experiments.test_run import run

    out = tmp_path / "ort"
    p = run("method=kg_r1", "preset=smoke", "engine=ort", "rl.iterations=1", f"hydra.run.dir={out}")
    assert p.returncode == 0, p.stderr[-2000:]
    res = json.loads((out / "results.json").read_text())
    assert res["precision"]["rollouts"] == res["precision"]["eval"] == "float32"
    assert {"untrained", "trained"} <= set(res["eval"])
    assert (out / "rl" / "metrics.csv").read_text().count("\n") >= 2

