"""Serve a policy behind an OpenAI-compatible completions API (``pip install 'kgreason[serve]'``).

The same protocol vLLM and SGLang servers speak, with their token-id extensions, so
``engine=openai`` rollouts run against this server, a vLLM server or an SGLang server
alike; this one runs the project's own CPU engines, which makes it the test server on a
machine without a GPU and a way to serve a trained policy::

    python -m kgreason.serve --model smollm2 --port 8000
    python -m kgreason.serve --model outputs/<run>/export/merged --engine ct2
"""

from kgreason.serve.app import create_app, merge_adapter

__all__ = ["create_app", "merge_adapter"]
