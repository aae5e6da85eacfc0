"""One spelling of the key/value-cache argument across transformers releases.

transformers 5.2x renamed ``past_key_values`` to ``cache`` in ``model(...)``,
``model.generate(...)`` and their outputs; the old name warns and is to be removed in 6.0,
while releases before the rename (down to the 4.57 that ``setup.cfg`` admits) know only
the old one. Passing :func:`cache_kwargs` and reading :func:`output_cache` works on both.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any


@functools.cache
def cache_keyword() -> str:
    """The keyword this transformers release takes for a key/value cache.

    >>> cache_keyword() in ("cache", "past_key_values")
    True
    """
    # transformers is imported on first use, as everywhere in the package
    from transformers.modeling_outputs import CausalLMOutputWithPast

    return "cache" if "cache" in {f.name for f in dataclasses.fields(CausalLMOutputWithPast)} else "past_key_values"


def cache_kwargs(cache: Any) -> dict[str, Any]:
    """``{cache_keyword(): cache}``, to pass as ``model(..., **cache_kwargs(cache))``."""
    return {cache_keyword(): cache}


def output_cache(out: Any) -> Any:
    """The key/value cache a forward pass or ``generate`` returned."""
    return getattr(out, cache_keyword())
