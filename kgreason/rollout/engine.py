"""Generation engines: one interface and the transformers backend (vLLM: :mod:`kgreason.rollout.vllm`)."""

from __future__ import annotations

import abc
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from kgreason.models.compat import cache_kwargs, output_cache
from kgreason.models.version import WeightsVersion, weights_version
from kgreason.rollout.sampling import sampling_processors


@dataclass
class Generation:
    """One completion: its tokens (stop string included, padding removed) and text.

    ``finish`` is ``"stop"`` (a stop string), ``"eos"`` or ``"length"``. ``logprobs`` holds,
    for each of ``token_ids``, its log-prob under the sampler's distribution at the
    sampling temperature (``log_softmax(logits / T)``; greedy decoding: ``T = 1``), before
    any top-k/top-p truncation — what the trainer computes when it scores at the same
    temperature, so the two can be compared token by token (None: the engine gave none).
    """

    token_ids: list[int]
    text: str
    finish: str
    logprobs: list[float] | None = None


class Engine(abc.ABC):
    """Batched generation from token-id prompts.

    Attributes:
        scores_like_trainer: the engine computes its log-probs with the policy's own
            forward pass in the policy's precision, so they are the trainer's old
            log-probs (the RL update then skips recomputing them). Engines with their own
            kernels (CTranslate2, vLLM) are corrected by truncated importance sampling
            instead (:mod:`kgreason.rl.correction`).
        precision: what an engine with its own copy of the weights decodes in
            (``"float32"``, ``"int8"``; ``None``: the policy's own precision), as
            ``results.json`` records it.
    """

    scores_like_trainer: bool = False
    precision: str | None = None

    @abc.abstractmethod
    def generate(self, prompts: Sequence[Sequence[int]], stop: Sequence[str] = (),
                 max_new_tokens: int = 256, greedy: bool = False) -> list[Generation]:
        """Complete each prompt; stop at the first of ``stop`` (kept in the output)."""

    def clear_cache(self) -> None:  # noqa: B027 - optional hook
        """Forget state kept between calls (rollouts call it before and after an episode
        batch, so nothing computed with older weights is ever reused)."""


@dataclass
class _Kept:
    """The KV cache of the last call, to continue its rows on the next turn.

    Shapes: ``ids`` and ``mask`` ``[B, C]`` for the ``C`` cached columns; ``mask`` is 1
    where a column holds a real token of that row (not padding, not tokens generated
    after the row stopped); ``rows[b]`` are those real tokens in order.
    """

    cache: Any
    ids: torch.Tensor
    mask: torch.Tensor
    rows: list[tuple[int, ...]]
    weights: WeightsVersion


class _Rounds:
    """The state of one batched generation decoded in rounds (see ``HFEngine.compact_every``).

    Shapes: ``ids`` / ``mask`` ``[A, T]`` for the ``A`` rows still decoding; ``order[a]`` is
    the prompt index of row ``a``; ``tokens[i]`` everything prompt ``i`` has generated.
    Rows that finish leave the batch between rounds; with ``keep``, their keys and values
    (``cached`` columns each) are set aside for :meth:`whole`.
    """

    def __init__(self, ids: torch.Tensor, mask: torch.Tensor, cache: Any, stop: Sequence[str], tokenizer,
                 keep: bool):
        self.ids, self.mask, self.cache = ids, mask, cache
        self.width = mask.shape[1]
        self.prompt_ids, self.prompt_mask = ids, mask
        self.order = list(range(ids.shape[0]))
        self.tokens: list[list[int]] = [[] for _ in self.order]
        self.logprobs: list[list[float]] = [[] for _ in self.order]
        self.cached = [0] * len(self.order)
        self.decoded = 0
        self.active = True
        self.stop, self.tokenizer, self.keep = stop, tokenizer, keep
        self.left: list[tuple[list[int], list[tuple[torch.Tensor, torch.Tensor]]]] = []

    def advance(self, seqs: torch.Tensor, cache: Any, ended: bool, logprobs: torch.Tensor | None = None) -> None:
        """Take one round's output (``logprobs`` ``[A, k]``: of its ``k`` new tokens); drop
        finished rows, or stop when none is left."""
        start = self.ids.shape[1]
        new = seqs[:, start:]
        for a, i in enumerate(self.order):
            self.tokens[i].extend(new[a].tolist())
            if logprobs is not None:
                self.logprobs[i].extend(logprobs[a].tolist())
        self.decoded += new.shape[1]
        self.cache = cache
        n_cols = cache.get_seq_length() if cache is not None else 0
        done = [a for a, i in enumerate(self.order) if self._finished(self.tokens[i])]
        if ended or not new.shape[1] or len(done) == len(self.order) or cache is None:
            for i in self.order:
                self.cached[i] = n_cols
            self.active = False
            return
        self.ids = seqs
        self.mask = torch.cat([self.mask, torch.ones_like(new)], dim=1)
        if not done:
            return
        leaving = set(done)
        stay = [a for a in range(len(self.order)) if a not in leaving]
        if self.keep:
            out = torch.tensor(done)
            self.left.append(([self.order[a] for a in done],
                              [(lay.keys[out.to(lay.keys.device)], lay.values[out.to(lay.keys.device)])
                               for lay in cache.layers]))
            for a in done:
                self.cached[self.order[a]] = n_cols
        keep_rows = torch.tensor(stay)
        cache.batch_select_indices(keep_rows.to(cache.layers[0].keys.device))
        self.ids, self.mask = self.ids[keep_rows], self.mask[keep_rows]
        self.order = [self.order[a] for a in stay]

    def _finished(self, new: list[int]) -> bool:
        if self.tokenizer.eos_token_id in new:
            return True
        return _first_stop(self.tokenizer.decode(new), self.stop) is not None

    def whole(self) -> tuple[Any, torch.Tensor, torch.Tensor, list[int]]:
        """Cache, ids ``[N, C]``, prompt mask ``[N, width]`` and cached columns of every
        prompt, the rows that left early put back (zeros past their end, which
        :meth:`HFEngine._keep` masks)."""
        cache = self.cache
        cols = cache.get_seq_length()
        n = len(self.tokens)
        seqs = self.prompt_ids.new_zeros((n, cols))
        seqs[:, :self.width] = self.prompt_ids
        for i, new in enumerate(self.tokens):
            k = min(len(new), cols - self.width)
            seqs[i, self.width:self.width + k] = torch.tensor(new[:k], dtype=seqs.dtype)
        if not self.left:
            return cache, seqs, self.prompt_mask, self.cached
        rows = torch.tensor(self.order)
        for j, lay in enumerate(cache.layers):
            keys = lay.keys.new_zeros((n, *lay.keys.shape[1:]))
            values = lay.values.new_zeros((n, *lay.values.shape[1:]))
            keys[rows.to(keys.device)] = lay.keys
            values[rows.to(keys.device)] = lay.values
            for who, saved in self.left:
                k, v = saved[j]
                idx = torch.tensor(who, device=keys.device)
                keys[idx, :, :k.shape[2]] = k
                values[idx, :, :v.shape[2]] = v
            lay.keys, lay.values = keys, values
        return cache, seqs, self.prompt_mask, self.cached

class HFEngine(Engine):
    """``model.generate`` on a left-padded batch with stop strings, under the policy's autocast.

    Each generation carries its tokens' log-probs, recorded from the logits ``generate``
    computes anyway (:class:`ChosenLogprobs`, :attr:`Generation.logprobs`).

    Args:
        policy: a :class:`~kgreason.models.CausalLMPolicy`.
        temperature, top_p, top_k: sampling (KG-R1 trains at 1.0 / 1.0 / off), applied as
            ``generate`` applies them; the token is drawn by inverse CDF
            (:mod:`kgreason.rollout.sampling`), not ``torch.multinomial``.
        batch_size: split larger batches (None: all at once).
        share_prefix: encode the prompts' longest common token prefix once and share its
            KV cache across the batch when it is at least this many tokens (0: off). On a
            CPU the prefill of long multi-turn contexts dominates a turn; every batch
            shares the instructions, and the K branches of one tree node their whole context.
        reuse_cache: keep the last call's KV cache and, when every new prompt extends one
            of its rows (the next turn of a multi-turn rollout, or a tree node's children),
            encode only the new tokens. ``clear_cache()`` drops it; rollouts call it around
            each batch of episodes, since weights change between them.
        growing_cache: decode into a :class:`~kgreason.rollout.kv_cache.GrowingCache`
            (keys and values written in place) instead of transformers' ``DynamicCache``,
            which copies the whole cache at every token. Same tokens; False is for
            comparison (``experiments/benchmarks/kv_cache.py``).
        compact_every: decode in rounds of this many tokens and drop the rows that have
            finished from the batch between rounds (0: one ``generate`` call to the end).
            A lock-step batch otherwise decodes every row until its longest one stops; a
            decoding step costs roughly ``a + b · rows`` on a CPU, so the stragglers of a
            turn run at the speed of a small batch (``experiments/benchmarks/engine_settings.py``).
            The dropped rows' keys and values are set aside and returned to the kept cache.
        bucket_prefill: encode a batch's new tokens (first prompts, then each turn's
            observations) in buckets of rows of similar length instead of one batch padded
            to its longest row. A CPU prefill is compute-bound, so its cost is the padded
            token count; the observations of one lock-step turn differ in length several
            times over (42 % of the positions a KG-Reasoner demo evaluation encoded were
            padding). Same tokens up to float rounding; False is for comparison
            (``experiments/benchmarks/engine_settings.py --vary bucket_prefill=false,true``).
        pack_columns: before a turn continues the kept cache, move each row's real tokens
            to the right edge and drop the columns that are padding for every row
            (:func:`pack_columns`). Each lock-step turn appends as many columns as its
            longest row needs, so padding piles up between turns (a quarter to 44 % of the
            columns of a KBQA-R1 demo evaluation from its second turn on), and every
            decoding step reads it: attention was ≈ 30 % of that evaluation's model time.
            Same tokens up to float rounding; False is for comparison
            (``experiments/benchmarks/engine_settings.py --vary pack_columns=false,true``).
            On a ``GrowingCache`` the rows a turn continues and their packed columns are
            gathered in one copy (:meth:`~kgreason.rollout.kv_cache.GrowingCache.take`).
    """

    scores_like_trainer = True

    def __init__(self, policy, temperature: float = 1.0, top_p: float = 1.0, top_k: int = 0,
                 batch_size: int | None = None, share_prefix: int = 32, reuse_cache: bool = True,
                 growing_cache: bool = True, compact_every: int = 32, bucket_prefill: bool = True,
                 pack_columns: bool = True):
        self.policy = policy
        self.pack_columns = pack_columns
        self.bucket_prefill = bucket_prefill
        self.compact_every = compact_every
        self.growing_cache = growing_cache
        self.share_prefix = share_prefix
        self.reuse_cache = reuse_cache
        self._kept: _Kept | None = None
        #: prompt tokens served from a kept cache instead of being encoded again
        self.reused_tokens = 0
        self.tokenizer = policy.tokenizer
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k
        self.batch_size = batch_size
        self._stops: dict[tuple[str, ...], Any] = {}

    def generate(self, prompts: Sequence[Sequence[int]], stop: Sequence[str] = (),
                 max_new_tokens: int = 256, greedy: bool = False) -> list[Generation]:
        if not prompts:
            return []
        bs = self.batch_size or len(prompts)
        if bs < len(prompts):
            self.clear_cache()  # chunks would overwrite each other's kept cache
        out: list[Generation] = []
        for i in range(0, len(prompts), bs):
            out.extend(self._generate(prompts[i : i + bs], stop, max_new_tokens, greedy,
                                      keep=self.reuse_cache and bs >= len(prompts)))
        return out

    def clear_cache(self) -> None:
        self._kept = None

    @torch.no_grad()
    def _generate(self, prompts, stop, max_new_tokens, greedy, keep: bool = False) -> list[Generation]:
        tok = self.tokenizer
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        # sampling draws through our own processors (generate's multinomial costs ≈ 1 ms a
        # row on a CPU), so generate itself always picks the highest score
        kw: dict[str, Any] = {"do_sample": False}
        kw.update(stopping_criteria=self._stopping(stop), pad_token_id=pad, eos_token_id=tok.eos_token_id,
                  return_dict_in_generate=True)
        temperature = 1.0 if greedy else self.temperature
        sampler = [] if greedy else sampling_processors(self.temperature, self.top_k, self.top_p)
        from transformers import LogitsProcessorList
        model = self.policy.model
        was_training = model.training
        model.eval()
        device = self.policy.device
        with self.policy.autocast():
            cont = self._continue(prompts, pad) if self._kept is not None else None
            if cont is not None:
                ids, mask, cache = cont
            else:
                shared = self._shared_len(prompts)
                ids, mask = pad_batch(prompts, pad, shared)
                cache = self._new_cache()
                if shared:
                    # Pads sit between the shared prefix and each suffix; generate derives
                    # position ids from the attention mask, so positions stay contiguous.
                    # Only the cache is wanted: logits of one position, not of every one.
                    model(input_ids=ids[:1, :shared].to(device), use_cache=True, logits_to_keep=1,
                          **cache_kwargs(cache))
                    cache.batch_repeat_interleave(len(prompts))
            self._kept = None  # its cache is consumed (extended in place) by this call
            if self.bucket_prefill:
                prefill_in_buckets(model, ids, mask, cache, device)
            run = _Rounds(ids, mask, cache, stop, tok, keep)
            while run.active:
                budget = max_new_tokens - run.decoded
                step = min(self.compact_every or budget, budget)
                recorder = ChosenLogprobs(temperature)  # holds one round's last logits: new each round
                out = model.generate(input_ids=run.ids.to(device), attention_mask=run.mask.to(device),
                                     max_new_tokens=step, logits_processor=LogitsProcessorList([recorder, *sampler]),
                                     **cache_kwargs(run.cache), **kw)
                run.advance(out.sequences.cpu(), output_cache(out), ended=run.decoded + step >= max_new_tokens,
                            logprobs=recorder.finish(out.sequences[:, -1]))
        model.train(was_training)
        gens = [finish_generation(tok, new, stop, max_new_tokens, lp)
                for new, lp in zip(run.tokens, run.logprobs, strict=True)]
        if keep and run.cache is not None:
            self._keep(*run.whole(), prompts, gens)
        return gens

    def _new_cache(self) -> Any:
        # transformers is imported on first use, as everywhere in the package
        if self.growing_cache:
            from kgreason.rollout.kv_cache import GrowingCache

            return GrowingCache()
        from transformers import DynamicCache

        return DynamicCache()

    def _stopping(self, stop: Sequence[str]) -> Any:
        """Stop-string criteria, built once per set of stop strings.

        transformers builds them on every ``generate(stop_strings=...)`` call and its own
        cache misses for fast tokenizers (``get_vocab`` order varies), which costs ≈ 0.6 s
        a call with SmolLM2's 49k-token vocabulary.
        """
        key = tuple(s for s in stop if s)
        if not key:
            return None
        from transformers import StoppingCriteriaList, StopStringCriteria

        if key not in self._stops:
            self._stops[key] = StopStringCriteria(self.tokenizer, list(key))
        return StoppingCriteriaList([self._stops[key]])

    def _shared_len(self, prompts) -> int:
        shared = common_prefix_len(prompts) if len(prompts) > 1 and self.share_prefix else 0
        # At least one token of every prompt must go through generate itself.
        shared = min(shared, min(len(p) for p in prompts) - 1)
        return shared if shared >= max(self.share_prefix, 1) else 0

    def _keep(self, cache, seqs: torch.Tensor, mask: torch.Tensor, cached: list[int], prompts,
              gens: list[Generation]) -> None:
        """Keep ``cache`` for the next call. ``cached[b]``: columns of row ``b`` holding keys
        and values (a row's last generated token has none yet)."""
        width = mask.shape[1]
        cols = seqs.shape[1]
        gen_mask = torch.zeros(len(prompts), cols - width, dtype=mask.dtype)
        rows = []
        for i, (p, g) in enumerate(zip(prompts, gens, strict=True)):
            k = min(len(g.token_ids), cached[i] - width)
            gen_mask[i, :k] = 1
            rows.append(tuple(p) + tuple(g.token_ids[:k]))
        self._kept = _Kept(cache, seqs, torch.cat([mask, gen_mask], dim=1), rows,
                           weights_version(self.policy.model))

    def _continue(self, prompts, pad: int):
        """Ids, mask and cache to continue the kept rows, or None when a prompt extends none."""
        kept = self._kept
        assert kept is not None
        if kept.weights != weights_version(self.policy.model):
            return None
        pick, rest = [], []
        for p in prompts:
            p = tuple(p)
            best = -1
            for j, row in enumerate(kept.rows):
                n = len(row)
                if n < len(p) and (best < 0 or n > len(kept.rows[best])) and p[:n] == row:
                    best = j
            if best < 0:
                return None
            pick.append(best)
            rest.append(p[len(kept.rows[best]):])
        self.reused_tokens += sum(len(kept.rows[j]) for j in pick)
        index = torch.tensor(pick, dtype=torch.long)
        cache = kept.cache
        ids, mask = kept.ids[index], kept.mask[index]
        cols = packed_columns(mask) if self.pack_columns else None
        from kgreason.rollout.kv_cache import GrowingCache

        if isinstance(cache, GrowingCache):  # rows and columns in one copy
            cache.take(index, cols)
        else:
            cache.batch_select_indices(index.to(self.policy.device))
            if cols is not None:
                _gather_columns(cache, cols)
        if cols is not None:
            ids, mask = ids.gather(1, cols), mask.gather(1, cols)
        new_ids, new_mask = pad_batch(rest, pad)
        return torch.cat([ids, new_ids], dim=1), torch.cat([mask, new_mask], dim=1), cache


def pack_columns(cache: Any, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-align each row's real columns and drop the columns left empty in every row.

    A key already carries its position (rotary embeddings are applied before caching)
    and ``generate`` numbers new tokens by counting the mask's ones, so moving columns
    changes nothing a row attends to. ``cache``'s layers are replaced by the gathered
    ``[B, H, W, D]`` keys and values, ``W`` the most real columns any row has.

    Shapes: ``ids``, ``mask`` ``[B, C]`` (``C`` the cache's columns) → ``[B, W]`` each.

    >>> from transformers import DynamicCache
    >>> cache = DynamicCache()
    >>> _ = cache.update(torch.arange(4.).view(1, 1, 4, 1).repeat(2, 1, 1, 1), torch.zeros(2, 1, 4, 1), 0)
    >>> ids, mask = pack_columns(cache, torch.tensor([[7, 8, 0, 9], [5, 0, 0, 6]]),
    ...                          torch.tensor([[1, 1, 0, 1], [1, 0, 0, 1]]))
    >>> ids.tolist(), mask.tolist(), cache.layers[0].keys[:, 0, :, 0].tolist()
    ([[7, 8, 9], [0, 5, 6]], [[1, 1, 1], [0, 1, 1]], [[0.0, 1.0, 3.0], [2.0, 0.0, 3.0]])
    """
    cols = packed_columns(mask)
    if cols is None:
        return ids, mask
    _gather_columns(cache, cols)
    return ids.gather(1, cols), mask.gather(1, cols)


def packed_columns(mask: torch.Tensor) -> torch.Tensor | None:
    """Per row, the columns :func:`pack_columns` keeps, in order; None when it keeps all.

    Shapes: ``mask`` ``[B, C]`` → ``[B, W]``.

    >>> packed_columns(torch.tensor([[1, 1, 0, 1], [1, 0, 0, 1]])).tolist()
    [[0, 1, 3], [2, 0, 3]]
    """
    width = int(mask.sum(1).max()) if mask.numel() else 0
    if width == mask.shape[1]:
        return None
    # a stable sort puts each row's padding first and keeps its real columns in order
    return torch.sort(mask.ne(0).to(torch.int8), dim=1, stable=True).indices[:, mask.shape[1] - width:]


def _gather_columns(cache: Any, cols: torch.Tensor) -> None:
    for lay in cache.layers:
        idx = cols.to(lay.keys.device)[:, None, :, None]
        lay.keys = lay.keys.gather(2, idx.expand(-1, lay.keys.shape[1], -1, lay.keys.shape[-1]))
        lay.values = lay.values.gather(2, idx.expand(-1, lay.values.shape[1], -1, lay.values.shape[-1]))


#: the fixed cost of one forward pass in prompt tokens' worth of compute. SmolLM2-135M on
#: 2 CPU cores, n new tokens after 500 cached ones: 72 ms for 1, 601 ms for 256, 4.3 s for
#: 16 × 128 (≈ 2.2 ms a token beyond the first), so a bucket must save ≈ 32 padded tokens
PREFILL_CALL_COST = 32


def prefill_buckets(lengths: Sequence[int], call_cost: int = PREFILL_CALL_COST) -> list[list[int]]:
    """Rows grouped so that encoding each group padded to its longest row costs least.

    The cost of a group is ``len(group) * max length + call_cost``; the groups are
    contiguous in length order (an optimal partition always is), found by dynamic
    programming. Rows of length 0 need no encoding and are left out.

    >>> prefill_buckets([300, 20, 290, 25, 0])
    [[0, 2], [3, 1]]
    >>> prefill_buckets([30, 28, 31])  # splitting would save less than a call costs
    [[2, 0, 1]]
    """
    order = sorted((i for i, n in enumerate(lengths) if n > 0), key=lambda i: -lengths[i])
    n = len(order)
    best = [0.0] + [float("inf")] * n  # best[j]: cheapest cover of the j longest rows
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        for i in range(j):  # the last group is order[i:j], its longest row order[i]
            cost = best[i] + (j - i) * lengths[order[i]] + call_cost
            if cost < best[j]:
                best[j], cut[j] = cost, i
    groups, j = [], n
    while j > 0:
        groups.append(order[cut[j]:j])
        j = cut[j]
    return groups[::-1]


@torch.no_grad()
def prefill_in_buckets(model, ids: torch.Tensor, mask: torch.Tensor, cache: Any, device: torch.device) -> None:
    """Encode every uncached column of a left-padded batch but the last into ``cache``,
    bucket by bucket (:func:`prefill_buckets`), so that ``generate`` only encodes the last
    column. Does nothing when one padded batch is as cheap (``generate`` encodes it).

    Each row's new tokens end at the right edge, after the columns ``cache`` holds; a
    bucket ``[r]`` of longest length ``w`` encodes columns ``[end - w, end)`` of its rows
    against their cached keys, zeros standing in for the columns between (masked: they
    are padding for every row of the bucket). Positions come from the attention mask as
    in ``generate``, so the keys written are the ones one padded batch would write. Only
    the cache is wanted, so the model computes logits of one position, not ``rows x tokens
    x vocabulary`` of them (gigabytes at MetaQA's 3-hop lengths;
    ``experiments/benchmarks/prefill_logits.py``).

    Shapes: ``ids`` and ``mask`` ``[B, T]``; ``cache`` holds ``[B, H, C, D]`` per layer
    (``C`` may be 0) and holds ``[B, H, T - 1, D]`` afterwards.
    """
    from transformers import DynamicCache

    done = cache.get_seq_length()
    end = ids.shape[1] - 1  # generate encodes the last column itself: it needs its logits
    todo = mask[:, done:end].sum(1).tolist()
    groups = prefill_buckets(todo)
    if len(groups) <= 1:
        return
    positions = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)
    new_k: list[torch.Tensor] = []
    new_v: list[torch.Tensor] = []
    for rows in groups:
        start = end - todo[rows[0]]
        r = torch.tensor(rows)
        sub = DynamicCache()
        if start > 0:  # the bucket's rows' cached keys, then zeros for the columns between
            cached = [(lay.keys, lay.values) for lay in cache.layers] if done else list(zip(new_k, new_v, strict=True))
            for j, (keys, values) in enumerate(cached):
                k, v = keys[r.to(keys.device), :, :done], values[r.to(keys.device), :, :done]
                gap = (*k.shape[:2], start - done, k.shape[-1])
                sub.update(torch.cat([k, k.new_zeros(gap)], 2), torch.cat([v, v.new_zeros(gap)], 2), j)
        model(input_ids=ids[r, start:end].to(device), attention_mask=mask[r, :end].to(device),
              position_ids=positions[r, start:end].to(device), use_cache=True, logits_to_keep=1,
              **cache_kwargs(sub))
        for j, lay in enumerate(sub.layers):
            k, v = lay.keys[:, :, start:], lay.values[:, :, start:]
            if len(new_k) <= j:
                shape = (ids.shape[0], k.shape[1], end - done, k.shape[-1])
                new_k.append(k.new_zeros(shape))
                new_v.append(v.new_zeros(shape))
            new_k[j][r.to(k.device), :, start - done:] = k
            new_v[j][r.to(v.device), :, start - done:] = v
    for j in range(len(new_k)):
        cache.update(new_k[j], new_v[j], j)


@contextmanager
def count_encoded_positions(model) -> Iterator[list[int]]:
    """Record the token positions, padding included, that each forward pass of ``model``
    encodes (a CPU prefill is compute-bound: it costs that many).

    A forward pre-hook rather than a wrapper around ``forward``: ``generate`` reads
    ``forward``'s signature to decide which inputs (position ids) to pass, so a wrapper
    would change what is decoded. A PEFT model is counted at its base model.

    Yields:
        The list each pass appends its ``input_ids.numel()`` to.
    """
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    seen: list[int] = []

    def hook(_module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        seen.append(ids.numel())

    handle = base.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        yield seen
    finally:
        handle.remove()


class ChosenLogprobs:
    """A logits processor that records, for each row, the log-prob of the token ``generate``
    then picks, under ``log_softmax(logits / temperature)``.

    It sees the raw logits of a step (custom processors run before the sampling warpers)
    and learns which token was picked from the next step's ``input_ids``; :meth:`finish`
    reads the last step's pick from the returned sequences. Only one step's logits are
    kept: storing every step's logits (``output_logits``) cost 3–7 % of a 32-row decode,
    this ≈ 1 %.

    >>> rec = ChosenLogprobs(temperature=2.0)
    >>> _ = rec(torch.tensor([[5]]), torch.tensor([[0.0, 0.0]]))
    >>> _ = rec(torch.tensor([[5, 1]]), torch.tensor([[2.0, 0.0]]))
    >>> rec.finish(torch.tensor([0]))
    tensor([[-0.6931, -0.3133]])
    """

    def __init__(self, temperature: float = 1.0):
        self.temperature = temperature
        self._prev: tuple[torch.Tensor, torch.Tensor] | None = None
        self._out: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if self._prev is not None:
            self._out.append(self._pick(input_ids[:, -1]))
        z = scores.float() / self.temperature if self.temperature != 1.0 else scores.float().clone()
        self._prev = (z, torch.logsumexp(z, dim=-1))
        return scores

    def _pick(self, tokens: torch.Tensor) -> torch.Tensor:
        assert self._prev is not None
        z, lse = self._prev
        return z.gather(1, tokens[:, None].to(z.device)).squeeze(1) - lse

    def finish(self, last: torch.Tensor) -> torch.Tensor | None:
        """``[B, k]`` log-probs of the ``k`` generated tokens (None: none was generated);
        ``last`` are the tokens of the final step (the sequences' last column)."""
        if self._prev is not None:
            self._out.append(self._pick(last))
            self._prev = None
        return torch.stack(self._out, dim=1).cpu() if self._out else None


def finish_generation(tokenizer, new: list[int], stop: Sequence[str], max_new_tokens: int,
                      logprobs: Sequence[float] | None = None) -> Generation:
    """A completion cut where it ends: after the first EOS, or at the end of the first
    stop string (the shortest token prefix whose text holds it), else at the length limit.

    Engines decode a few tokens past a stop string (they check it per token, and a stop
    string can end inside a token); this gives every engine the same cut. ``logprobs``
    (one per token of ``new``) are cut alike.
    """
    gen = _cut(tokenizer, new, stop, max_new_tokens)
    if logprobs is not None:
        if len(logprobs) < len(gen.token_ids):
            raise ValueError(f"{len(logprobs)} log-probs for {len(gen.token_ids)} generated tokens")
        gen.logprobs = [float(x) for x in logprobs[:len(gen.token_ids)]]
    return gen


def _cut(tokenizer, new: list[int], stop: Sequence[str], max_new_tokens: int) -> Generation:
    tok = tokenizer
    eos = tok.eos_token_id
    if eos in new:  # everything after the first EOS is padding
        k = new.index(eos) + 1
        text = tok.decode(new[:k - 1])
        hit = _first_stop(text, stop)
        if hit is None:
            return Generation(new[:k], text, "eos")
        new = new[:k - 1]
    text = tok.decode(new)
    hit = _first_stop(text, stop)
    if hit is None:
        return Generation(new, text, "length" if len(new) >= max_new_tokens else "eos")
    # The shortest prefix whose text contains the stop string (containment is monotone).
    lo, hi = 1, len(new)
    while lo < hi:
        mid = (lo + hi) // 2
        if _first_stop(tok.decode(new[:mid]), stop) is not None:
            hi = mid
        else:
            lo = mid + 1
    text = tok.decode(new[:lo])
    end = _first_stop(text, stop)
    return Generation(new[:lo], text[:end], "stop")


class WeightsCopyEngine(Engine):
    """An engine that decodes its own converted copy of the policy's weights (CTranslate2,
    ONNX Runtime GenAI), converting again whenever the policy's weights change.

    Subclasses write the copy into a scratch folder (:meth:`_write`) and load it from
    there (:meth:`_load`); the folder is deleted once loaded.

    Attributes:
        syncs: conversions so far; ``sync_seconds`` their total wall time.
    """

    #: the scratch folder's name prefix, and its room in float32 copies of the weights
    scratch_prefix = "kgreason-copy-"
    scratch_copies = 2

    def __init__(self, policy):
        self.policy = policy
        self.syncs = 0
        self.sync_seconds = 0.0
        self._copy: Any = None
        self._synced: WeightsVersion | None = None  # weights version the copy holds

    def _write(self, directory: str) -> None:
        raise NotImplementedError

    def _load(self, directory: str) -> Any:
        raise NotImplementedError

    def _current(self) -> Any:
        """The loaded copy, converted again whenever the policy's weights changed."""
        version = weights_version(self.policy.model)
        if self._copy is None or version != self._synced:
            self._sync(version)
        return self._copy

    def _sync(self, version: WeightsVersion) -> None:
        import shutil
        import time

        t0 = time.perf_counter()
        need = self.scratch_copies * sum(p.numel() * 4 for p in self.policy.model.parameters())
        directory = scratch_dir(self.scratch_prefix, need)
        try:
            self._write(directory)
            self._copy = None  # free the old copy before loading the new one
            self._copy = self._load(directory)
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        self._synced = version
        self.syncs += 1
        self.sync_seconds += time.perf_counter() - t0


def scratch_dir(prefix: str, need_bytes: int) -> str:
    """A new temporary folder for a weights copy that is written, read once and deleted:
    on ``/dev/shm`` (memory, no disk write) where it is writable and has ``need_bytes``
    free, else in the default temporary folder (containers often give ``/dev/shm`` 64 MB).

    >>> import os, shutil
    >>> d = scratch_dir("kgreason-doc-", need_bytes=10**18)  # more than any tmpfs holds
    >>> d.startswith("/dev/shm")
    False
    >>> shutil.rmtree(d)
    """
    import shutil
    import tempfile

    shm = "/dev/shm"
    root = shm if os.access(shm, os.W_OK) and shutil.disk_usage(shm).free >= need_bytes else None
    return tempfile.mkdtemp(prefix=prefix, dir=root)


def common_prefix_len(prompts: Sequence[Sequence[int]]) -> int:
    """Length of the longest token prefix all prompts share.

    >>> common_prefix_len([[1, 2, 3], [1, 2, 4, 5], [1, 2]])
    2
    """
    first = prompts[0]
    n = min(len(p) for p in prompts)
    for p in prompts[1:]:
        k = 0
        while k < n and p[k] == first[k]:
            k += 1
        n = k
    return n


def pad_batch(prompts: Sequence[Sequence[int]], pad: int, shared: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids and attention mask of a batch: the first ``shared`` tokens (common to all
    prompts) on the left, then each remainder left-padded to the same width.

    Shapes: ``N`` prompts → ids and mask ``[N, shared + max remainder]``.

    >>> ids, mask = pad_batch([[7, 8, 9], [7, 5]], pad=0, shared=1)
    >>> ids.tolist(), mask.tolist()
    ([[7, 8, 9], [7, 0, 5]], [[1, 1, 1], [1, 0, 1]])
    """
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad, dtype=torch.long)
    mask = torch.zeros_like(ids)
    ids[:, :shared] = torch.tensor(list(prompts[0][:shared]), dtype=torch.long)
    mask[:, :shared] = 1
    for i, p in enumerate(prompts):
        start = width - (len(p) - shared)  # the remainder ends at the right edge
        ids[i, start:] = torch.tensor(list(p[shared:]), dtype=torch.long)
        mask[i, start:] = 1
    return ids, mask


def _first_stop(text: str, stop: Sequence[str]) -> int | None:
    """End offset of the earliest stop string in ``text``."""
    ends = [text.find(s) + len(s) for s in stop if s and s in text]
    return min(ends) if ends else None
