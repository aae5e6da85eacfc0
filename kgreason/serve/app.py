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

The weight-update calls of vLLM and SGLang, so that ``engine.weight_sync=vllm_lora`` and
``sglang_disk`` run against this server as against theirs:

* ``POST /v1/load_lora_adapter`` — ``{"lora_name", "lora_path"}`` (a peft adapter folder
  over the weights the server started with); ``POST /v1/unload_lora_adapter`` —
  ``{"lora_name"}``. A request naming a loaded adapter as its ``model`` is answered with
  that adapter merged into the starting weights, and names it back; both answer in plain
  text, as vLLM does.
* ``POST /update_weights_from_disk`` — ``{"model_path", "weight_version"}``: SGLang's
  call; ``{"success", "message", "num_paused_requests"}`` back. Every completion carries
  the current version in ``metadata.weight_version`` (``GET /model_info`` too).
* ``return_token_ids`` (vLLM's and SGLang's): each choice carries its ``token_ids``.
"""


import threading
import time
from pathlib import Path
from typing import Any

from kgreason.errors import KGReasonError


def merge_adapter(base: dict[str, Any], folder: str) -> dict[str, Any]:
    """``base`` (a plain model's state dict) with the peft LoRA adapter in ``folder`` merged in.

    Each adapted linear layer's weight becomes ``W + (alpha / r) · B A`` (LoRA; rsLoRA's
    ``alpha / sqrt(r)`` where the adapter says so); ``base`` is not modified.

    Raises:
        ValueError: the adapter names a layer ``base`` does not have, shapes differ, or it is
            a DoRA adapter.
    """
    import json
    import math

    from safetensors.torch import load_file

    cfg = json.loads((Path(folder) / "adapter_config.json").read_text())
    if cfg.get("use_dora"):
        raise ValueError("a DoRA adapter: its magnitude vectors are not merged here")
    r, alpha = cfg["r"], cfg["lora_alpha"]
    scale = alpha / math.sqrt(r) if cfg.get("use_rslora") else alpha / r
    lora = load_file(str(Path(folder) / "adapter_model.safetensors"))
    out = dict(base)
    for key, a in lora.items():
        if ".lora_A." not in key:
            continue
        b = lora[key.replace(".lora_A.", ".lora_B.")]
        module = key.split(".lora_A.")[0].removeprefix("base_model.model.")
        name = module + ".weight"
        if name not in out:
            raise ValueError(f"the served model has no layer {module!r}")
        w = out[name]
        delta = (b.float() @ a.float()) * scale
        if delta.shape != w.shape:
            raise ValueError(f"{module}: the adapter's update is {tuple(delta.shape)}, the weight {tuple(w.shape)}")
        out[name] = (w.float() + delta).to(w.dtype)
    return out


def _fastapi() -> Any:
    try:
        import fastapi
    except ImportError as e:
        raise KGReasonError("the completions server needs FastAPI and uvicorn: pip install 'kgreason[serve]'") from e
    return fastapi


def create_app(policy, engine=None, name: str = "policy", weight_version: str = "default") -> Any:
    """A FastAPI app serving ``policy`` through ``engine`` (default: an ``HFEngine``).

    Args:
        policy: a :class:`~kgreason.models.CausalLMPolicy`.
        engine: the engine that generates (``HFEngine`` or ``CT2Engine`` on ``policy``).
        name: the served model name, changed by each ``/kgreason/load_weights``.
        weight_version: the version SGLang's clients see before the first update.
    """
    fastapi = _fastapi()
    from fastapi.responses import JSONResponse, PlainTextResponse
    from pydantic import BaseModel

    from kgreason.rollout import HFEngine

    engine = engine or HFEngine(policy)
    # "active": the name whose weights the model holds now (the served name or an adapter's)
    state: dict[str, Any] = {"name": name, "loads": 0, "weight_version": weight_version, "active": name}
    adapters: dict[str, str] = {}  # lora_name -> adapter folder
    target = policy.model.get_base_model() if hasattr(policy.model, "get_base_model") else policy.model
    # what adapters apply to: copied when the first adapter comes (until then the model holds it)
    served: dict[str, Any] = {}
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
        return_token_ids: bool = False

    class Load(BaseModel):
        path: str
        name: str

    class LoraLoad(BaseModel):
        lora_name: str
        lora_path: str | None = None

    class DiskLoad(BaseModel):
        model_path: str
        weight_version: str | None = None
        load_format: str | None = None
        flush_cache: bool = True

    def error(status: int, message: str, kind: str) -> Any:
        return JSONResponse(status_code=status, content={"error": {"message": message, "type": kind}})

    def load(weights: dict[str, Any]) -> str | None:
        """Load ``weights`` into the served model (under ``lock``); why not, or None."""
        missing, unexpected = target.load_state_dict(weights, strict=False)
        if unexpected or [k for k in missing if not k.endswith("lm_head.weight")]:
            return f"the weights do not fit the served model (missing {missing[:3]}, unexpected {unexpected[:3]})"
        engine.clear_cache()
        return None

    def read_folder(path: str) -> dict[str, Any] | None:
        from safetensors.torch import load_file

        files = sorted(Path(path).glob("*.safetensors"))
        if not files:
            return None
        weights: dict[str, Any] = {}
        for f in files:
            weights.update(load_file(str(f)))
        return weights

    def activate(model: str) -> str | None:
        """Hold ``model``'s weights (under ``lock``): the served ones or an adapter's merged in.

        Raises:
            ValueError: the adapter does not fit the served model (:func:`merge_adapter`).
        """
        if model == state["active"]:
            return None
        if not served:  # the model holds the served weights now: keep them before merging
            served.update({k: v.detach().clone() for k, v in target.state_dict().items()})
        weights = dict(served) if model == state["name"] else merge_adapter(served, adapters[model])
        why = load(weights)
        if why is None:
            state["active"] = model
        return why

    def replace(weights: dict[str, Any], name: str) -> str | None:
        """Serve ``weights`` in place of the served ones (under ``lock``); why not, or None."""
        why = load(weights)
        if why is None:
            if served:
                served.update({k: v.clone() for k, v in weights.items()})
            adapters.clear()  # they were over the old weights
            state.update(name=name, active=name, loads=state["loads"] + 1)
        return why

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": state["name"], "object": "model", "owned_by": "kgreason"}]}

    @app.post("/v1/completions")
    def completions(req: Completion) -> Any:
        if req.model is not None and req.model != state["name"] and req.model not in adapters:
            return error(404, f"model {req.model!r} is not served here (serving {state['name']!r}"
                              f"{', adapters ' + ', '.join(adapters) if adapters else ''})", "NotFoundError")
        prompts = req.prompt if req.prompt and isinstance(req.prompt[0], list) else [req.prompt]
        if not prompts or not all(isinstance(p, list) and p and all(isinstance(t, int) for t in p) for p in prompts):
            return error(400, "send prompts as token ids (a list of ints, or a list of such lists)",
                         "BadRequestError")
        if req.max_tokens < 1:
            return error(400, f"max_tokens must be at least 1, got {req.max_tokens}", "BadRequestError")
        stop = [req.stop] if isinstance(req.stop, str) else list(req.stop or [])
        greedy = req.temperature == 0
        with lock:
            model = req.model if req.model in adapters else state["name"]
            why = activate(model)
            if why is not None:
                return error(500, why, "InternalServerError")
            engine.temperature, engine.top_p, engine.top_k = (req.temperature or 1.0), req.top_p, max(req.top_k, 0)
            gens = engine.generate(prompts, stop=stop, max_new_tokens=req.max_tokens, greedy=greedy)
            version = state["weight_version"]
        choices = []
        for i, g in enumerate(gens):
            logprobs = None
            if req.logprobs is not None:
                tokens = ([f"token_id:{t}" for t in g.token_ids] if req.return_tokens_as_token_ids
                          else [policy.tokenizer.decode([t]) for t in g.token_ids])
                logprobs = {"tokens": tokens, "token_logprobs": g.logprobs, "top_logprobs": None, "text_offset": None}
            choice = {"index": i, "text": g.text, "logprobs": logprobs,
                      "finish_reason": "length" if g.finish == "length" else "stop"}
            if req.return_token_ids:
                choice["token_ids"] = list(g.token_ids)
            choices.append(choice)
        n_prompt, n_gen = sum(map(len, prompts)), sum(len(g.token_ids) for g in gens)
        return {"id": f"cmpl-{time.monotonic_ns()}", "object": "text_completion", "created": int(time.time()),
                "model": model, "choices": choices, "metadata": {"weight_version": version},
                "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_gen, "total_tokens": n_prompt + n_gen}}

    @app.post("/kgreason/load_weights")
    def load_weights(req: Load) -> Any:
        weights = read_folder(req.path)
        if weights is None:
            return error(400, f"no safetensors weights in {req.path!r}", "BadRequestError")
        with lock:
            why = replace(weights, req.name)
            if why is not None:
                return error(400, why, "BadRequestError")
        return {"name": req.name, "loads": state["loads"]}

    @app.post("/v1/load_lora_adapter")
    def load_lora_adapter(req: LoraLoad) -> Any:
        folder = Path(req.lora_path or "")
        if not (folder / "adapter_config.json").is_file():
            return error(400, f"no peft adapter in {req.lora_path!r}", "BadRequestError")
        with lock:
            if req.lora_name in adapters or req.lora_name == state["name"]:
                return error(400, f"the LoRA adapter {req.lora_name!r} has already been loaded", "BadRequestError")
            adapters[req.lora_name] = str(folder)
            try:  # merged now, so an adapter that does not fit is refused here, not at first use
                why = activate(req.lora_name)
            except (ValueError, KeyError, RuntimeError) as e:
                why = str(e)
            if why is not None:
                del adapters[req.lora_name]
                return error(400, f"the adapter in {req.lora_path!r} does not fit: {why}", "BadRequestError")
        return PlainTextResponse(f"Success: LoRA adapter '{req.lora_name}' added successfully.")

    @app.post("/v1/unload_lora_adapter")
    def unload_lora_adapter(req: LoraLoad) -> Any:
        with lock:
            if req.lora_name not in adapters:
                return error(404, f"the LoRA adapter {req.lora_name!r} cannot be found", "NotFoundError")
            del adapters[req.lora_name]
            if state["active"] == req.lora_name:
                activate(state["name"])
        return PlainTextResponse(f"Success: LoRA adapter '{req.lora_name}' removed successfully.")

    @app.post("/update_weights_from_disk")
    def update_weights_from_disk(req: DiskLoad) -> Any:
        weights = read_folder(req.model_path)
        if weights is None:
            return JSONResponse(status_code=400, content={"success": False, "num_paused_requests": 0,
                                                          "message": f"no safetensors weights in {req.model_path!r}"})
        with lock:
            why = replace(weights, state["name"])
            if why is not None:
                return JSONResponse(status_code=400, content={"success": False, "message": why,
                                                              "num_paused_requests": 0})
            if req.weight_version is not None:
                state["weight_version"] = req.weight_version
        return {"success": True, "message": "Succeeded to update model weights.", "num_paused_requests": 0}

    @app.get("/model_info")
    def model_info() -> dict[str, Any]:
        return {"model_path": state["name"], "is_generation": True, "weight_version": state["weight_version"]}

    return app
