"""``python -m kgreason.serve``: serve a policy on an OpenAI-compatible completions API."""

from __future__ import annotations

import argparse


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m kgreason.serve", description=__doc__)
    ap.add_argument("--model", default="smollm2",
                    help="smollm2, tiny (a random test model, --seed), or a save_pretrained folder")
    ap.add_argument("--engine", default="hf", choices=["hf", "ct2"])
    ap.add_argument("--name", default="policy", help="the served model name")
    ap.add_argument("--weight-version", default="default", help="the weights version before the first update "
                    "(what SGLang's clients read in metadata.weight_version)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = ap.parse_args(argv)

    import torch
    import uvicorn

    from kgreason.models import CausalLMPolicy
    from kgreason.serve.app import create_app

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.model == "tiny":
        policy = CausalLMPolicy.tiny(seed=args.seed)
    elif args.model == "smollm2":
        policy = CausalLMPolicy.from_pretrained(lora=None, bf16=False)
    else:
        from kgreason.models.loading import load_causal_lm, load_tokenizer

        policy = CausalLMPolicy(load_causal_lm(args.model), load_tokenizer(args.model), lora=None, bf16=False)
    engine = None
    if args.engine == "ct2":
        from kgreason.rollout import CT2Engine

        engine = CT2Engine(policy)
    uvicorn.run(create_app(policy, engine, name=args.name, weight_version=args.weight_version), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
