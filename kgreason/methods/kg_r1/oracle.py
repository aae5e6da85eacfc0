"""A scripted KG-R1 policy that follows a sample's gold relation path.

It checks that the action space can express a question (every hop is one
``get_tail_entities`` / ``get_head_entities`` call per frontier entity) and produces
well-formed trajectories with templated ``<think>`` text, the raw material of cold-start
SFT data.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgreason.envs.base import KGEnv
from kgreason.envs.payloads import EntityList
from kgreason.types import KBQASample, Trajectory


def expressible(sample: KBQASample) -> bool:
    """Whether the oracle can answer ``sample``: a relation path, and no constraint
    beyond counting (superlatives, comparisons and time filters need SPARQL)."""
    return bool(sample.relation_path) and bool(sample.topic_entities)


@dataclass
class PathOracle:
    """Follow ``sample.relation_path`` from its first topic entity.

    Args:
        exclude_topic: never pass through or answer the topic entity again (MetaQA's
            convention: "genres of movies that share actors with X" skips X itself).
        by_name: refer to entities by name when the name is unambiguous, else by id.
        list_relations: before each hop, list the relations of the (first) frontier
            entity, then pick the gold one from the list — the KG-R1 way of finding a
            relation, and the one a small model can learn (it copies a listed name
            instead of recalling one).
        probe_tail_first: with ``list_relations``, a backward hop first lists the entity's
            tail relations, sees that the relation is not there (or that there are none),
            then lists its head relations. A small model cannot tell from a name whether
            an entity is the subject or the object of the relation it needs (an actor in
            MetaQA is only ever an object); this shows it how to recover from the wrong
            guess instead of answering after an empty list.
        announce_hops: with ``list_relations``, the first thought says how many hops the
            question takes and each hop is numbered ("hop 1 of 2"). Whether to answer or
            take another hop is otherwise decided from the question, far back in the
            context: the demo's SmolLM2 followed the right first relation on every 2-hop
            dev question and then answered with that hop's entity. Announced, the plan is
            made at the first turn, next to the question, and the later decision compares
            the model's own recent "hop i of n".
        restate_question: with ``list_relations``, the thought that picks a relation first
            copies the question ("The question is: what language is Occident in.
            in_language is the relation to follow from Occident."). The choice is then made
            with the question's words a few tokens back rather than behind the prompt and
            the relation list; without it the MetaQA SmolLM2 picked the last listed
            relation (``written_by``) on 52 of its 87 genre/tag/language/actor misses.
        restate_at_decision: with ``list_relations``, the thought after each entity hop —
            where the policy either takes another hop or answers — first copies the question
            ("The question is: where was the director of Psycho born. I need the relations
            of Alfred Hitchcock."). The demo's SmolLM2 answered every 2-hop dev question with
            its first hop's entities, also when that hop was right: it decided from the
            observation (a named entity → answer, a CVT id → go on), not from the question.
        enumerate_count: with ``list_relations``, a count question's last thought numbers
            the entities it counts ("Counting what the last hop returned: 1. Dutch,
            2. French, 3. German: 3 in all."), so the answer is the last number written
            rather than a count made in one token — the demo's SmolLM2 answered 1 or 2 to
            all three of its 3-element count questions.
    """

    exclude_topic: bool = True
    by_name: bool = True
    list_relations: bool = False
    probe_tail_first: bool = False
    announce_hops: bool = False
    restate_question: bool = False
    restate_at_decision: bool = False
    enumerate_count: bool = False

    def messages(self, env: KGEnv, sample: KBQASample) -> Trajectory:
        """Play one episode on ``env``; returns its trajectory (answer resolved)."""
        if not expressible(sample):
            raise ValueError(f"sample {sample.id} has no relation path the oracle can follow")
        env.reset(sample)
        kb = env.kb
        topic = sample.topic_entities[0]
        frontier = [topic.id]
        labels = {topic.id: topic.name or topic.id}
        path = sample.relation_path or []
        n = len(path)
        question = sample.question.strip().rstrip("?.!").strip()
        restated = f"The question is: {question}. "
        plan = ""
        if self.announce_hops:
            plan = f"The question takes {n} hop{'s' if n > 1 else ''} from {labels[topic.id]}. "
        for i, step in enumerate(path):
            backward = step.startswith("~")
            rel = step[1:] if backward else step
            fn = "get_head_entities" if backward else "get_tail_entities"
            nxt: list[str] = []
            for j, e in enumerate(frontier):
                name = arg = labels.get(e, e)
                if not self.by_name or arg != e and kb.lookup(arg) != [e]:
                    arg = e
                if self.list_relations and j == 0:
                    think = f"I need the relations of {name}."
                    if self.announce_hops:
                        think = plan + think if i == 0 else f"Hop {i + 1} of {n}: {think}"
                    if self.restate_at_decision and i > 0:
                        think = restated + think
                    if backward and self.probe_tail_first:
                        r = env.step(f"<think>{think}</think>\n<kg-query>get_tail_relations(\"{arg}\")</kg-query>")
                        if r.done:
                            assert env.trajectory is not None
                            return env.trajectory
                        why = (f"{name} is the object of the relation I need, not its subject"
                               if r.error is None else f"There are none: {name} must be an object")
                        think = f"{why}, so I list its head relations."
                    lister = "get_head_relations" if backward else "get_tail_relations"
                    r = env.step(f"<think>{think}</think>\n<kg-query>{lister}(\"{arg}\")</kg-query>")
                    if r.done:
                        assert env.trajectory is not None
                        return env.trajectory
                if self.list_relations:
                    hop = f" (hop {i + 1} of {n})" if self.announce_hops else ""
                    think = f"{rel} is the relation to follow from {name}{hop}."
                    if self.restate_question:
                        think = restated + think
                else:
                    think = (f"I need to follow {rel} {'backwards ' if backward else ''}from {name} "
                             f"(step {i + 1} of {n}).")
                r = env.step(f'<think>{think}</think>\n<kg-query>{fn}("{arg}", "{rel}")</kg-query>')
                if r.done:
                    assert env.trajectory is not None
                    return env.trajectory
                for payload in r.payloads:
                    if isinstance(payload, EntityList):
                        for x, lab in zip(payload.ids, payload.labels, strict=True):
                            labels.setdefault(x, lab)
                            nxt.append(x)
            frontier = list(dict.fromkeys(nxt))
            if self.exclude_topic:
                frontier = [x for x in frontier if x != topic.id]
        counting = bool(sample.meta.get("count"))
        answer = str(len(frontier)) if counting else ", ".join(labels.get(x, x) for x in frontier)
        if self.list_relations and counting and self.enumerate_count:
            items = ", ".join(f"{k}. {labels.get(x, x)}" for k, x in enumerate(frontier, 1)) or "nothing"
            think = f"Counting what the last hop returned: {items}: {answer} in all."
        elif self.list_relations:
            think = f"The last query returned the answer: {answer}."
        else:
            think = "The answer is what the last hop returned."
        if self.list_relations and self.restate_at_decision:
            think = restated + think
        env.step(f"<think>{think}</think>\n<answer>{answer}</answer>")
        assert env.trajectory is not None
        return env.trajectory


def gold_episode(env: KGEnv, sample: KBQASample, rng: object = None) -> Trajectory | None:
    """KG-R1's scripted policy: the gold relation path, relations listed before each hop
    (``None``: the question has no path the oracle can walk)."""
    return PathOracle(list_relations=True).messages(env, sample) if expressible(sample) else None
