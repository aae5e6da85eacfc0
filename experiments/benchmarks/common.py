"""Shared by the benchmark scripts."""

from pathlib import Path

#: ../shared/data beside the checkout (where CI and developer machines keep the real data)
SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
