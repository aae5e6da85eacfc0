"""The GPU check script's CPU rehearsal (``check.sh --dry-run``: every step, tiny model, a
few steps) and the packing of what a lent GPU machine lacks into chunks of one call each."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"gpu_{name}", ROOT / "experiments" / "gpu" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_dry_run_runs_every_step_and_writes_the_figures(tmp_path):
    out = tmp_path / "check"
    env = {**os.environ, "PYTHON": sys.executable}
    p = subprocess.run(["bash", str(ROOT / "experiments" / "gpu" / "check.sh"), "--dry-run", str(out)], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    f = json.loads((out / "figures.json").read_text())
    assert f["dry_run"] is True and f["env"]["device"] == "cpu" and "error" not in f["env"]
    # the gpu tests are collected and skipped here (no CUDA), none fails
    assert f["gpu_tests"]["exit"] == 0 and "skipped" in f["gpu_tests"]["result"] and not f["gpu_tests"]["failed"]
    assert len(f["gpu_tests"]["files"]) >= 5
    assert f["smoke"]["exit"] == 0 and f["smoke"]["device"] == "cpu" and set(f["smoke"]["f1"]) == {"untrained", "trained"}
    cpu = f["throughput"]["cpu"]
    assert set(cpu["rollout_tok_s"]) == {"2", "4"} and all(v > 0 for v in cpu["rollout_tok_s"].values())
    assert cpu["update_tok_s"] > 0 and all(v > 0 for v in cpu["iteration_s"].values())
    share = f["rl_share"]
    assert share["exit"] == 0 and share["iterations"] >= 1
    assert share["sft"]["n"] == share["trained"]["n"] == 4
    assert share["rl_share_hit1"] == pytest.approx(share["trained"]["hit1"] - share["sft"]["hit1"], abs=1e-3)
    summary = (out / "summary.md").read_text()
    assert "| rollout tok/s, batch 4 |" in summary and "RL's share" in summary
    assert {p.name for p in out.iterdir()} <= {"figures.json", "summary.md", "gpu_tests.log", "smoke.log",
                                                "rl_share.log"}  # what comes back from a device call: 8 files at most


def wheel(path: Path, name: str = "kgr_probe") -> Path:
    """A minimal pure-Python wheel holding one module."""
    whl = path / f"{name}-0.1-py3-none-any.whl"
    info = f"{name}-0.1.dist-info"
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr(f"{name}/__init__.py", "VALUE = 42\n")
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "")
    return whl


def packed(tmp_path: Path, chunk: int) -> tuple[Path, dict]:
    """A payload (a wheel, a model file) packed as pack.py packs it, into ``tmp_path/.gpu``."""
    pack = load("pack")
    stage = tmp_path / "stage"
    (stage / "whl").mkdir(parents=True)
    wheel(stage / "whl")
    (stage / "cache" / "models").mkdir(parents=True)
    (stage / "cache" / "models" / "model.gguf").write_bytes(os.urandom(5000))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(stage, arcname=".")
    data = buf.getvalue()
    gpu = tmp_path / ".gpu"
    manifest = {"chunks": pack.write_chunks(data, chunk, gpu), "sha256": pack.sha256(data), "bytes": len(data)}
    (gpu / "manifest.json").write_text(json.dumps(manifest))
    return gpu, manifest


def test_chunks_unpack_once_all_are_there_and_the_wheels_install(tmp_path, capsys):
    pack = load("pack")
    gpu, manifest = packed(tmp_path, chunk=4096)
    assert len(manifest["chunks"]) >= 3 and all(c["bytes"] <= 4096 for c in manifest["chunks"])
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    last = gpu / manifest["chunks"][-1]["name"]
    last.rename(moved / last.name)  # a chunk not carried yet
    assert pack.unpack(gpu) == 3
    assert f"chunks held: {len(manifest['chunks']) - 1} of {len(manifest['chunks'])}" in capsys.readouterr().out
    (moved / last.name).rename(last)
    assert pack.unpack(gpu) == 0
    site = gpu / "payload" / "site"
    assert (site / "kgr_probe" / "__init__.py").read_text() == "VALUE = 42\n"
    assert (gpu / "payload" / "cache" / "models" / "model.gguf").stat().st_size == 5000
    assert pack.unpack(gpu) == 0 and "payload ready" in capsys.readouterr().out  # a later call: nothing redone


def test_a_chunk_that_changed_is_not_counted_as_held(tmp_path, capsys):
    pack = load("pack")
    gpu, manifest = packed(tmp_path, chunk=4096)
    first = gpu / manifest["chunks"][0]["name"]
    first.write_bytes(b"x" + first.read_bytes()[1:])
    assert pack.unpack(gpu) == 3
    assert not (gpu / "payload").exists()
