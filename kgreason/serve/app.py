"""The completions server: FastAPI over one :class:`~kgreason.rollout.Engine`.

(No ``from __future__ import annotations`` here: FastAPI reads the request models from
the endpoints' annotations at definition time.)

Endpoints:

* ``POST /v1/completions`` — OpenAI's completions request with prompts as token ids and
  vLLM's extensions (``top_k``, ``include_stop_str_in_output``,
  ``return_tokens_as_token_ids``); ``logprobs`` returns each sampled token's log-prob as
  ``tokens: ["token_id:<id>", …]`` and ``token_logprobs``. A request naming a ``model``
  other than the one served is refused (404), so a client never gets text from weights it
  did not ask for.
* ``GET /v1/models``, ``GET /health``.
* ``POST /kgreason/load_weights`` — ``{"path": <save_pretrained folder>, "name": <new
  served name>}``: load those weights in place and serve them under the new name (how
  ``engine=openai`` brings its servers to the trainer's weights after an update).
"""


import threading
import time
from pathlib import Path
from typing import Any

from kgreason.errors import KGReasonError


def _fastapi() -> Any:
    try:
        import fastapi
    except ImportError as e:
        raise KGReasonError("the completions server needs FastAPI and uvicorn: pip install 'kgreason[serve]'") from e
    return fastapi


def create_app(policy, engine=None, name: str = "policy") -> Any:
    """A FastAPI app serving ``policy`` through ``engine`` (default: an ``HFEngine``).

    Args:
        policy: a :class:`~kgreason.models.CausalLMPolicy`.
        engine: the engine that generates (``HFEngine`` or ``CT2Engine`` on ``policy``).
        name: the served model name, changed by each ``/kgreason/load_weights``.
    """
    fastapi = _fastapi()
    from fastapi.responses import JSONResponse
    from pydantic import BaseModel

    from kgreason.rollout import HFEngine

    engine = engine or HFEngine(policy)
    state = {"name": name, "loads": 0}
    lock = threading.Lock()  # one generation at a time: the engine keeps a KV cache
    app = fastapi.FastAPI(title="kgreason completions")

    class Completion(BaseModel):
        prompt: list[int] | list[list[int]] | str | list[str]
        model: str | None = None
        max_tokens: int = 16
        temperature: float = 1.0
        top_p: float = 1.0
        top_k: int = -1
        stop: str | list[str] | None = None
        logprobs: int | None = None
        include_stop_str_in_output: bool = True
        return_tokens_as_token_ids: bool = False

    class Load(BaseModel):
        path: str
        name: str

    def error(status: int, message: str, kind: str) -> Any:
        return JSONResponse(status_code=status, content={"error": {"message": message, "type": kind}})

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": state["name"], "object": "model", "owned_by": "kgreason"}]}

    @app.post("/v1/completions")
    def completions(req: Completion) -> Any:
        if req.model is not None and req.model != state["name"]:
            return error(404, f"model {req.model!r} is not served here (serving {state['name']!r})", "NotFoundError")
        prompts = req.prompt if req.prompt and isinstance(req.prompt[0], list) else [req.prompt]
        if not prompts or not all(isinstance(p, list) and p and all(isinstance(t, int) for t in p) for p in prompts):
            return error(400, "send prompts as token ids (a list of ints, or a list of such lists)",
                         "BadRequestError")
        if req.max_tokens < 1:
            return error(400, f"max_tokens must be at least 1, got {req.max_tokens}", "BadRequestError")
        stop = [req.stop] if isinstance(req.stop, str) else list(req.stop or [])
        greedy = req.temperature == 0
        with lock:
            engine.temperature, engine.top_p, engine.top_k = (req.temperature or 1.0), req.top_p, max(req.top_k, 0)
            gens = engine.generate(prompts, stop=stop, max_new_tokens=req.max_tokens, greedy=greedy)
            served = state["name"]
        choices = []
        for i, g in enumerate(gens):
            logprobs = None
            if req.logprobs is not None:
                tokens = ([f"token_id:{t}" for t in g.token_ids] if req.return_tokens_as_token_ids
                          else [policy.tokenizer.decode([t]) for t in g.token_ids])
                logprobs = {"tokens": tokens, "token_logprobs": g.logprobs, "top_logprobs": None, "text_offset": None}
            choices.append({"index": i, "text": g.text, "logprobs": logprobs,
                            "finish_reason": "length" if g.finish == "length" else "stop"})
        n_prompt, n_gen = sum(map(len, prompts)), sum(len(g.token_ids) for g in gens)
        return {"id": f"cmpl-{time.monotonic_ns()}", "object": "text_completion", "created": int(time.time()),
                "model": served, "choices": choices,
                "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_gen, "total_tokens": n_prompt + n_gen}}

    @app.post("/kgreason/load_weights")
    def load_weights(req: Load) -> Any:
        import torch
        from safetensors.torch import load_file

        files = sorted(Path(req.path).glob("*.safetensors"))
        if not files:
            return error(400, f"no safetensors weights in {req.path!r}", "BadRequestError")
        weights: dict[str, torch.Tensor] = {}
        for f in files:
            weights.update(load_file(str(f)))
        target = policy.model.get_base_model() if hasattr(policy.model, "get_base_model") else policy.model
        with lock:
            missing, unexpected = target.load_state_dict(weights, strict=False)
            if unexpected or [k for k in missing if not k.endswith("lm_head.weight")]:
                return error(400, f"the weights do not fit the served model (missing {missing[:3]}, unexpected "
                                  f"{unexpected[:3]})", "BadRequestError")
            engine.clear_cache()
            state["name"] = req.name
            state["loads"] += 1
        return {"name": req.name, "loads": state["loads"]}

    return app
