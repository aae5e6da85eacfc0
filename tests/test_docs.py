"""The README example runs and prints what it says."""

from __future__ import annotations

import contextlib
import doctest
import io
import re
import textwrap
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs():
    code = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    text = out.getvalue()
    assert "Nairobi" in text and text.strip().endswith("True 1.0")


DOCS = README.parent / "docs"


def test_docs_doctests_pass():
    for page in ("index.md", "kb.md", "data.md", "envs.md", "architecture.md", "methods/isp_dtpo.md"):
        result = doctest.testfile(str(DOCS / page), module_relative=False, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0 and result.failed == 0, page


def test_env_page_examples_run():
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / "envs.md").read_text(), re.S)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for code in blocks:
            if not code.lstrip().startswith(">>>"):  # doctest blocks run under --doctest-glob
                exec(compile(code, "docs/envs.md", "exec"), {})
    assert "(hop 1 of 2)" in out.getvalue() and "<answer>" in out.getvalue()


def test_the_architecture_table_lists_every_config_option():
    conf = README.parent / "kgreason" / "conf"
    rows = dict(re.findall(r"^\| `(\w+)` \| ([^|]*) \|", (DOCS / "architecture.md").read_text(), re.M))
    for group in ("kb", "ranker", "env", "model", "engine", "reward", "objective", "rollout", "cold_start",
                  "curriculum", "ranker_training", "data", "trainer", "method", "preset", "ablation"):
        listed = set(re.findall(r"`(\w+)`", rows[group]))
        assert listed == {p.stem for p in (conf / group).glob("*.yaml")}, group


def test_training_page_examples_run():
    pytest.importorskip("ctranslate2")
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / "training.md").read_text(), re.S)
    assert blocks
    for code in blocks:
        exec(compile(textwrap.dedent(code), "docs/training.md", "exec"), {})


def test_every_relative_link_in_the_docs_reaches_a_file_and_its_anchor():
    """A moved or renamed page breaks no link (anchors: a heading's slug or an explicit id)."""
    broken = []
    for page in [README, *DOCS.rglob("*.md")]:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve()
            if not dest.exists():
                broken.append(f"{page.relative_to(README.parent)} → {target}")
            elif anchor and dest.suffix == ".md":
                text = dest.read_text(encoding="utf-8")
                slugs = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
                         for h in re.findall(r"^#+ (.*)$", text, re.M)}
                if anchor not in slugs and f'id="{anchor}"' not in text:
                    broken.append(f"{page.relative_to(README.parent)} → {target} (no such anchor)")
    assert not broken, broken
