"""HFEngine and the lock-step multi-turn rollout, with the tiny model, a scripted engine
and the real SmolLM2."""

from __future__ import annotations

import pytest
import torch

from kgreason.data import load_dataset
from kgreason.envs import make_env
from kgreason.eval import f1
from kgreason.methods.kg_r1.oracle import PathOracle, expressible
from kgreason.models import CausalLMPolicy
from kgreason.rollout import Engine, Generation, HFEngine, MultiTurnRollout
from kgreason.rollout.engine import count_encoded_positions, pack_columns


@pytest.fixture(scope="module")
def tiny():
    return CausalLMPolicy.tiny(seed=0)


def prompts(policy, n):
    return [policy.chat_ids([{"role": "user", "content": f"question number {i}" + " pad" * i}]) for i in range(n)]


def test_batched_greedy_equals_one_by_one(tiny):
    eng = HFEngine(tiny)
    ps = prompts(tiny, 3)
    batched = eng.generate(ps, max_new_tokens=12, greedy=True)
    single = [eng.generate([p], max_new_tokens=12, greedy=True)[0] for p in ps]
    assert [g.token_ids for g in batched] == [g.token_ids for g in single]


def test_shared_prefix_cache_changes_nothing(tiny):
    # Long common instructions, then questions of different lengths: the shared-prefix
    # path (pads between prefix and suffix) must decode exactly what plain left-padding does.
    head = "Answer from the knowledge graph. " * 12
    ps = [tiny.chat_ids([{"role": "user", "content": head + f"question {i}" + " more" * (3 * i)}]) for i in range(3)]
    from kgreason.rollout.engine import common_prefix_len
    assert common_prefix_len(ps) > 60
    shared = HFEngine(tiny, share_prefix=8).generate(ps, max_new_tokens=10, greedy=True)
    plain = HFEngine(tiny, share_prefix=0).generate(ps, max_new_tokens=10, greedy=True)
    single = [HFEngine(tiny, share_prefix=0).generate([p], max_new_tokens=10, greedy=True)[0] for p in ps]
    assert [g.token_ids for g in shared] == [g.token_ids for g in plain] == [g.token_ids for g in single]
    # identical prompts (the K branches of a tree node): all but the last token shared
    same = HFEngine(tiny, share_prefix=8).generate([ps[0]] * 3, max_new_tokens=10, greedy=True)
    assert all(g.token_ids == single[0].token_ids for g in same)


def test_stop_strings_cut_the_output(tiny):
    torch.manual_seed(0)
    eng = HFEngine(tiny)
    stops = ["e", "a", "o"]  # frequent letters: most samples stop early
    gens = eng.generate(prompts(tiny, 4), stop=stops, max_new_tokens=30)
    for g in gens:
        assert len(g.token_ids) <= 30 and tiny.tokenizer.pad_token_id not in g.token_ids[:-1]
        if g.finish == "stop":
            assert any(g.text.endswith(s) for s in stops)
            assert not any(s in g.text[:-1] for s in stops)  # cut at the first stop
            assert tiny.tokenizer.decode(g.token_ids).startswith(g.text)
    assert any(g.finish == "stop" for g in gens)


def test_stop_criteria_are_reused_and_keyed_by_their_strings(tiny):
    eng = HFEngine(tiny)
    assert eng._stopping(("e", "a"))[0] is eng._stopping(["e", "a"])[0]
    assert eng._stopping(()) is None
    torch.manual_seed(0)
    for stops in (["e", "a"], ["x", "y"], ["e", "a"]):  # a cached criterion never leaks into another call
        for g in eng.generate(prompts(tiny, 4), stop=stops, max_new_tokens=30):
            # a row that stopped early did so on one of this call's strings or on EOS
            assert (g.finish == "stop" and g.text.endswith(tuple(stops))) or \
                (g.finish == "eos" and g.token_ids[-1] == tiny.tokenizer.eos_token_id) or \
                (g.finish == "length" and len(g.token_ids) == 30)


def test_rollout_token_bookkeeping(tiny, demo_oxigraph):
    samples = load_dataset("demo", split="dev")[:4]
    envs = [make_env("kg_r1", demo_oxigraph, max_turns=3) for _ in samples]
    torch.manual_seed(1)
    ro = MultiTurnRollout(HFEngine(tiny), tiny.tokenizer, tiny.chat_ids, max_new_tokens=16)
    trajs, stats = ro.run(envs, samples)
    assert stats.llm_calls == stats.turns == sum(len(t.turns) for t in trajs)
    assert stats.generated_tokens == sum(sum(t.loss_mask) for t in trajs)
    for t in trajs:
        t.check_token_fields()
        assert len(t.turns) == 3  # a random model never answers: forced end at H
        n_prompt = t.turn_index.count(-1)
        assert t.loss_mask[:n_prompt] == [0] * n_prompt
        assert all(a <= b for a, b in zip(t.turn_index, t.turn_index[1:], strict=False))
        for k, turn in enumerate(t.turns):
            ids = [i for i, m, ti in zip(t.token_ids, t.loss_mask, t.turn_index, strict=True) if m and ti == k]
            assert len(ids) == turn.n_generated_tokens
            obs = [i for i, m, ti in zip(t.token_ids, t.loss_mask, t.turn_index, strict=True) if not m and ti == k]
            assert tiny.tokenizer.decode(obs) == turn.observation
            assert len(obs) == turn.n_observation_tokens
            assert turn.gen_time_s > 0


class ScriptedEngine(Engine):
    """Replays oracle messages: tests the rollout with known policy text."""

    def __init__(self, tokenizer, scripts):
        self.tokenizer, self.scripts = tokenizer, scripts

    def generate(self, prompts, stop=(), max_new_tokens=256, greedy=False):
        out = []
        for p in prompts:
            key = next(k for k in self.scripts if self.scripts[k]["prompt"] == list(p)[: len(self.scripts[k]["prompt"])])
            text = self.scripts[key]["texts"].pop(0)
            out.append(Generation(self.tokenizer(text, add_special_tokens=False)["input_ids"], text, "stop"))
        return out


def oracle_scripts(policy, kb, qs, max_turns: int) -> dict[str, dict]:
    """The path oracle's KG-R1 episode of each question, as :class:`ScriptedEngine` scripts
    (question id → its prompt's token ids and its turns' texts)."""
    scripts = {}
    for q in qs:
        traj = PathOracle().messages(make_env("kg_r1", kb, max_turns=max_turns), q)
        scripts[q.id] = {"prompt": policy.chat_ids(traj.prompt), "texts": [t.text for t in traj.turns]}
    return scripts


def test_rollout_with_scripted_oracle_answers_correctly(tiny, demo_oxigraph):
    qs = [q for q in load_dataset("demo", split="dev") if expressible(q)][:6]
    scripts = oracle_scripts(tiny, demo_oxigraph, qs, max_turns=10)
    ro = MultiTurnRollout(ScriptedEngine(tiny.tokenizer, scripts), tiny.tokenizer, tiny.chat_ids)
    trajs, stats = ro.run([make_env("kg_r1", demo_oxigraph, max_turns=10) for _ in qs], qs)
    assert all(f1(t.answer, q.answers) == 1.0 for t, q in zip(trajs, qs, strict=True))
    assert stats.kb_calls > 0 and stats.invalid_calls == 0


def test_progress_counts_turns_and_adds_up_to_the_turn_budget(tiny, demo_oxigraph):
    # episodes of different lengths: each call counts the rows that played the turn, plus
    # the unused turns of those that ended in it
    pool = [q for q in load_dataset("demo", split="dev") if expressible(q)]
    qs = [q for q in pool if len(q.relation_path) == 1][:3] + [q for q in pool if len(q.relation_path) > 1][:3]
    scripts = oracle_scripts(tiny, demo_oxigraph, qs, max_turns=10)
    lengths = sorted(len(v["texts"]) for v in scripts.values())
    assert len(set(lengths)) > 1
    calls: list[int] = []
    ro = MultiTurnRollout(ScriptedEngine(tiny.tokenizer, scripts), tiny.tokenizer, tiny.chat_ids)
    trajs, _ = ro.run([make_env("kg_r1", demo_oxigraph, max_turns=10) for _ in qs], qs, progress=calls.append)
    assert sorted(len(t.turns) for t in trajs) == lengths
    assert len(calls) == lengths[-1] and sum(calls) == 10 * len(qs)
    for k, c in enumerate(calls):  # turn k: rows still playing, plus 10 - (k + 1) for each ending
        playing = sum(n > k for n in lengths)
        ending = sum(n == k + 1 for n in lengths)
        assert c == playing + ending * (10 - k - 1)


def test_evaluation_progress_reaches_its_turn_budget(tiny, demo_oxigraph):
    from kgreason.eval import evaluate, turn_budget

    qs = [q for q in load_dataset("demo", split="dev") if expressible(q)][:5]
    scripts = oracle_scripts(tiny, demo_oxigraph, qs, max_turns=6)
    calls: list[int] = []
    ro = MultiTurnRollout(ScriptedEngine(tiny.tokenizer, scripts), tiny.tokenizer, tiny.chat_ids)

    def env():
        return make_env("kg_r1", demo_oxigraph, max_turns=6)

    report, _ = evaluate(ro, env, qs, batch_size=2, progress=calls.append)
    assert report.overall["f1"] == 1.0
    assert sum(calls) == turn_budget(env, qs) == 30


def test_evaluation_hands_over_each_batch_and_rows_do_not_depend_on_the_batching(tiny, demo_oxigraph):
    # on_chunk sees every batch once it is scored (the runner writes it then); a row,
    # RHit@1's random tie-break included, is the same whichever questions share its batch
    from kgreason.eval import evaluate

    qs = [q for q in load_dataset("demo", split="dev") if expressible(q)][:5]
    scripts = oracle_scripts(tiny, demo_oxigraph, qs, max_turns=6)

    def env():
        return make_env("kg_r1", demo_oxigraph, max_turns=6)

    chunks: list[tuple[list, list]] = []
    ro = MultiTurnRollout(ScriptedEngine(tiny.tokenizer, scripts), tiny.tokenizer, tiny.chat_ids)
    report, trajs = evaluate(ro, env, qs, batch_size=2, on_chunk=lambda r, t: chunks.append((r, t)))
    assert [len(r) for r, _ in chunks] == [len(t) for _, t in chunks] == [2, 2, 1]
    assert [row for r, _ in chunks for row in r] == report.rows
    assert [t.sample_id for _, ts in chunks for t in ts] == [t.sample_id for t in trajs] == [q.id for q in qs]
    again = oracle_scripts(tiny, demo_oxigraph, qs, max_turns=6)  # the engine consumes its scripts
    ro = MultiTurnRollout(ScriptedEngine(tiny.tokenizer, again), tiny.tokenizer, tiny.chat_ids)
    alone, _ = evaluate(ro, env, qs[::-1], batch_size=1)

    def strip(rows):
        return sorted(({k: v for k, v in r.items() if k != "latency_s"} for r in rows), key=lambda r: r["id"])

    assert strip(alone.rows) == strip(report.rows)


def test_sampled_evaluation_scores_each_run_alone(tiny, demo_oxigraph):
    # two runs a question: the oracle's episode, then a one-turn wrong answer. The union
    # is scored as before; pass@2 is the right run's score, mean_f1 the average of 1 and 0.
    from kgreason.eval import evaluate

    qs = [q for q in load_dataset("demo", split="dev") if expressible(q) and len(q.answers) == 1][:3]
    scripts = oracle_scripts(tiny, demo_oxigraph, qs, max_turns=6)
    for q in qs:
        texts = scripts[q.id]["texts"]
        texts.append(texts[-1].replace(q.answers[0].label, "Atlantis"))  # the second run's wrong answer
    ro = MultiTurnRollout(ScriptedEngine(tiny.tokenizer, scripts), tiny.tokenizer, tiny.chat_ids)
    report, trajs = evaluate(ro, lambda: make_env("kg_r1", demo_oxigraph, max_turns=6), qs, batch_size=3, n_runs=2)
    assert len(trajs) == 6
    for row in report.rows:
        assert row["pass_hit1"] == row["pass_f1"] == 1.0 and row["mean_f1"] == 0.5
        assert row["f1"] < 1.0  # the union holds the wrong answer too
    assert report.overall["pass_f1"] == 1.0 and report.overall["mean_f1"] == 0.5
    assert "pass_f1" in report.markdown()


def test_real_smollm2_rollout(smollm2_play):
    trajs, stats = smollm2_play.hf
    assert stats.generated_tokens > 0
    text = trajs[0].turns[0].text
    assert len(text.split()) >= 3  # the instruct model writes words, not noise
    assert all(len(t.turns) <= 2 for t in trajs)


def test_kept_cache_continues_rows_exactly(tiny):
    # Turn 2 of three episodes: each prompt extends its own turn-1 row (and one extends
    # row 0 twice, as a tree node's children do); reuse must decode what a cold start does.
    ps = prompts(tiny, 3)
    warm = HFEngine(tiny, reuse_cache=True)
    first = warm.generate(ps, max_new_tokens=8, greedy=True)
    obs = tiny.tokenizer(" observation text", add_special_tokens=False)["input_ids"]
    nxt = [p + g.token_ids + obs * (i + 1) for i, (p, g) in enumerate(zip(ps, first, strict=True))]
    nxt.append(nxt[0])
    again = warm.generate(nxt, max_new_tokens=8, greedy=True)
    assert warm.reused_tokens >= sum(len(p) for p in ps)
    cold = HFEngine(tiny, reuse_cache=False).generate(nxt, max_new_tokens=8, greedy=True)
    assert [g.token_ids for g in again] == [g.token_ids for g in cold]


def test_kept_cache_is_dropped_when_weights_change(tiny):
    eng = HFEngine(tiny, reuse_cache=True)
    ps = prompts(tiny, 2)
    first = eng.generate(ps, max_new_tokens=4, greedy=True)
    opt = torch.optim.SGD([p for p in tiny.model.parameters() if p.requires_grad], lr=0.0)
    loss = tiny.model(input_ids=torch.tensor([ps[0]])).logits.float().mean()
    loss.backward()
    opt.step()  # lr 0: same values, but an in-place update all the same
    opt.zero_grad()
    eng.generate([p + g.token_ids + [7] for p, g in zip(ps, first, strict=True)], max_new_tokens=4, greedy=True)
    assert eng.reused_tokens == 0


def test_rollout_with_kept_cache_equals_cold_rollout(tiny, demo_oxigraph):
    samples = load_dataset("demo", split="dev")[:3]
    runs = []
    for reuse in (True, False):
        eng = HFEngine(tiny, reuse_cache=reuse)
        ro = MultiTurnRollout(eng, tiny.tokenizer, tiny.chat_ids, max_new_tokens=12)
        trajs, _ = ro.run([make_env("kg_r1", demo_oxigraph, max_turns=3) for _ in samples], samples, greedy=True)
        runs.append(([t.token_ids for t in trajs], eng.reused_tokens))
    (warm, reused), (cold, none) = runs
    assert warm == cold and reused > 0 and none == 0


def test_response_budget_ends_episodes_over_all_turns(demo_oxigraph):
    from kgreason.models import CausalLMPolicy

    pol = CausalLMPolicy.tiny()
    samples = load_dataset("demo", split="dev")[:3]
    unbounded = MultiTurnRollout(HFEngine(pol), pol.tokenizer, pol.chat_ids, max_new_tokens=8)
    bounded = MultiTurnRollout(HFEngine(pol), pol.tokenizer, pol.chat_ids, max_new_tokens=8, max_response_tokens=12)
    full, s0 = unbounded.run([make_env("kg_r1", demo_oxigraph, max_turns=5) for _ in samples], samples, greedy=True)
    cut, s1 = bounded.run([make_env("kg_r1", demo_oxigraph, max_turns=5) for _ in samples], samples, greedy=True)
    assert all(len(t.turns) == 5 for t in full) and s0.truncated == 0  # the tiny model never answers
    assert all(len(t.turns) == 2 and not t.answer for t in cut) and s1.truncated == 3  # 8 + 8 >= 12
    for t, c in zip(full, cut, strict=True):  # the same episodes, only shorter
        assert t.token_ids[: len(c.token_ids)] == c.token_ids


def _recording(monkeypatch, policy) -> list[int]:
    rows: list[int] = []
    real = policy.model.generate

    def generate(*args, **kwargs):
        rows.append(kwargs["input_ids"].shape[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(policy.model, "generate", generate)
    return rows


# The real SmolLM2 (float32): the tiny random model's greedy text is one repeated token,
# so its rows would all end together. These questions end their first sentence at
# different lengths.
QUESTIONS = ["Name a colour.", "What is 2 + 2?", "Describe the sea in detail.",
             "Who wrote Hamlet and when did he live?", "Say yes.", "List five rivers of Europe with their lengths."]
STOPS = [".", "\n"]


def test_finished_rows_leave_the_batch_and_the_tokens_stay_the_same(smollm2_play, monkeypatch):
    policy = smollm2_play.policy
    ps = [policy.chat_ids([{"role": "user", "content": q}]) for q in QUESTIONS]
    whole = HFEngine(policy, compact_every=0).generate(ps, stop=STOPS, max_new_tokens=40, greedy=True)
    lengths = sorted(len(g.token_ids) for g in whole)
    assert lengths[0] < lengths[-1]  # the case this is about: rows end at different times
    rows = _recording(monkeypatch, policy)
    rounds = HFEngine(policy, compact_every=4).generate(ps, stop=STOPS, max_new_tokens=40, greedy=True)
    assert [(g.token_ids, g.text, g.finish) for g in rounds] == [(g.token_ids, g.text, g.finish) for g in whole]
    assert rows[0] == 6 and rows == sorted(rows, reverse=True) and rows[-1] < 6
    assert len(rows) <= -(-lengths[-1] // 4)  # no round after the last row ended


def test_kept_cache_of_rows_that_left_early_continues_exactly(smollm2_play):
    policy = smollm2_play.policy
    ps = [policy.chat_ids([{"role": "user", "content": q}]) for q in QUESTIONS]
    warm = HFEngine(policy, reuse_cache=True, compact_every=3)
    first = warm.generate(ps, stop=STOPS, max_new_tokens=24, greedy=True)
    assert len({len(g.token_ids) for g in first}) > 1
    obs = policy.tokenizer(" Go on.", add_special_tokens=False)["input_ids"]
    nxt = [p + g.token_ids + obs * (i + 1) for i, (p, g) in enumerate(zip(ps, first, strict=True))]
    again = warm.generate(nxt, stop=STOPS, max_new_tokens=24, greedy=True)
    # every row continued from the kept cache (a row's last token has keys only if the
    # batch decoded on after it)
    pairs = list(zip(ps, first, strict=True))
    assert sum(len(p) + len(g.token_ids) - 1 for p, g in pairs) <= warm.reused_tokens <= sum(
        len(p) + len(g.token_ids) for p, g in pairs)
    cold = HFEngine(policy, reuse_cache=False, compact_every=0, bucket_prefill=False).generate(
        nxt, stop=STOPS, max_new_tokens=24, greedy=True)
    assert [g.token_ids for g in again] == [g.token_ids for g in cold]


def test_bucketed_prefill_decodes_the_same_tokens_and_encodes_less_padding(smollm2_play):
    # A lock-step turn's observations differ in length several times over: one row gets
    # a long reply, the others short ones. Encoding them in buckets of similar length must
    # give exactly the tokens one padded batch gives, for first prompts and for turns
    # continued from the kept cache, with fewer positions encoded.
    policy = smollm2_play.policy
    ps = [policy.chat_ids([{"role": "user", "content": q + " Explain." * (20 if i == 3 else 0)}])
          for i, q in enumerate(QUESTIONS)]
    obs = policy.tokenizer(" Go on.", add_special_tokens=False)["input_ids"]
    runs = {}
    for bucket in (False, True):
        with count_encoded_positions(policy.model) as seen:
            eng = HFEngine(policy, bucket_prefill=bucket, compact_every=4)
            first = eng.generate(ps, stop=STOPS, max_new_tokens=16, greedy=True)
            nxt = [p + g.token_ids + obs * (30 if i == 0 else 1) for i, (p, g) in enumerate(zip(ps, first, strict=True))]
            again = eng.generate(nxt, stop=STOPS, max_new_tokens=16, greedy=True)
        runs[bucket] = ([g.token_ids for g in first], [g.token_ids for g in again], sum(seen))
    assert runs[True][:2] == runs[False][:2]
    assert runs[True][2] < 0.7 * runs[False][2]


def test_packed_columns_decode_the_same_tokens_from_a_narrower_cache(smollm2_play):
    # Rows that stop early and short observations leave padding columns in the kept cache
    # after every lock-step turn; packing them out before the next turn must not change a
    # token, only the cache's width.
    policy = smollm2_play.policy
    ps = [policy.chat_ids([{"role": "user", "content": q}]) for q in QUESTIONS]
    obs = policy.tokenizer(" Go on.", add_special_tokens=False)["input_ids"]
    runs = {}
    for pack in (False, True):
        eng = HFEngine(policy, pack_columns=pack, compact_every=4)
        turns = [eng.generate(ps, stop=STOPS, max_new_tokens=16, greedy=True)]
        rows = ps
        for _ in range(2):
            rows = [r + g.token_ids + obs * (12 if i == 0 else 1) for i, (r, g) in enumerate(zip(rows, turns[-1], strict=True))]
            turns.append(eng.generate(rows, stop=STOPS, max_new_tokens=16, greedy=True))
        assert eng.reused_tokens > 0  # the later turns continued the kept cache
        runs[pack] = ([[g.token_ids for g in t] for t in turns], eng._kept.mask.shape[1],
                      eng._kept.cache.get_seq_length())
    assert runs[True][0] == runs[False][0]
    assert len({len(g) for g in runs[False][0][0]}) > 1  # the rows did stop at different lengths
    assert runs[True][1] == runs[True][2] < runs[False][1]


def test_pack_columns_keeps_each_rows_keys_in_order():
    from transformers import DynamicCache

    cache = DynamicCache()
    keys = torch.arange(2 * 5, dtype=torch.float).view(2, 1, 5, 1).expand(2, 3, 5, 2).contiguous()
    cache.update(keys, -keys, 0)
    ids = torch.tensor([[11, 0, 12, 0, 13], [0, 0, 21, 0, 22]])
    mask = (ids > 0).long()
    ids, mask = pack_columns(cache, ids, mask)
    assert ids.tolist() == [[11, 12, 13], [0, 21, 22]] and mask.tolist() == [[1, 1, 1], [0, 1, 1]]
    assert cache.get_seq_length() == 3
    assert cache.layers[0].keys[0, 2, :, 1].tolist() == [0.0, 2.0, 4.0]
    assert cache.layers[0].values[1, 0, 1:, 0].tolist() == [-7.0, -9.0]
    # a row with no padding: nothing is dropped or copied
    before = cache.layers[0].keys
    full = torch.ones(2, 3, dtype=torch.long)
    assert pack_columns(cache, ids, full)[0] is ids and cache.layers[0].keys is before


def test_bucketed_prefill_without_a_cached_prefix_matches_one_by_one(tiny):
    # no shared prefix (share_prefix=0): the buckets start from an empty cache
    ps = prompts(tiny, 1) + [tiny.chat_ids([{"role": "user", "content": "long " * 60}])] + prompts(tiny, 3)[1:]
    bucketed = HFEngine(tiny, share_prefix=0).generate(ps, max_new_tokens=8, greedy=True)
    single = [HFEngine(tiny, share_prefix=0).generate([p], max_new_tokens=8, greedy=True)[0] for p in ps]
    assert [g.token_ids for g in bucketed] == [g.token_ids for g in single]


def test_count_encoded_positions_counts_each_pass_and_lets_go(tiny):
    with count_encoded_positions(tiny.model) as seen:
        tiny.model(input_ids=torch.zeros(2, 5, dtype=torch.long))
        tiny.model(torch.zeros(1, 3, dtype=torch.long))  # positional, as some callers pass it
    tiny.model(input_ids=torch.zeros(1, 4, dtype=torch.long))  # after the block: not counted
    assert seen == [10, 3]


def test_prefill_passes_project_one_position_onto_the_vocabulary(tiny):
    # the shared prefix and the buckets only fill the cache: the output head sees one
    # position a row there (logits for all of them are rows x tokens x vocabulary)
    shared = [tiny.tokenizer.eos_token_id or 1] * 40
    ps = [shared + p for p in prompts(tiny, 1)] + [shared + tiny.chat_ids([{"role": "user", "content": "long " * 60}])]
    head = tiny.model.get_output_embeddings()
    widths: list[int] = []
    hook = head.register_forward_hook(lambda _m, args, _out: widths.append(args[0].shape[1]))
    try:
        with count_encoded_positions(tiny.model) as encoded:
            HFEngine(tiny, share_prefix=8).generate(ps, max_new_tokens=4, greedy=True)
    finally:
        hook.remove()
    assert max(encoded) > 40  # the prefix and the buckets were encoded outside generate
    assert widths and max(widths) == 1, widths


def test_an_observation_the_budget_kept_from_the_policy_earns_nothing(tiny, demo_oxigraph):
    """The response budget ends an episode after the env ran the turn's query but before its
    result entered the context: the reward must not count that query or what it showed."""
    from kgreason.rewards import get
    from kgreason.rollout.multiturn import OUT_OF_BUDGET

    qs = [q for q in load_dataset("demo", split="dev") if expressible(q) and len(q.relation_path) > 1][:3]
    reward = get("kg_r1")
    for budget in (None, 1):
        scripts = oracle_scripts(tiny, demo_oxigraph, qs, max_turns=10)
        ro = MultiTurnRollout(ScriptedEngine(tiny.tokenizer, scripts), tiny.tokenizer, tiny.chat_ids,
                              max_response_tokens=budget)
        trajs, stats = ro.run([make_env("kg_r1", demo_oxigraph, max_turns=10) for _ in qs], qs)
        outs = [reward(t, q) for t, q in zip(trajs, qs, strict=True)]
        if budget is None:
            assert stats.truncated == 0 and all(o.turn[0] > 0.5 for o in outs)  # format + a new query
            continue
        assert stats.truncated == len(qs)
        for t, o in zip(trajs, outs, strict=True):
            last = t.turns[-1]
            assert len(t.turns) == 1 and last.error == OUT_OF_BUDGET and last.observation == ""
            assert t.meta["truncated"] == "response_budget"
            assert o.components["turn_kg"] == 0.0 and o.components["retrieval"] == 0.0
            assert o.turn == [0.5]  # the format term only: w_fmt · 1
            # what the policy saw is what was tokenised: no observation tokens after its turn
            assert t.turn_index[-1] == 0 and t.loss_mask[-1] == 1
