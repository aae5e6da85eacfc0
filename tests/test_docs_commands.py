"""Every ``python experiments/run.py ...`` command the docs show composes and passes the
runner's checks (the precheck every command line gets before anything loads): an override
renamed or removed in the code shows up here, not in a reader's terminal. The benchmark
scripts and ``python -m kgreason...`` tools a page runs exist and define every option it
passes."""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import pytest
import torch

from kgreason.pipeline import _precheck

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: what stands for a file the reader has: a checkpoint of their run, their question file
PLACEHOLDER_VALUE = re.compile(r"^(checkpoint|resume)=")
THEIR_FILES = {"my_questions.jsonl": "docs/examples/capitals.jsonl"}


def block_lines(text: str) -> list[str]:
    """The lines of a page's shell code blocks, continuations (``\\``) joined, stripped."""
    found: list[str] = []
    lang: str | None = None  # the open block's language; None outside a block
    block: list[str] = []
    for line in text.splitlines():
        fence = re.match(r"\s*```(\w*)", line)
        if fence and lang is None:
            lang, block = fence.group(1), []
        elif fence:  # a closing fence: a python block's must not open a shell block
            if lang in ("bash", "sh", "console", ""):
                found += [x.strip() for x in re.sub(r"\\\n\s*", " ", "\n".join(block)).splitlines()]
            lang = None
        elif lang is not None:
            block.append(line)
    return found


def commands(text: str) -> list[str]:
    """The runner commands in a page: code lines (continued with ``\\``) and inline code."""
    found = [line for line in block_lines(text) if line.startswith("python experiments/run.py")]
    found += re.findall(r"`(python experiments/run\.py[^`]*)`", text)
    return [" ".join(c.split(" #")[0].split()) for c in found]


def argv_of(command: str, checkpoint: Path) -> list[str] | None:
    """The command's arguments with the reader's own paths stood in for (None: a
    template, e.g. ``method=kg_r1|isp_dtpo`` or ``ablation_row=<row>``)."""
    out = []
    for arg in shlex.split(re.sub(r"<[^<>]*>", "HOLE", command))[2:]:
        if arg.startswith("hydra."):
            continue
        if PLACEHOLDER_VALUE.match(arg):
            arg = f"{arg.split('=', 1)[0]}={checkpoint}"
        elif "|" in arg or "..." in arg or "HOLE" in arg:
            return None
        for theirs, ours in THEIR_FILES.items():
            arg = arg.replace(theirs, str(ROOT / ours))
        out.append(arg)
    return out


#: commands a page shows to show the refusal it prints, and a phrase of that refusal
REFUSED = {"python experiments/run.py method=isp_dtpo rollout=linear": "scores tree nodes: it needs rollout=tree"}

DOC_COMMANDS = sorted({(page.relative_to(ROOT).as_posix(), c) for page in PAGES
                       for c in commands(page.read_text(encoding="utf-8"))})


def test_the_docs_show_runner_commands():
    assert len(DOC_COMMANDS) > 40


@pytest.mark.parametrize(("page", "command"), DOC_COMMANDS)
def test_every_docs_command_passes_the_runners_checks(page, command, tmp_path, monkeypatch):
    ckpt = tmp_path / "policy.pt"
    ckpt.write_bytes(b"")
    argv = argv_of(command, ckpt)
    if argv is None:
        pytest.skip("a template (method=kg_r1|isp_dtpo, ablation_row=<row>)")
    if any(a.startswith("resume=") for a in argv):
        pytest.skip("resume reads the checkpoint's run: a real run is needed (tests/training/test_resume.py)")
    if "engine=vllm" in argv and importlib.util.find_spec("vllm") is None:
        pytest.skip("engine=vllm needs the gpu extra, not installed here")
    if {"trainer=gpu", "trainer.accelerator=gpu"} & set(argv) and not torch.cuda.is_available():
        # checked as on a GPU machine; the refusal without one is tests/training/test_devices.py's
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    try:
        _precheck(argv)
    except SystemExit as e:
        if command in REFUSED:
            assert REFUSED[command] in str(e)
            return
        pytest.fail(f"{page}: {command}\n  {e}")
    assert command not in REFUSED, f"{page} shows {command!r} refused; it runs now"


def tool_commands(text: str) -> list[str]:
    """The benchmark-script and ``python -m kgreason...`` commands in a page's code."""
    found = block_lines(text) + re.findall(r"`([^`\n]*)`", text)
    pattern = re.compile(r"python (experiments/benchmarks/\w+\.py|-m kgreason[\w.]*)(.*)")
    return [" ".join((m.group(1) + m.group(2).split(" #")[0]).split()) for c in found if (m := pattern.match(c))]


TOOL_COMMANDS = sorted({(page.relative_to(ROOT).as_posix(), c) for page in PAGES
                        for c in tool_commands(page.read_text(encoding="utf-8"))})


def tool_source(target: str) -> Path | None:
    """The file a ``python <script>`` or ``python -m <module>`` command runs."""
    if target.endswith(".py"):
        return ROOT / target
    spec = importlib.util.find_spec(target.removeprefix("-m "))
    if spec is None or spec.origin is None:
        return None
    if spec.submodule_search_locations:  # a package runs its __main__
        return Path(spec.origin).with_name("__main__.py")
    return Path(spec.origin)


def test_the_docs_show_tool_commands():
    assert len(TOOL_COMMANDS) > 40


@pytest.mark.parametrize(("page", "command"), TOOL_COMMANDS)
def test_every_docs_tool_command_names_a_script_and_its_options(page, command):
    """A benchmark script or module a page runs exists, and each ``--option`` it passes is
    one the script's own parser defines (renamed options show up here)."""
    target = " ".join(command.split(" ")[:2]) if command.startswith("-m ") else command.split(" ")[0]
    source = tool_source(target)
    assert source is not None and source.exists(), f"{page}: {command}: no {target}"
    code = source.read_text(encoding="utf-8")
    for option in re.findall(r"(?<![\w-])(--[a-z][\w-]*)", command[len(target):]):
        assert f'"{option}"' in code or f"'{option}'" in code, f"{page}: {command}: {target} has no {option}"
