"""kgreason: RL training and evaluation of LLM agents over knowledge graphs, as swappable parts.

The main entry points are importable from here; each loads its module on first use, so
``import kgreason`` stays light (the runner answers a config typo before torch loads).

>>> import kgreason
>>> kgreason.load_dataset("demo", split="dev")[0].question != ""
True
"""

from __future__ import annotations

from kgreason.registry import lazy_exports

__version__ = "0.1.0"

#: public name → the module that defines it
_EXPORTS: dict[str, str] = {
    # questions and answers
    "Entity": "kgreason.types", "KBQASample": "kgreason.types", "Term": "kgreason.types",
    "Trajectory": "kgreason.types", "Episode": "kgreason.types",
    "load_dataset": "kgreason.data", "load_splits": "kgreason.data", "register_dataset": "kgreason.data",
    "load_demo_kb": "kgreason.data",
    # knowledge bases
    "KBSchema": "kgreason.kb", "KnowledgeBase": "kgreason.kb", "OxigraphKB": "kgreason.kb",
    "SparqlEndpointKB": "kgreason.kb", "TripleStoreKB": "kgreason.kb", "load_metaqa_kb": "kgreason.kb",
    "load_rdf_kb": "kgreason.kb", "load_tsv_kb": "kgreason.kb",
    # environments, rankers, rewards, RL math
    "ACTION_SPACES": "kgreason.envs", "KGEnv": "kgreason.envs", "make_env": "kgreason.envs",
    "register_action_space": "kgreason.envs",
    "DenseRanker": "kgreason.rankers", "GATEntityRanker": "kgreason.rankers",
    "REWARDS": "kgreason.rewards", "CompositeReward": "kgreason.rewards",
    "ADVANTAGES": "kgreason.rl", "policy_loss": "kgreason.rl",
    # models, training, evaluation
    "CausalLMPolicy": "kgreason.models", "Policy": "kgreason.models", "TrainablePolicy": "kgreason.models",
    "TrainingBatch": "kgreason.training", "RLConfig": "kgreason.training", "RLLitModule": "kgreason.training",
    "SFTLitModule": "kgreason.training", "evaluate": "kgreason.eval",
    # composition from the runner's configs
    "compose_config": "kgreason.config", "build_parts": "kgreason.compose", "build_policy": "kgreason.compose",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
