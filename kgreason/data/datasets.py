"""Dataset loaders, each normalising one benchmark format to :class:`KBQASample`.

``load_dataset(name, path, split)`` is the single entry point; ``name`` is one of
:data:`DATASETS`. Official formats and the Think-on-Graph (ToG) evaluation files are both
recognised from their fields, so the same name reads either.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from kgreason.data.roles import METAQA_SHARES, SplitRoles, partition
from kgreason.errors import DatasetError
from kgreason.registry import Registry
from kgreason.types import Entity, KBQASample

Loader = Callable[..., list[KBQASample]]
#: every dataset loader by name (the one :class:`~kgreason.registry.Registry` kind)
DATASETS: Registry[Loader] = Registry("dataset")


def register_dataset(name: str, *, schema: str | None = None, gold: tuple[str, ...] | None = None,
                     splits: SplitRoles | None = None) -> Callable[[Loader], Loader]:
    """Decorator: register a loader ``(path, split=..., **kw) -> list[KBQASample]`` as ``name``.

    Args:
        schema: the KB id namespace its questions use (``freebase``, ``metaqa``,
            ``wikidata``); a KB of another schema cannot answer them.
        gold: the gold fields its questions carry (``sexpr``, ``sparql``,
            ``relation_path``), what a cold start may need.
        splits: which of its splits is train, tune and report (:mod:`kgreason.data.roles`).

    Raises:
        RegistryError: ``name`` already names another loader.
    """
    return DATASETS.register(name, schema=schema, gold=gold, splits=splits)  # type: ignore[return-value]


def load_dataset(name: str, path: str | Path | None = None, split: str = "dev",
                 limit: int | None = None, **kw: Any) -> list[KBQASample]:
    """Load a KBQA dataset as a list of :class:`KBQASample`.

    Args:
        name: one of ``demo``, ``metaqa``, ``webqsp``, ``cwq``, ``grailqa``,
            ``webquestions``, ``simplequestions``, ``qald10``, ``rog``.
        path: the file (or, for MetaQA, the folder holding ``kb.txt``). ``demo`` needs none.
        split: dataset split where the format has several (demo, MetaQA).
        limit: keep only the first ``limit`` samples.

    Raises:
        DatasetError: unknown name, missing file, or a file not in the expected format.
    """
    key = name.lower().replace("-", "").replace("_", "")
    aliases = {"qald": "qald10", "qald10en": "qald10", "simpleqa": "simplequestions",
               "webq": "webquestions", "complexwebquestions": "cwq"}
    key = aliases.get(key, key)
    if key not in DATASETS:
        raise DatasetError(f"unknown dataset {name!r}; known: {', '.join(sorted(DATASETS))}")
    if path is None and key != "demo":
        raise DatasetError(f"dataset {name!r} needs a path (data.path=...)")
    samples = DATASETS.get(key)(path, split=split, **kw)
    return samples[:limit] if limit is not None else samples


def _read_json(path: str | Path) -> Any:
    p = Path(path)
    if not p.exists():
        raise DatasetError(f"dataset file not found: {p}")
    raw = p.read_bytes()
    try:
        text = raw.decode("utf-8-sig")  # a byte-order mark (files saved on Windows) is dropped
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise DatasetError(f"{p}:{line}: not UTF-8 (byte {raw[e.start]:#04x} at offset {e.start}); "
                           "save the file as UTF-8") from None
    if p.suffix == ".jsonl" and not text.lstrip().startswith("["):  # a JSON list is read whole
        out = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise DatasetError(f"{p}:{n}: not valid JSON ({e})") from None
        return out
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise DatasetError(f"{p}: not valid JSON ({e})") from None


def _records(data: Any, path: str | Path, *keys: str) -> list[dict]:
    if isinstance(data, dict):
        for k in keys:
            if k in data:
                data = data[k]
                break
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a list of question records, got {type(data).__name__}")
    for n, rec in enumerate(data, 1):
        if not isinstance(rec, dict):
            raise DatasetError(f"{path}: record {n} is {type(rec).__name__}, not an object: {str(rec)[:60]}")
    return data


def _require(rec: dict, path: str | Path, *fields: str) -> None:
    missing = [f for f in fields if f not in rec]
    if missing:
        raise DatasetError(f"{path}: record lacks {missing} (has {sorted(rec)[:8]})")


def _topic_map(m: dict[str, str] | None) -> list[Entity]:
    return [Entity(k, v) for k, v in (m or {}).items()]


# ---------------------------------------------------------------------- jsonl
#: fields of a ``data=jsonl`` record (docs/data.md, "Your own questions")
JSONL_FIELDS = ("id", "question", "topic_entities", "answers", "sparql", "sexpr", "relation_path",
                "hops", "type", "split", "meta")


def _check_jsonl_types(rec: dict, where: str) -> None:
    """A :class:`DatasetError` naming the first field of ``rec`` whose value has the wrong type."""
    q = rec["question"]
    if not isinstance(q, str) or not q.strip():
        raise DatasetError(f"{where} question: expected a non-empty string, got {q!r}"[:200])
    for key in ("sparql", "sexpr", "type"):
        if rec.get(key) is not None and not isinstance(rec[key], str):
            raise DatasetError(f"{where} {key}: expected a string, got {rec[key]!r}"[:200])
    hops = rec.get("hops")
    if hops is not None and (not isinstance(hops, int) or isinstance(hops, bool) or hops < 1):
        raise DatasetError(f"{where} hops: expected an integer >= 1, got {hops!r}")
    path = rec.get("relation_path")
    if path is not None and (not isinstance(path, list) or not all(isinstance(r, str) for r in path)):
        raise DatasetError(f"{where} relation_path: expected a list of relation ids, got {path!r}"[:200])
    if rec.get("meta") is not None and not isinstance(rec["meta"], dict):
        raise DatasetError(f"{where} meta: expected an object, got {rec['meta']!r}"[:200])


def _jsonl_entities(value: Any, where: str) -> list[Entity]:
    """``["m.1"]``, ``[{"id": "m.1", "name": "Paris"}]`` or ``{"m.1": "Paris"}`` as entities."""
    if value is None:
        return []
    if isinstance(value, dict):
        return [Entity(str(k), None if v is None else str(v)) for k, v in value.items()]
    if not isinstance(value, list):
        raise DatasetError(f"{where}: expected a list of ids or {{id, name}} objects, got {value!r:.80}")
    out = []
    for e in value:
        if isinstance(e, str | int | float):
            out.append(Entity(str(e)))
        elif isinstance(e, dict) and "id" in e:
            out.append(Entity(str(e["id"]), e.get("name"), tuple(e.get("aliases", ())), e.get("datatype")))
        else:
            raise DatasetError(f"{where}: an entity is an id or an object with 'id', got {e!r:.80}")
    return out


@register_dataset("jsonl", splits=SplitRoles("train", "dev", "test", covering=("all",)))
def load_jsonl(path: str | Path | None, split: str = "all", **_: Any) -> list[KBQASample]:
    """One's own questions: JSON lines (or a JSON list) of records (``data=jsonl``).

    A record needs ``question`` and ``answers``; ``id`` (default: its line number),
    ``topic_entities``, ``sparql``, ``sexpr``, ``relation_path``, ``hops``, ``type`` (the
    question type the reports group by), ``split`` and ``meta`` are optional. Entities are
    ids, ``{"id", "name"}`` objects, or one ``{id: name}`` mapping.

    Args:
        path: the file.
        split: keep the records whose ``split`` is this; ``"all"`` keeps every record.

    Raises:
        DatasetError: a missing file, a record without a required field, an unknown
            field, or records without ``split`` when a split is asked for.
    """
    if path is None:
        raise DatasetError("data=jsonl needs data.path=FILE (JSON lines of question records)")
    records = _records(_read_json(path), path, "questions", "data")
    out = []
    for n, rec in enumerate(records, 1):
        where = f"{path}: record {n}"
        missing = [k for k in ("question", "answers") if k not in rec]
        if missing:
            raise DatasetError(f"{where} lacks {missing} (has {sorted(rec)[:8]})")
        unknown = sorted(set(rec) - set(JSONL_FIELDS))
        if unknown:
            raise DatasetError(f"{where}: unknown fields {unknown}; valid: {', '.join(JSONL_FIELDS)}")
        _check_jsonl_types(rec, where)
        path_ = rec.get("relation_path")
        meta = dict(rec.get("meta") or {})
        if "split" in rec:
            meta["split"] = str(rec["split"])
        if rec.get("type") is not None:
            meta["qtype"] = str(rec["type"])
        out.append(KBQASample(
            id=str(rec.get("id", n)), question=str(rec["question"]),
            topic_entities=_jsonl_entities(rec.get("topic_entities"), f"{where} topic_entities"),
            answers=_jsonl_entities(rec["answers"], f"{where} answers"),
            sparql=rec.get("sparql"), sexpr=rec.get("sexpr"),
            relation_path=None if path_ is None else [str(r) for r in path_],
            hops=rec.get("hops", None if path_ is None else len(path_)),
            level=meta.get("qtype"), meta=meta,
        ))
    seen: set[str] = set()
    for s_ in out:
        if s_.id in seen:
            raise DatasetError(f"{path}: two records share the id {s_.id!r}")
        seen.add(s_.id)
    if split == "all":
        return out
    if out and all("split" not in s.meta for s in out):
        raise DatasetError(f"{path}: no record has a 'split' field, so split {split!r} is empty; add one, "
                           "or draw the evaluation questions from the file: data.train_split=all "
                           "data.eval_split=all data.eval_limit=N")
    return [s for s in out if s.meta.get("split") == split]


# ---------------------------------------------------------------------- demo
@register_dataset("demo", schema="freebase", gold=("sexpr", "sparql", "relation_path"),
                  splits=SplitRoles("train", "dev", "test", covering=("all",)))
def load_demo(path: str | Path | None = None, split: str = "dev", **_: Any) -> list[KBQASample]:
    """The demo questions shipped with kgreason (``split``: train/dev/test/all)."""
    from kgreason.data.demo.build import QUESTIONS_FILE

    records = _read_json(path or QUESTIONS_FILE)
    out = [KBQASample.from_dict(r) for r in records]
    return out if split == "all" else [s for s in out if s.meta.get("split") == split]


# -------------------------------------------------------------------- MetaQA
_METAQA_REL = {
    ("movie", "director"): "directed_by", ("director", "movie"): "~directed_by",
    ("movie", "actor"): "starred_actors", ("actor", "movie"): "~starred_actors",
    ("movie", "writer"): "written_by", ("writer", "movie"): "~written_by",
    ("movie", "year"): "release_year", ("movie", "genre"): "has_genre",
    ("movie", "language"): "in_language", ("movie", "tags"): "has_tags",
    ("tag", "movie"): "~has_tags", ("movie", "imdbrating"): "has_imdb_rating",
    ("movie", "imdbvotes"): "has_imdb_votes",
}


def metaqa_path(qtype: str) -> list[str] | None:
    """The relation path of a MetaQA question type (``~r`` walks ``r`` backwards).

    >>> metaqa_path("director_to_movie_to_language")
    ['~directed_by', 'in_language']
    """
    nodes = qtype.split("_to_")
    path = []
    for a, b in zip(nodes, nodes[1:], strict=False):
        rel = _METAQA_REL.get((a, b))
        if rel is None:
            return None
        path.append(rel)
    return path


_TOPIC = re.compile(r"\[([^\]]+)\]")


@register_dataset("metaqa", schema="metaqa", gold=("relation_path",),
                  splits=SplitRoles("dev_train", "dev_tune", "dev_report", covering=("dev",)))
def load_metaqa(path: str | Path, split: str = "dev", hops: int | Iterable[int] = (1, 2, 3),
                variant: str = "vanilla", **_: Any) -> list[KBQASample]:
    """MetaQA ``{k}-hop/{variant}/qa_{split}.txt`` with ``qa_{split}_qtype.txt`` types.

    A question with a known type gets its relation path and, in ``meta["path_kinds"]``, the
    kinds of node that path passes, topic first (``["movie", "director", "movie"]``).

    ``split`` is a file's (``dev``, and ``train``/``test`` where one has them) or one of
    kgreason's three fixed splits of the dev file, ``dev_train``, ``dev_tune`` and
    ``dev_report`` (:func:`kgreason.data.roles.partition`, tenths 8/1/1); their questions
    keep their ``dev`` ids.
    """
    part = split if split in dict(METAQA_SHARES) else None
    file_split = "dev" if part else split
    root = Path(path)
    if root.is_file():
        root = root.parent
    hop_list = [hops] if isinstance(hops, int) else list(hops)
    out: list[KBQASample] = []
    for h in hop_list:
        qa = root / f"{h}-hop" / variant / f"qa_{file_split}.txt"
        if not qa.exists():
            raise DatasetError(f"MetaQA file not found: {qa}")
        qt_file = root / f"{h}-hop" / f"qa_{file_split}_qtype.txt"
        qtypes = qt_file.read_text(encoding="utf-8").splitlines() if qt_file.exists() else []
        for i, line in enumerate(qa.read_text(encoding="utf-8").splitlines()):
            if not line.strip():
                continue
            if "\t" not in line:
                raise DatasetError(f"{qa}:{i + 1}: expected 'question<TAB>answers'")
            question, answers = line.split("\t", 1)
            if part and partition(f"{h}|{question}") != part:
                continue
            topics = _TOPIC.findall(question)
            qtype = qtypes[i].strip() if i < len(qtypes) else None
            relation_path = metaqa_path(qtype) if qtype else None
            meta: dict[str, Any] = {"raw_question": question, "qtype": qtype}
            if relation_path is not None:
                meta["path_kinds"] = qtype.split("_to_")
            out.append(KBQASample(
                id=f"metaqa-{h}hop-{file_split}-{i}",
                question=_TOPIC.sub(r"\1", question).strip(),
                topic_entities=[Entity(t, t) for t in topics],
                answers=[Entity(a, a) for a in answers.split("|") if a],
                relation_path=relation_path,
                hops=h,
                level=qtype,
                meta=meta,
            ))
    return out


# ------------------------------------------------------------- Freebase sets
def _entity_answers(items: Iterable[dict], id_key: str, name_key: str) -> list[Entity]:
    out = []
    for a in items:
        arg = a.get(id_key)
        if arg is None:
            continue
        datatype = None if str(a.get("AnswerType", a.get("answer_type", "Entity"))).lower() == "entity" else "literal"
        out.append(Entity(str(arg), a.get(name_key) or (str(arg) if datatype else None), datatype=datatype))
    return out


@register_dataset("webqsp", schema="freebase", gold=("sparql", "relation_path"))
def load_webqsp(path: str | Path, split: str = "test", **_: Any) -> list[KBQASample]:
    """WebQSP official JSON (``{"Questions": [...]}``).

    Each parse keeps its own answers: the first parse's are ``answers``, the other parses'
    (where they differ) ``meta["answer_variants"]``, and scores take the variant of highest
    F1 as the official evaluation does (:func:`kgreason.eval.evaluation.best_variant`;
    the rewards likewise, :mod:`kgreason.rewards.outcome`). Merged into one set, a question
    with two parses counted a prediction of either parse's answers as half wrong.
    """
    data = _read_json(path)
    out = []
    for rec in _records(data, path, "Questions"):
        _require(rec, path, "QuestionId", "Parses")
        parses = rec["Parses"] or []
        per_parse: list[list[Entity]] = []
        topics: dict[str, Entity] = {}
        for p in parses:
            per_parse.append(list(dict.fromkeys(_entity_answers(p.get("Answers") or [], "AnswerArgument", "EntityName"))))
            if p.get("TopicEntityMid"):
                topics[p["TopicEntityMid"]] = Entity(p["TopicEntityMid"], p.get("TopicEntityName"))
        answers = per_parse[0] if per_parse else []
        variants = [v for i, v in enumerate(per_parse[1:], 1)
                    if {e.id for e in v} not in [{e.id for e in w} for w in per_parse[:i]]]
        first = parses[0] if parses else {}
        chain = first.get("InferentialChain")
        out.append(KBQASample(
            id=rec["QuestionId"],
            question=rec.get("ProcessedQuestion") or rec.get("RawQuestion", ""),
            topic_entities=list(topics.values()),
            answers=answers,
            sparql=first.get("Sparql"),
            relation_path=list(chain) if chain else None,
            hops=len(chain) if chain else None,
            meta={"raw_question": rec.get("RawQuestion"), "n_parses": len(parses),
                  **({"answer_variants": variants} if variants else {})},
        ))
    return out


@register_dataset("cwq", schema="freebase", gold=("sparql",))
def load_cwq(path: str | Path, split: str = "test", **_: Any) -> list[KBQASample]:
    """ComplexWebQuestions: official (answers as MIDs or ``answers`` objects) or ToG JSON."""
    out = []
    for rec in _records(_read_json(path), path):
        _require(rec, path, "ID", "question")
        if "answers" in rec:  # official release: [{"answer", "answer_id", "aliases"}]
            answers = [Entity(a["answer_id"], a.get("answer"), tuple(a.get("aliases") or ()))
                       for a in rec["answers"]]
        elif isinstance(rec.get("answer"), list):  # MIDs
            answers = [Entity(m) for m in rec["answer"]]
        elif isinstance(rec.get("answer"), str):  # ToG: one answer name
            answers = [Entity(rec["answer"], rec["answer"])]
        else:
            raise DatasetError(f"{path}: CWQ record {rec['ID']} has no answers")
        out.append(KBQASample(
            id=rec["ID"],
            question=rec["question"],
            topic_entities=_topic_map(rec.get("topic_entity")),
            answers=answers,
            sparql=rec.get("sparql"),
            level=rec.get("compositionality_type"),
            meta={"machine_question": rec.get("machine_question"), "webqsp_id": rec.get("webqsp_ID")},
        ))
    return out


@register_dataset("grailqa", schema="freebase", gold=("sexpr", "sparql"))
def load_grailqa(path: str | Path, split: str = "dev", **_: Any) -> list[KBQASample]:
    """GrailQA official or ToG JSON; keeps ``s_expression``, ``graph_query`` and ``level``."""
    out = []
    for rec in _records(_read_json(path), path):
        _require(rec, path, "qid", "question", "answer")
        topics = _topic_map(rec.get("topic_entity"))
        if not topics and rec.get("graph_query"):
            topics = [Entity(n["id"], n.get("friendly_name")) for n in rec["graph_query"]["nodes"]
                      if n.get("node_type") == "entity"]
        out.append(KBQASample(
            id=str(rec["qid"]),
            question=rec["question"],
            topic_entities=topics,
            answers=_entity_answers(rec["answer"], "answer_argument", "entity_name"),
            sexpr=rec.get("s_expression"),
            sparql=rec.get("sparql_query"),
            hops=rec.get("num_edge"),
            level=rec.get("level"),
            meta={"graph_query": rec.get("graph_query"), "function": rec.get("function"),
                  "domains": rec.get("domains"), "num_node": rec.get("num_node")},
        ))
    return out


_TARGET = re.compile(r'\(description (?:"((?:[^"\\]|\\.)*)"|([^)]*))\)')


@register_dataset("webquestions", schema="freebase", gold=())
def load_webquestions(path: str | Path, split: str = "test", **_: Any) -> list[KBQASample]:
    """WebQuestions: official (``utterance``/``targetValue``) or ToG (``question``/``answers``)."""
    out = []
    for i, rec in enumerate(_records(_read_json(path), path)):
        if "targetValue" in rec:
            names = [a or b for a, b in _TARGET.findall(rec["targetValue"])]
            question = rec.get("utterance", "")
        else:
            _require(rec, path, "question", "answers")
            names, question = rec["answers"], rec["question"]
        out.append(KBQASample(
            id=f"webq-{split}-{i}",
            question=question,
            topic_entities=_topic_map(rec.get("topic_entity")),
            answers=[Entity(n, n) for n in names],
            meta={"url": rec.get("url"), "qid_topic_entity": rec.get("qid_topic_entity")},
        ))
    return out


@register_dataset("simplequestions", schema="freebase", gold=("relation_path",))
def load_simplequestions(path: str | Path, split: str = "test", **_: Any) -> list[KBQASample]:
    """SimpleQuestions: official TSV (``subject relation object question``) or ToG JSON."""
    p = Path(path)
    out = []
    if p.suffix in (".txt", ".tsv"):
        if not p.exists():
            raise DatasetError(f"dataset file not found: {p}")
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines()):
            parts = line.split("\t")
            if len(parts) != 4:
                raise DatasetError(f"{p}:{i + 1}: expected 4 tab-separated fields")
            s, r, o, q = (x.replace("www.freebase.com/", "") for x in parts)
            out.append(KBQASample(
                id=f"sq-{split}-{i}", question=q,
                topic_entities=[Entity(s.replace("/", ".").lstrip("."))],
                answers=[Entity(o.replace("/", ".").lstrip("."))],
                relation_path=[r.strip("/").replace("/", ".")], hops=1,
            ))
        return out
    for i, rec in enumerate(_records(_read_json(p), p)):
        _require(rec, p, "question", "answer")
        ans = rec["answer"] if isinstance(rec["answer"], list) else [rec["answer"]]
        out.append(KBQASample(
            id=f"sq-{split}-{i}", question=rec["question"],
            topic_entities=_topic_map(rec.get("topic_entity")),
            answers=[Entity(a, a) for a in ans], hops=1,
            meta={"relation": rec.get("relation")},
        ))
    return out


@register_dataset("qald10", schema="wikidata", gold=("sparql",))
def load_qald10(path: str | Path, split: str = "test", lang: str = "en", **_: Any) -> list[KBQASample]:
    """QALD-10: official multilingual JSON (``{"questions": [...]}``) or ToG JSON."""
    data = _read_json(path)
    out = []
    for i, rec in enumerate(_records(data, path, "questions")):
        if isinstance(rec.get("question"), list):  # official
            text = next((q["string"] for q in rec["question"] if q.get("language") == lang), "")
            answers: list[Entity] = []
            for a in rec.get("answers") or []:
                if "boolean" in a:
                    answers.append(Entity(str(a["boolean"]).lower(), datatype="boolean"))
                for b in a.get("results", {}).get("bindings", []):
                    for v in b.values():
                        val = v["value"].rsplit("/", 1)[-1] if v.get("type") == "uri" else v["value"]
                        answers.append(Entity(val, None if v.get("type") == "uri" else val,
                                              datatype=v.get("datatype")))
            out.append(KBQASample(id=str(rec.get("id", i)), question=text, answers=answers,
                                  sparql=(rec.get("query") or {}).get("sparql")))
        else:
            _require(rec, path, "question", "answer")
            out.append(KBQASample(
                id=f"qald10-{i}", question=rec["question"],
                topic_entities=_topic_map(rec.get("qid_topic_entity")),
                answers=_topic_map(rec["answer"]), sparql=rec.get("sparql"),
            ))
    return out


@register_dataset("rog", schema="freebase", gold=())
def load_rog(path: str | Path, split: str = "test", **_: Any) -> list[KBQASample]:
    """RoG-style JSON(L) with per-question subgraphs; ``subgraph`` is the record id.

    Pair with :func:`kgreason.kb.load_rog_subgraphs` on the same file for the KB.
    """
    out = []
    for rec in _records(_read_json(path), path):
        _require(rec, path, "id", "question", "answer")
        out.append(KBQASample(
            id=str(rec["id"]), question=rec["question"],
            topic_entities=[Entity(e, e) for e in rec.get("q_entity", [])],
            answers=[Entity(a, a) for a in rec["answer"]],
            subgraph=str(rec["id"]),
        ))
    return out
