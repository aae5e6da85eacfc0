"""length_fit: which episodes a run's length limits would cut, as the rollout and SFT cut them."""

from __future__ import annotations

from kgreason.data import load_dataset
from kgreason.envs import make_env
from kgreason.methods.kg_r1.oracle import expressible
from kgreason.models import CausalLMPolicy
from kgreason.rollout import MultiTurnRollout
from kgreason.training import collate, length_fit
from kgreason.types import Trajectory
from tests.rollout.test_rollout import ScriptedEngine, oracle_scripts


def episode(generated: list[int], prompt: int = 5, observation: int = 3) -> Trajectory:
    """A prompt, then one policy turn of each length, each but the last followed by an observation."""
    t = Trajectory("q")
    t.append_tokens([1] * prompt, policy=False, turn=-1)
    for k, n in enumerate(generated):
        t.append_tokens([2] * n, policy=True, turn=k)
        if k < len(generated) - 1:
            t.append_tokens([3] * observation, policy=False, turn=k)
    return t


def test_only_the_turns_before_the_answer_count_against_the_response_budget():
    t = episode([4, 5, 20])  # 9 tokens before the answer, 29 generated in all
    assert length_fit([t], max_response_tokens=10).over_response == 0
    assert length_fit([t], max_response_tokens=9).over_response == 1  # the second turn reaches 9: stopped
    assert length_fit([t], max_response_tokens=10).longest_before_answer == 9


def test_each_limit_is_overrun_only_past_it_and_a_missing_limit_never():
    t = episode([4, 5, 20])  # 5 + 4 + 3 + 5 + 3 + 20 = 40 tokens
    assert (length_fit([t], max_len=40).over_max_len, length_fit([t], max_len=39).over_max_len) == (0, 1)
    assert (length_fit([t], max_new_tokens=20).over_turn, length_fit([t], max_new_tokens=19).over_turn) == (0, 1)
    fit = length_fit([t, episode([1])])
    assert fit.fits and (fit.episodes, fit.longest, fit.longest_turn) == (2, 40, 20)
    assert str(fit) == "all 2 episodes fit"


def test_the_message_names_each_key_its_value_and_what_fits_all():
    fit = length_fit([episode([4, 5, 20]), episode([2, 2])], max_len=30, max_response_tokens=8, max_new_tokens=16)
    assert not fit.fits
    assert str(fit) == (
        "of 2 episodes: 1 longer than sft.max_len=30 (SFT cuts their end, where the answer is; 40 fits all); "
        "1 generate model.max_response_tokens=8 or more before their answer (a policy writing them ends "
        "unanswered; 10 fits all); 1 have a turn longer than model.max_new_tokens=16 (20 fits all)")


def test_it_counts_what_the_rollout_and_sft_cut(demo_oxigraph):
    # the path oracle's demo episodes replayed through the rollout under a budget that
    # stops some of them: those are the ones length_fit counts, and collate cuts the
    # ones it counts over max_len
    tiny = CausalLMPolicy.tiny(seed=0)
    qs = [q for q in load_dataset("demo", split="dev") if expressible(q)][:12]

    def play(budget: int | None = None):
        engine = ScriptedEngine(tiny.tokenizer, oracle_scripts(tiny, demo_oxigraph, qs, max_turns=10))
        return MultiTurnRollout(engine, tiny.tokenizer, tiny.chat_ids, max_response_tokens=budget).run(
            [make_env("kg_r1", demo_oxigraph, max_turns=10) for _ in qs], qs)

    free, _ = play()
    assert all(t.answer for t in free)
    before = sorted(length_fit([t]).longest_before_answer for t in free)
    budget = before[len(before) // 2]
    fit = length_fit(free, max_len=sorted(len(t.token_ids) for t in free)[len(free) // 2],
                     max_response_tokens=budget)
    assert 0 < fit.over_response < len(qs)
    _, stats = play(budget)
    assert stats.truncated == fit.over_response
    assert 0 < fit.over_max_len == int(collate(free, pad_id=0, max_len=fit.max_len)["truncated"])
