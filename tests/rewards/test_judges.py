"""The ``llm_judge`` reward with a chat model as the judge, against a local
OpenAI-compatible endpoint that judges by reading the prompt."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from kgreason.rewards import get
from kgreason.rewards.judges import ChatJudge
from kgreason.training.teachers import OpenAITeacher
from kgreason.types import Entity, KBQASample, Trajectory
from tests.training.test_rejection_sampling import send_chat_completion


class _Judge(BaseHTTPRequestHandler):
    """Says yes when the predicted answer is one of the gold answers, ignoring case."""

    requests: list[str] = []
    reply: str | None = None  # a fixed reply instead

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][-1]["content"]
        type(self).requests.append(prompt)
        gold = re.search(r"Gold answers: (.*)", prompt).group(1).lower().split(" | ")
        answer = re.search(r"Predicted answer: (.*)", prompt).group(1).lower()
        send_chat_completion(self, self.reply if self.reply is not None else ("Yes." if answer in gold else "No"))

    def log_message(self, *args):
        pass


@pytest.fixture
def endpoint():
    server = HTTPServer(("127.0.0.1", 0), _Judge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Judge.requests, _Judge.reply = [], None
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


SAMPLE = KBQASample("q", "Where was Dostoevsky born?", answers=[Entity("m.1", "Moscow")])


def said(answer: str) -> Trajectory:
    return Trajectory("q", answer_text=answer, answer=[Entity(answer, answer)])


def test_a_chat_model_judges_the_answer_and_each_verdict_is_asked_once(endpoint):
    judge = ChatJudge(OpenAITeacher(endpoint, model="judge", temperature=0.0))
    reward = get("llm_judge")
    assert reward(said("moscow"), SAMPLE, judge=judge).total == 1.0  # the judge, not an alias match, says so
    assert reward(said("St Petersburg"), SAMPLE, judge=judge).total == 0.0
    assert reward(said("moscow"), SAMPLE, judge=judge).total == 1.0
    assert judge.calls == 2 and len(_Judge.requests) == 2  # the repeated answer came from the cache
    assert "Question: Where was Dostoevsky born?" in _Judge.requests[0] and "Gold answers: Moscow" in _Judge.requests[0]


def test_an_unreadable_verdict_or_a_dead_endpoint_falls_back_to_the_alias_match(endpoint):
    _Judge.reply = "Perhaps."
    judge = ChatJudge(OpenAITeacher(endpoint, model="judge"))
    assert get("llm_judge")(said("Moscow"), SAMPLE, judge=judge).total == 1.0 and judge.fallbacks == 1
    dead = ChatJudge(OpenAITeacher("http://127.0.0.1:9/v1", model="judge", timeout_s=2))
    assert get("llm_judge")(said("Kyiv"), SAMPLE, judge=dead).total == 0.0 and dead.fallbacks == 1


def test_kg_reasoners_answer_reward_takes_a_judge_by_config(endpoint):
    from kgreason.config import CONFIG_DIR

    cfg = OmegaConf.load(CONFIG_DIR / "reward" / "kg_reasoner.yaml")
    cfg.components[2].kwargs = {"judge": {"_target_": "kgreason.rewards.judges.ChatJudge",
                                          "chat": {"_target_": "kgreason.training.teachers.OpenAITeacher",
                                                   "base_url": endpoint, "model": "judge"}}}
    reward = instantiate(cfg)
    out = reward(said("moscow"), SAMPLE)
    assert out.components["answer"] == 1.0 and len(_Judge.requests) == 1
