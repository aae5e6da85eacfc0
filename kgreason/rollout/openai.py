"""Rollouts on OpenAI-compatible completion servers (``engine=openai``).

The engine sends prompts as token ids and reads back token ids and their log-probs (vLLM's
``return_tokens_as_token_ids``, or the ``token_ids`` of vLLM's and SGLang's
``return_token_ids``), so the policy's own output is never decoded and encoded again; the
text is decoded from those ids and cut as every engine cuts it. A batch is spread over the
servers in contiguous chunks, one request each, in parallel; a server that fails
(connection refused or reset, a timeout, a 5xx) is left out and its chunk goes to the next
one; when none is left the batch fails with :class:`EngineUnavailable` naming each
server's error — no episode is dropped silently.

Weights (``weight_sync``): whenever the policy's weights changed
(:func:`~kgreason.models.version.weights_version`), every server is brought to them under a
new version name, ``policy-v<k>``, and every answer is checked to come from that version
(:class:`EngineStaleWeights` otherwise):

* ``kgreason`` — kgreason's server (``python -m kgreason.serve``): the merged weights as a
  ``save_pretrained`` checkpoint, ``POST /kgreason/load_weights``; requests name the
  version as their ``model`` and answers carry it back.
* ``vllm_lora`` — vLLM's runtime LoRA loading (``vllm serve <base> --enable-lora`` with
  ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``): the whole adapter stack as one peft adapter
  (:func:`~kgreason.models.export.save_adapter`), ``POST /v1/load_lora_adapter`` under the
  version's name, the previous version unloaded; requests name the adapter. LoRA policies
  only; the server serves the pre-trained base.
* ``sglang_disk`` — SGLang's ``POST /update_weights_from_disk`` with the merged checkpoint
  and ``weight_version``; answers carry it in ``metadata.weight_version``.
* ``none`` — fixed weights (evaluation on any server); the answers are not checked.

The checkpoint folders go under ``sync_dir``, which servers on other machines must see at
the same path.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kgreason.errors import ConfigError, EngineError, EngineStaleWeights, EngineUnavailable
from kgreason.models.export import merged_copy, save_adapter
from kgreason.models.version import WeightsVersion, weights_version
from kgreason.rollout.engine import Engine, Generation, finish_generation

TOKEN_PREFIX = "token_id:"


WEIGHT_SYNCS = ("kgreason", "vllm_lora", "sglang_disk", "none")


class OpenAIEngine(Engine):
    """:class:`~kgreason.rollout.Engine` on one or more OpenAI-compatible completion servers.

    Args:
        policy: the trained :class:`~kgreason.models.CausalLMPolicy` (its tokenizer decodes,
            its weights are pushed to the servers).
        urls: the servers' base URLs (``http://127.0.0.1:8000/v1``).
        temperature, top_p, top_k: sampling, as for :class:`~kgreason.rollout.HFEngine`.
        timeout_s: per request.
        weight_sync: how the servers get the policy's weights after each change, one of
            :data:`WEIGHT_SYNCS` (see the module's docstring).
        sync_dir: where weight checkpoints are written (default: a temporary folder on
            ``/dev/shm`` where there is one); servers on other machines need a shared one.

    Attributes:
        version: the weights version the servers must answer from (``policy-v<k>``).
        syncs: weight pushes so far; ``failed`` servers left out, with their errors.

    Raises:
        ConfigError: an unknown ``weight_sync``, or ``vllm_lora`` for a policy without LoRA.
    """

    def __init__(self, policy, urls: Sequence[str], temperature: float = 1.0, top_p: float = 1.0, top_k: int = 0,
                 timeout_s: float = 600.0, weight_sync: str = "kgreason", sync_dir: str | None = None):
        if not urls:
            raise EngineUnavailable("engine=openai needs at least one server: set engine.urls")
        if weight_sync not in WEIGHT_SYNCS:
            raise ConfigError(f"engine.weight_sync={weight_sync!r} is not one of {', '.join(WEIGHT_SYNCS)}")
        if weight_sync == "vllm_lora" and getattr(policy, "lora", None) is None:
            raise ConfigError("engine.weight_sync=vllm_lora sends LoRA adapters, but the policy is fully fine-tuned "
                              "(model.policy.lora=null): use weight_sync=sglang_disk or kgreason")
        self.policy = policy
        self.tokenizer = policy.tokenizer
        self.urls = [u.rstrip("/") for u in urls]
        self.temperature, self.top_p, self.top_k = temperature, top_p, top_k
        self.timeout_s = timeout_s
        self.weight_sync = weight_sync
        self._sync_root = sync_dir
        self.version: str | None = None
        self.syncs = 0
        self.failed: dict[str, str] = {}
        self._synced: WeightsVersion | None = None
        self._held: Path | None = None  # the adapter folder a vLLM server reads from (lazily)

    # ------------------------------------------------------------------ generation
    def generate(self, prompts: Sequence[Sequence[int]], stop: Sequence[str] = (),
                 max_new_tokens: int = 256, greedy: bool = False) -> list[Generation]:
        if not prompts:
            return []
        if self.weight_sync != "none":
            self._sync()
        stops = [s for s in stop if s]
        body = {"max_tokens": max_new_tokens, "temperature": 0.0 if greedy else self.temperature,
                "top_p": 1.0 if greedy else self.top_p, "top_k": -1 if greedy or self.top_k <= 0 else self.top_k,
                "stop": stops, "logprobs": 0, "include_stop_str_in_output": True,
                "return_tokens_as_token_ids": True, "return_token_ids": True}
        if self.weight_sync == "sglang_disk":
            body["no_stop_trim"] = True  # SGLang's name for keeping the stop string
        elif self.version is not None:
            body["model"] = self.version
        live = self._live()
        size = -(-len(prompts) // len(live))
        chunks = [list(range(i, min(i + size, len(prompts)))) for i in range(0, len(prompts), size)]
        out: list[Generation] = []
        with ThreadPoolExecutor(max_workers=len(chunks)) as pool:
            futures = [pool.submit(self._complete, [list(prompts[i]) for i in rows], body, k)
                       for k, rows in enumerate(chunks)]
            for fut in futures:  # chunks are contiguous and in order: their answers are too
                out += [finish_generation(self.tokenizer, ids, stops, max_new_tokens, lps) for ids, lps in fut.result()]
        return out

    def _live(self) -> list[str]:
        live = [u for u in self.urls if u not in self.failed]
        if not live:
            raise EngineUnavailable("no completion server is left: " +
                                    "; ".join(f"{u}: {e}" for u, e in self.failed.items()))
        return live

    def _complete(self, prompts: list[list[int]], body: dict[str, Any], start: int) -> list[tuple[list[int], list[float]]]:
        """One chunk on the first live server from ``start`` on, failing over to the next."""
        while True:
            live = self._live()
            url = live[start % len(live)]
            try:
                return self._parse(self._post(url + "/completions", {**body, "prompt": prompts}), len(prompts), url)
            except EngineStaleWeights as e:  # e.g. restarted with other weights: not to be trusted
                self.failed[url] = str(e)
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, ValueError) as e:
                reason = getattr(e, "reason", e)
                self.failed[url] = f"{type(reason).__name__}: {reason}"

    def _served_version(self, answer: dict[str, Any]) -> Any:
        if self.weight_sync == "sglang_disk":
            return (answer.get("metadata") or {}).get("weight_version")
        return answer.get("model")

    def _parse(self, answer: dict[str, Any], n: int, url: str) -> list[tuple[list[int], list[float]]]:
        if self.weight_sync != "none" and self.version is not None and self._served_version(answer) != self.version:
            raise EngineStaleWeights(f"{url} answered from {self._served_version(answer)!r}, not {self.version!r}")
        choices = sorted(answer.get("choices") or [], key=lambda c: c.get("index", 0))
        if len(choices) != n:
            raise EngineUnavailable(f"{url} returned {len(choices)} completions for {n} prompts")
        out = []
        for c in choices:
            lp = c.get("logprobs") or {}
            tokens, values = lp.get("tokens"), lp.get("token_logprobs")
            if c.get("token_ids") is not None:
                ids = [int(t) for t in c["token_ids"]]
            elif tokens is not None and all(str(t).startswith(TOKEN_PREFIX) for t in tokens):
                ids = [int(str(t)[len(TOKEN_PREFIX):]) for t in tokens]
            else:
                raise EngineUnavailable(f"{url} returned no token ids (it must accept return_token_ids or "
                                        "return_tokens_as_token_ids)")
            if values is None or len(values) != len(ids):
                raise EngineUnavailable(f"{url} returned {0 if values is None else len(values)} log-probs for "
                                        f"{len(ids)} tokens")
            out.append((ids, [float(v) for v in values]))
        return out

    def _post(self, url: str, payload: dict[str, Any]) -> dict[str, Any]:
        """POST JSON; the answer's JSON (vLLM answers some admin calls in plain text: ``{"text": …}``)."""
        req = urllib.request.Request(url, data=json.dumps(payload).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                raw = r.read()
            try:
                return json.loads(raw)
            except json.JSONDecodeError:
                return {"text": raw.decode("utf-8", "replace")}
        except urllib.error.HTTPError as e:
            text = e.read(2000).decode("utf-8", "replace")
            if e.code == 404 and self.version is not None and url.endswith("/completions"):
                raise EngineStaleWeights(f"{url} does not serve {self.version!r}: {text}") from None
            if e.code >= 500:
                raise ConnectionError(f"HTTP {e.code}: {text[:200]}") from None
            raise EngineUnavailable(f"{url} refused the request (HTTP {e.code}): {text[:300]}") from None

    # ------------------------------------------------------------------ weights
    def _sync(self) -> None:
        version = weights_version(self.policy.model)
        if version == self._synced:
            return
        name = f"policy-v{self.syncs + 1}"
        from kgreason.training.distributed import rank_and_world

        rank = rank_and_world()[0]
        if self.weight_sync == "vllm_lora" and rank > 0:
            # each data-parallel process loads and unloads its own adapter (the same weights):
            # one shared name would be loaded twice (refused) and unloaded under the others
            name += f"-rank{rank}"
        folder = self._root() / name
        if self.weight_sync == "vllm_lora":
            save_adapter(self.policy, folder, base=str(self.policy.model.config.name_or_path or "base"))
        else:
            merged_copy(self.policy.model).save_pretrained(folder)
        try:
            for url in self._live():
                base = url[: -len("/v1")] if url.endswith("/v1") else url
                try:
                    self._push(base, folder, name)
                except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, EngineError) as e:
                    self.failed[url] = f"weight load failed: {getattr(e, 'reason', e)}"
            self._live()  # at least one server holds the new weights
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        if self.weight_sync == "vllm_lora":  # vLLM reads an adapter when a request first names it: keep it
            if self._held is not None:
                shutil.rmtree(self._held, ignore_errors=True)
            self._held = folder
        else:  # the servers hold the weights in memory now
            shutil.rmtree(folder, ignore_errors=True)
        self.version, self._synced = name, version
        self.syncs += 1

    def _push(self, base: str, folder: Path, name: str) -> None:
        """Bring the server at ``base`` to the weights in ``folder`` under version ``name``."""
        if self.weight_sync == "kgreason":
            self._post(base + "/kgreason/load_weights", {"path": str(folder), "name": name})
        elif self.weight_sync == "vllm_lora":
            self._post(base + "/v1/load_lora_adapter", {"lora_name": name, "lora_path": str(folder)})
            if self.version is not None:  # the old adapter takes a LoRA slot on the server
                self._post(base + "/v1/unload_lora_adapter", {"lora_name": self.version})
        else:
            answer = self._post(base + "/update_weights_from_disk",
                                {"model_path": str(folder), "weight_version": name, "flush_cache": True})
            if not answer.get("success", False):
                raise EngineUnavailable(f"{base} did not load the weights: {answer.get('message')}")

    def _root(self) -> Path:
        if self._sync_root is None:
            shm = Path("/dev/shm")
            self._sync_root = tempfile.mkdtemp(prefix="kgreason-openai-", dir=shm if shm.is_dir() else None)
        root = Path(self._sync_root)
        root.mkdir(parents=True, exist_ok=True)
        return root

    def __repr__(self) -> str:
        return f"{type(self).__name__}(urls={self.urls}, weight_sync={self.weight_sync!r}, version={self.version!r})"
