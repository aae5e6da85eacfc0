"""kgreason: RL training and evaluation of LLM agents over knowledge graphs, as swappable parts."""

__version__ = "0.1.0"
