"""One name per part: a config option, the class or function it builds and the registry
key it is known by agree, so that what a user types, imports and reads in a log match."""

from __future__ import annotations

import re

import pytest

from kgreason.compat import option_nodes as options
from kgreason.envs import ACTION_SPACES
from kgreason.registry import load_methods

#: what every name in a group ends with, or starts with, and says nothing about the part
AFFIXES = {"cold_start": ("", "_cold_start"), "curriculum": ("", "_stream"), "engine": ("", "_engine"),
           "ranker": ("", "_ranker"), "kb": ("load_", "_kb"), "rollout": ("", "_experience")}


def snake(name: str) -> str:
    """snake_case of a class name.

    >>> snake("CT2Engine"), snake("GATEntityRanker"), snake("HFEngine"), snake("OpenAIEngine")
    ('ct2_engine', 'gat_entity_ranker', 'hf_engine', 'openai_engine')
    """
    name = name.replace("OpenAI", "Openai")  # one word, as the API is called (engine=openai)
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def part_name(target: str, group: str) -> str:
    parts = target.split(".")
    name = parts[-2] if parts[-1] == "build" else parts[-1]  # a class's builder names the class
    prefix, suffix = AFFIXES[group]
    name = snake(name)
    name = name[len(prefix):] if name.startswith(prefix) else name
    return name[: -len(suffix)] if suffix and name.endswith(suffix) else name


def leads(option: str, name: str) -> bool:
    """The option's words are the leading words of the part's name (``gat`` of
    ``gat_entity``: SPEC names the class ``GATEntityRanker``)."""
    return name == option or name.startswith(option + "_")


@pytest.mark.parametrize("group", sorted(AFFIXES))
def test_each_option_names_the_part_it_builds(group):
    bad = []
    for option, cfg in options(group).items():
        name = part_name(cfg["_target_"], group)
        # "none" switches the part off: NoColdStart
        if not leads("no" if option == "none" else option, name):
            bad.append(f"{group}={option} builds {cfg['_target_']}")
    assert not bad, "options and parts disagree: " + "; ".join(bad)


def test_each_env_option_is_its_action_spaces_registry_key():
    load_methods()
    for option, cfg in options("env").items():
        assert ACTION_SPACES.name_of(cfg["space"]["_target_"]) == option


def test_each_data_option_starts_with_its_dataset_registry_key():
    from kgreason.data.datasets import DATASETS

    for option, cfg in options("data").items():
        assert cfg["name"] in DATASETS and leads(cfg["name"], option), option


def test_ranker_training_options_name_the_ranker_they_train():
    for option in options("ranker_training"):
        assert option == "none" or option in options("ranker"), option
