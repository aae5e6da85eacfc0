"""Rollouts on OpenAI-compatible completion servers (``engine=openai``).

The engine sends prompts as token ids and reads back token ids and their log-probs (vLLM's
``return_tokens_as_token_ids`` extension), so the policy's own output is never decoded and
encoded again; the text is decoded from those ids and cut as every engine cuts it. A batch
is spread over the servers in contiguous chunks, one request each, in parallel; a server
that fails (connection refused or reset, a timeout, a 5xx) is left out and its chunk goes
to the next one; when none is left the batch fails with :class:`EngineUnavailable`
naming each server's error — no episode is dropped silently.

Weights: whenever the policy's weights changed (:func:`~kgreason.models.version.weights_version`),
the merged weights are written as a ``save_pretrained`` checkpoint and every server is
told to load it under a new model name, ``policy-v<k>`` (kgreason's server:
``POST /kgreason/load_weights``). Requests name that model, so a server still holding
older weights refuses them, and every response's ``model`` is checked: an answer from
other weights is :class:`EngineStaleWeights`. ``reload=False`` serves fixed weights
(evaluation on a vLLM or SGLang server, which have no such endpoint).
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

from kgreason.errors import EngineStaleWeights, EngineUnavailable
from kgreason.models.export import merged_copy
from kgreason.models.version import WeightsVersion, weights_version
from kgreason.rollout.engine import Engine, Generation, finish_generation

TOKEN_PREFIX = "token_id:"


class OpenAIEngine(Engine):
    """:class:`~kgreason.rollout.Engine` on one or more OpenAI-compatible completion servers.

    Args:
        policy: the trained :class:`~kgreason.models.CausalLMPolicy` (its tokenizer decodes,
            its weights are pushed to the servers).
        urls: the servers' base URLs (``http://127.0.0.1:8000/v1``).
        temperature, top_p, top_k: sampling, as for :class:`~kgreason.rollout.HFEngine`.
        timeout_s: per request.
        reload: push the policy's weights whenever they change (kgreason's server); False:
            the servers' weights are fixed and the served model name is not checked.
        sync_dir: where weight checkpoints are written (default: a temporary folder on
            ``/dev/shm`` where there is one); servers on other machines need a shared one.

    Attributes:
        version: the served model name the servers must answer with (``policy-v<k>``).
        syncs: weight pushes so far; ``failed`` servers left out, with their errors.
    """

    def __init__(self, policy, urls: Sequence[str], temperature: float = 1.0, top_p: float = 1.0, top_k: int = 0,
                 timeout_s: float = 600.0, reload: bool = True, sync_dir: str | None = None):
        if not urls:
            raise EngineUnavailable("engine=openai needs at least one server: set engine.urls")
        self.policy = policy
        self.tokenizer = policy.tokenizer
        self.urls = [u.rstrip("/") for u in urls]
        self.temperature, self.top_p, self.top_k = temperature, top_p, top_k
        self.timeout_s = timeout_s
        self.reload = reload
        self._sync_root = sync_dir
        self.version: str | None = None
        self.syncs = 0
        self.failed: dict[str, str] = {}
        self._synced: WeightsVersion | None = None

    # ------------------------------------------------------------------ generation
    def generate(self, prompts: Sequence[Sequence[int]], stop: Sequence[str] = (),
                 max_new_tokens: int = 256, greedy: bool = False) -> list[Generation]:
        if not prompts:
            return []
        if self.reload:
            self._sync()
        stops = [s for s in stop if s]
        body = {"max_tokens": max_new_tokens, "temperature": 0.0 if greedy else self.temperature,
                "top_p": 1.0 if greedy else self.top_p, "top_k": -1 if greedy or self.top_k <= 0 else self.top_k,
                "stop": stops, "logprobs": 0, "include_stop_str_in_output": True,
                "return_tokens_as_token_ids": True}
        if self.version is not None:
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

    def _parse(self, answer: dict[str, Any], n: int, url: str) -> list[tuple[list[int], list[float]]]:
        if self.reload and self.version is not None and answer.get("model") != self.version:
            raise EngineStaleWeights(f"{url} answered from {answer.get('model')!r}, not {self.version!r}")
        choices = sorted(answer.get("choices") or [], key=lambda c: c.get("index", 0))
        if len(choices) != n:
            raise EngineUnavailable(f"{url} returned {len(choices)} completions for {n} prompts")
        out = []
        for c in choices:
            lp = c.get("logprobs") or {}
            tokens, values = lp.get("tokens"), lp.get("token_logprobs")
            if tokens is None or values is None or any(not str(t).startswith(TOKEN_PREFIX) for t in tokens):
                raise EngineUnavailable(f"{url} returned no token ids (it must accept return_tokens_as_token_ids)")
            out.append(([int(str(t)[len(TOKEN_PREFIX):]) for t in tokens], [float(v) for v in values]))
        return out

    def _post(self, url: str, payload: dict[str, Any]) -> dict[str, Any]:
        req = urllib.request.Request(url, data=json.dumps(payload).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            text = e.read(2000).decode("utf-8", "replace")
            if e.code == 404 and self.version is not None:
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
        folder = self._root() / name
        merged_copy(self.policy.model).save_pretrained(folder)
        try:
            for url in self._live():
                base = url[: -len("/v1")] if url.endswith("/v1") else url
                try:
                    self._post(base + "/kgreason/load_weights", {"path": str(folder), "name": name})
                except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:
                    self.failed[url] = f"weight load failed: {getattr(e, 'reason', e)}"
            self._live()  # at least one server holds the new weights
        finally:
            shutil.rmtree(folder, ignore_errors=True)  # the servers hold the weights in memory now
        self.version, self._synced = name, version
        self.syncs += 1

    def _root(self) -> Path:
        if self._sync_root is None:
            shm = Path("/dev/shm")
            self._sync_root = tempfile.mkdtemp(prefix="kgreason-openai-", dir=shm if shm.is_dir() else None)
        root = Path(self._sync_root)
        root.mkdir(parents=True, exist_ok=True)
        return root

    def __repr__(self) -> str:
        return f"{type(self).__name__}(urls={self.urls}, version={self.version!r})"
