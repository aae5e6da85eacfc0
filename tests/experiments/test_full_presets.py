"""`preset=full` is each paper's setting: every value of ``method_preset/<method>_full.yaml``
is in the method page's table with the paper section it comes from, and the composed
config holds the table's value."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from kgreason.config import CONFIG_DIR, compose_config, validate_config

DOCS = Path(__file__).resolve().parents[2] / "docs" / "methods"
METHODS = ("kg_r1", "kbqa_r1", "isp_dtpo", "knowcoder_a1", "kg_reasoner")
HEADING = "## The paper's setting (`preset=full`)"
ROW = re.compile(r"^\| `([^`]+)` \| `([^`]*)` \| (.+) \|$")


def paper_table(method: str) -> dict[str, tuple[object, str]]:
    """``config key -> (value, paper section)`` from the method page's full-preset table."""
    text = (DOCS / f"{method}.md").read_text(encoding="utf-8")
    assert HEADING in text, f"docs/methods/{method}.md has no {HEADING!r} section"
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if m := ROW.match(line.strip()):
            key, value, where = m.groups()
            assert key not in rows, f"{method}: {key} listed twice"
            rows[key] = (yaml.safe_load(value), where)
    return rows


def leaves(node: object, prefix: str = "") -> dict[str, object]:
    if isinstance(node, dict):
        return {k: v for key, sub in node.items() if key != "defaults"
                for k, v in leaves(sub, f"{prefix}{key}.").items()}
    return {prefix.rstrip("."): node}


@pytest.mark.parametrize("method", METHODS)
def test_the_full_preset_is_the_papers_table(method):
    table = paper_table(method)
    cfg = compose_config([f"method={method}", "preset=full"])
    validate_config(cfg)
    raw = OmegaConf.to_container(cfg, resolve=False)  # ${sft_cosine} as written, not resolved
    for key, (value, where) in table.items():
        got: object = raw
        for part in key.split("."):
            got = got.get(part, "<absent>") if isinstance(got, dict) else "<absent>"
        assert where.strip(), f"{method}: {key} names no paper section"
        if isinstance(value, float) or isinstance(got, float):
            assert got is not None and math.isclose(float(got), float(value)), f"{method}: {key}={got}, table {value}"
        else:
            assert got == value, f"{method}: {key}={got!r}, the table says {value!r} ({where})"
    # every value the preset sets is in the table, so none is set without its source
    preset = yaml.safe_load((CONFIG_DIR / "method_preset" / f"{method}_full.yaml").read_text(encoding="utf-8"))
    missing = sorted(set(leaves(preset)) - set(table))
    assert not missing, f"{method}_full.yaml sets {missing}, which docs/methods/{method}.md does not list"


def test_smaller_presets_keep_each_methods_group_size_or_say_why():
    own = {m: compose_config([f"method={m}"]).rollout.n_rollouts for m in METHODS}
    assert own == {"kg_r1": 16, "kbqa_r1": 5, "isp_dtpo": 16, "knowcoder_a1": 8, "kg_reasoner": 16}
    for m in METHODS:
        assert compose_config([f"method={m}", "preset=full"]).rollout.n_rollouts == own[m]
    # demo and smoke shrink the group for 2 CPU cores, and their files say so
    for preset in ("demo", "smoke"):
        text = (CONFIG_DIR / "preset" / f"{preset}.yaml").read_text(encoding="utf-8")
        assert re.search(r"n_rollouts: \d+ +# .*(core|second)", text), f"preset={preset} shrinks groups without a reason"
