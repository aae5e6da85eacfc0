"""Layering: the pure-function parts import nothing above them, and the kernel imports no method."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ABOVE = ("kgreason.envs", "kgreason.rollout", "kgreason.models", "kgreason.training", "torch")


@pytest.mark.parametrize("module", ["kgreason.rewards", "kgreason.eval.metrics", "kgreason.types"])
def test_module_does_not_import_the_layers_above(module):
    code = (f"import sys, {module}; "
            f"print(sorted({{m.split('.')[0] if m == 'torch' else '.'.join(m.split('.')[:2]) "
            f"for m in sys.modules if m.startswith({ABOVE!r})}}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", f"{module} imports {out.strip()}"


ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "kgreason"
METHODS = sorted(p.name for p in (PACKAGE / "methods").iterdir() if (p / "__init__.py").is_file())


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module a file imports, at any depth (function-level imports too), with strings
    that name a ``kgreason.methods.<name>`` module (an ``importlib`` by name); docstrings,
    whose examples may use a method, are not code."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out += [(node.lineno, node.module)] + [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            out += [(node.lineno, m) for m in re.findall(r"kgreason\.methods\.\w+", node.value)]
    return out


def test_the_generic_kernel_imports_no_method():
    """kb, envs, rewards, rl, rankers, rollout, training, eval, models, data know no method:
    methods register themselves (kgreason.registry.load_methods finds them)."""
    bad = []
    for f in sorted(PACKAGE.rglob("*.py")):
        if "methods" in f.relative_to(PACKAGE).parts:
            continue
        bad += [f"{f.relative_to(ROOT)}:{line} {m}" for line, m in _imports(f)
                if m == "kgreason.methods" and f.name != "registry.py" or m.startswith("kgreason.methods.")]
    assert not bad, "the kernel imports a method:\n" + "\n".join(bad)


@pytest.mark.parametrize("method", METHODS)
def test_a_method_imports_no_other_method(method):
    bad = []
    for f in sorted((PACKAGE / "methods" / method).rglob("*.py")):
        bad += [f"{f.name}:{line} {m}" for line, m in _imports(f)
                if m.split(".")[:3] != ["kgreason", "methods", method]
                and len(m.split(".")) > 2 and m.split(".")[2] in METHODS]
    assert not bad, bad


def test_the_contract_check_sees_a_method_import(tmp_path):
    """The scan above finds what it looks for: a kernel-style file naming a method, both ways."""
    f = tmp_path / "x.py"
    f.write_text('"""Uses kgreason.methods.kbqa_r1 in an example."""\n'
                 "def f():\n    from kgreason.methods.kg_r1 import space\n"
                 "importlib.import_module('kgreason.methods.isp_dtpo.rewards')\n")
    assert [m for _, m in _imports(f) if m.startswith("kgreason.methods.")] == [
        "kgreason.methods.kg_r1", "kgreason.methods.kg_r1.space", "kgreason.methods.isp_dtpo"]


def test_methods_are_discovered_not_listed():
    """Every package under kgreason/methods registers its action space, found on first look-up."""
    code = ("from kgreason.envs import ACTION_SPACES; from kgreason.registry import load_methods; "
            "import sys; before = sorted(m for m in sys.modules if m.startswith('kgreason.methods.')); "
            "print(before, ACTION_SPACES.names(), load_methods())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    before, names, loaded = out.strip().split("] [")
    assert before == "[", before  # nothing imported a method before the registry was asked
    assert names.split("]")[0].replace("'", "").split(", ") == METHODS
    assert all(f"kgreason.methods.{m}" in loaded for m in METHODS)


def test_a_method_from_another_distribution_registers_through_its_entry_point(tmp_path):
    """A method of one's own: its package plus a ``kgreason.methods`` entry point, nothing in kgreason."""
    (tmp_path / "toy_method").mkdir()
    (tmp_path / "toy_method" / "__init__.py").write_text(
        "from kgreason.envs import register_action_space\n"
        "from kgreason.methods.kg_r1.space import KGR1ActionSpace\n"
        "from kgreason.rewards import RewardOutput, register\n\n"
        "@register_action_space('toy')\nclass ToySpace(KGR1ActionSpace):\n    pass\n\n"
        "@register('toy_len')\ndef toy_len(trajectory, sample, **_):\n"
        "    return RewardOutput(total=float(len(trajectory.turns)))\n")
    dist = tmp_path / "toy_method-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-method\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[kgreason.methods]\ntoy = toy_method\n")
    code = ("from kgreason.envs import make_env; from kgreason.data import load_demo_kb; "
            "from kgreason.rewards import get; "
            "env = make_env('toy', load_demo_kb()); print(type(env.action_space).__name__, get('toy_len').__name__)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(tmp_path)}, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.split() == ["ToySpace", "toy_len"]


def test_a_method_that_fails_to_import_is_named(tmp_path):
    (tmp_path / "broken_method.py").write_text("raise ImportError('needs a package that is not here')\n")
    dist = tmp_path / "broken_method-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-method\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[kgreason.methods]\nbroken = broken_method\n")
    code = "from kgreason.rewards import get; get('f1')"
    ok = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                        env={**os.environ, "PYTHONPATH": str(tmp_path)}, timeout=120)
    assert ok.returncode == 0, ok.stderr[-2000:]  # a name the kernel holds needs no method
    code = "from kgreason.rewards import get; get('kg_r1')"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(tmp_path)}, timeout=120)
    assert p.returncode != 0
    assert "RegistryError: method package 'broken_method' failed to import: ImportError: needs a package" in p.stderr
