"""GrowingCache: in-place key/value writes give what DynamicCache's concatenation gives."""

from __future__ import annotations

import torch
from transformers import DynamicCache

from kgreason.models import CausalLMPolicy
from kgreason.models.compat import cache_kwargs
from kgreason.rollout.kv_cache import GrowingCache, GrowingLayer


def _kv(batch: int, length: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(batch, 2, length, 3, generator=gen), torch.randn(batch, 2, length, 3, generator=gen)


def test_layer_appends_like_cat_and_reallocates_logarithmically():
    layer = GrowingLayer(headroom=4)
    keys, values = [], []
    buffers = set()
    for step in range(60):
        k, v = _kv(2, 5 if step == 0 else 1, seed=step)
        keys.append(k)
        values.append(v)
        out_k, out_v = layer.update(k, v)
        buffers.add(layer._kbuf.data_ptr())
        assert torch.equal(out_k, torch.cat(keys, dim=-2)) and torch.equal(out_v, torch.cat(values, dim=-2))
    assert layer.get_seq_length() == 64
    assert len(buffers) <= 6  # 64 positions with headroom 4 and 1.5× growth: 5 allocations, not 60


def test_batch_select_repeat_and_crop_then_append():
    layer = GrowingLayer(headroom=8)
    k0, v0 = _kv(2, 4, seed=0)
    layer.update(k0, v0)
    layer.batch_select_indices(torch.tensor([1, 0, 1]))
    k1, v1 = _kv(3, 1, seed=1)
    out_k, _ = layer.update(k1, v1)
    assert torch.equal(out_k, torch.cat([k0[[1, 0, 1]], k1], dim=-2))
    layer.crop(-2)  # drop the last two positions; the next write lands where they were
    k2, v2 = _kv(3, 1, seed=2)
    out_k, out_v = layer.update(k2, v2)
    assert torch.equal(out_k, torch.cat([k0[[1, 0, 1], :, :3], k2], dim=-2))
    layer.batch_repeat_interleave(2)
    k3, v3 = _kv(6, 2, seed=3)
    out_k, _ = layer.update(k3, v3)
    assert out_k.shape == (6, 2, 6, 3) and torch.equal(out_k[:, :, 4:], k3)


def test_take_selects_rows_and_columns_in_one_copy_with_room_to_grow():
    layer = GrowingLayer(headroom=4)
    k0, v0 = _kv(3, 5, seed=0)
    layer.update(k0, v0)
    rows = torch.tensor([2, 0, 2, 1])
    cols = torch.tensor([[0, 1, 4], [1, 2, 3], [2, 3, 4], [0, 3, 4]])
    layer.take(rows, cols)
    want_k = torch.stack([k0[r][:, c] for r, c in zip(rows.tolist(), cols.tolist(), strict=True)])
    want_v = torch.stack([v0[r][:, c] for r, c in zip(rows.tolist(), cols.tolist(), strict=True)])
    assert torch.equal(layer.keys, want_k) and torch.equal(layer.values, want_v)
    buf = layer._kbuf.data_ptr()
    k1, v1 = _kv(4, 2, seed=1)
    out_k, out_v = layer.update(k1, v1)
    assert layer._kbuf.data_ptr() == buf  # the next write lands in the spare room
    assert torch.equal(out_k, torch.cat([want_k, k1], dim=-2)) and torch.equal(out_v, torch.cat([want_v, v1], dim=-2))


def test_take_of_every_row_in_order_copies_nothing():
    cache = GrowingCache(headroom=4)
    k0, v0 = _kv(2, 3, seed=0)
    cache.update(k0, v0, 0)
    ptr = cache.layers[0].keys.data_ptr()
    cache.take(torch.tensor([0, 1]))
    assert cache.layers[0].keys.data_ptr() == ptr and torch.equal(cache.layers[0].keys, k0)
    cache.take(torch.tensor([1]))
    assert torch.equal(cache.layers[0].keys, k0[[1]]) and torch.equal(cache.layers[0].values, v0[[1]])


def test_generate_with_growing_cache_equals_dynamic_cache():
    pol = CausalLMPolicy.tiny(seed=4)
    tok = pol.tokenizer
    rows = [pol.chat_ids([{"role": "user", "content": "x " * n}]) for n in (3, 9, 17)]
    width = max(map(len, rows))
    ids = torch.tensor([[tok.pad_token_id] * (width - len(r)) + r for r in rows])  # left padding
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])
    outs = []
    growing = GrowingCache(headroom=3)
    for cache in (DynamicCache(), growing):
        outs.append(pol.model.generate(input_ids=ids, attention_mask=mask, **cache_kwargs(cache),
                                       max_new_tokens=40, do_sample=False, pad_token_id=tok.pad_token_id))
    assert outs[0].shape[1] > width + 20
    assert torch.equal(outs[0], outs[1])
    layer = growing.layers[0]
    assert isinstance(layer, GrowingLayer) and layer.keys.data_ptr() == layer._kbuf.data_ptr()
