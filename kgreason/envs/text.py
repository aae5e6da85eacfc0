"""Text utilities every action space shares: tag extraction, answer splitting, truncation."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence

TokenCounter = Callable[[str], int]


def approx_tokens(text: str) -> int:
    """A tokenizer-free token estimate (≈ 4 characters a token, at least 1 per word).

    >>> approx_tokens("get_tail_relations")
    5
    """
    return max(len(text.split()), (len(text) + 3) // 4)


def last_tag(text: str, tag: str) -> str | None:
    """Content of the last complete ``<tag>...</tag>``; an unclosed last tag counts too.

    >>> last_tag("<think>x</think><answer> Paris </answer>", "answer")
    'Paris'
    >>> last_tag("<kg-query> get_tail_relations(x)", "kg-query")
    'get_tail_relations(x)'
    """
    # linear scans: a regex over many unclosed tags rescans to the end from each one
    open_, close = f"<{tag}>", f"</{tag}>"
    pos, last = 0, None
    while (o := text.find(open_, pos)) >= 0:
        c = text.find(close, o + len(open_))
        if c < 0:
            break
        last, pos = text[o + len(open_):c], c + len(close)
    if last is not None:
        return last.strip()
    o = text.rfind(open_)
    return text[o + len(open_):].strip() if o >= 0 else None


def tagged(text: str, tags: Sequence[str]) -> list[tuple[str, str, str]]:
    """Every closed ``<tag>...</tag>`` of the given tags (any case), in text order, as
    ``(tag, content, raw)``; per tag the pairs ``re.findall`` of a lazy pattern gives.

    One pass over the tag tokens: a lazy regex rescans to the end from every unclosed tag.

    >>> tagged("<node>a</node> <SPARQL>q</SPARQL><node>b", ["node", "sparql"])
    [('node', 'a', '<node>a</node>'), ('sparql', 'q', '<SPARQL>q</SPARQL>')]
    """
    names = "|".join(re.escape(t) for t in tags)
    pending: dict[str, re.Match] = {}
    out: list[tuple[int, str, str, str]] = []
    for m in re.finditer(rf"<(/?)({names})>", text, flags=re.I):
        tag = m.group(2).lower()
        if not m.group(1):
            pending.setdefault(tag, m)
        elif tag in pending:
            o = pending.pop(tag)
            out.append((o.start(), tag, text[o.end():m.start()], text[o.start():m.end()]))
    out.sort(key=lambda x: x[0])
    return [(tag, content, raw) for _, tag, content, raw in out]


def boxed(text: str, unclosed: bool = False) -> str | None:
    r"""Content of the last ``\boxed{...}`` (balanced braces).

    Args:
        text: where to look.
        unclosed: a last box never closed (cut off by the token budget) counts too, as
            :func:`last_tag` counts an unclosed tag.

    >>> boxed(r"so \boxed{Paris, Lyon}.")
    'Paris, Lyon'
    >>> boxed(r'\boxed{["Paris", "Ly'), boxed(r'\boxed{["Paris", "Ly', unclosed=True)
    (None, '["Paris", "Ly')
    """
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    i, depth = start + len("\\boxed{"), 1
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i:j].strip()
    return text[i:].strip() if unclosed else None


_JSON_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _json_string(body: str) -> str:
    """A JSON string literal's value; its text as written when an escape is not JSON's.

    >>> _json_string('say \\\\"hi\\\\"'), _json_string('a\\\\q')
    ('say "hi"', 'a\\\\q')
    """
    try:
        return json.loads(f'"{body}"')
    except ValueError:  # a backslash before q, a cut \\u12: model output, not JSON
        return body


def split_answer(raw: str, is_known: Callable[[str], bool] | None = None, max_join: int = 4) -> list[str]:
    """Split an answer string into answers.

    JSON lists are read as lists; ``|``, ``;`` and new lines always separate; commas
    separate unless the comma-joined text is a known name (``Washington, D.C.``), which
    ``is_known`` decides.

    >>> split_answer('["Paris", "Lyon"]')
    ['Paris', 'Lyon']
    >>> split_answer("Washington, D.C., Paris", is_known=lambda s: s == "Washington, D.C.")
    ['Washington, D.C.', 'Paris']
    >>> split_answer("20,000 Years in Sing Sing, Out", is_known=lambda s: s == "20,000 Years in Sing Sing")
    ['20,000 Years in Sing Sing', 'Out']
    >>> split_answer('["A Cool, Dry Place", "Big", "Bea')  # cut off by the token budget
    ['A Cool, Dry Place', 'Big']
    """
    raw = raw.strip()
    if raw.startswith("[") and not raw.endswith("]"):
        # a JSON list cut off mid-generation: its closed strings, not the unfinished last one
        items = [_json_string(m).strip() for m in _JSON_STRING.findall(raw)]
        if items:
            return [x for x in items if x]
    if raw.startswith("[") and raw.endswith("]"):
        try:
            v = json.loads(raw)
            if isinstance(v, list):
                return [str(x).strip() for x in v if str(x).strip()]
        except (ValueError, RecursionError):  # bad JSON, an integer over 4,300 digits, deep nesting
            raw = raw[1:-1]
    out: list[str] = []
    for chunk in re.split(r"\s*(?:\||;|\n)\s*", raw):
        chunk = chunk.strip().strip('"').strip()
        if not chunk:
            continue
        if is_known is not None and is_known(chunk):
            out.append(chunk)
            continue
        parts = chunk.split(",")  # re-joined raw, so "20,000 Years" survives

        def piece(i: int, j: int, parts: list[str] = parts) -> str:
            return ",".join(parts[i:j]).strip().strip('"').strip()

        i = 0
        while i < len(parts):
            # Greedy: the longest run of comma-joined parts that is a known name.
            end = i + 1
            if is_known is not None:
                for j in range(min(len(parts), i + max_join), i + 1, -1):
                    if is_known(piece(i, j)):
                        end = j
                        break
            if piece(i, end):
                out.append(piece(i, end))
            i = end
    return out


def truncate_items(items: Sequence[str], budget: int, count: TokenCounter = approx_tokens,
                   sep: str = ", ") -> str:
    """Join ``items`` within ``budget`` tokens, ending with ``… N more`` when cut.

    >>> truncate_items(["a", "b", "c", "d"], budget=2)
    'a, b, … 2 more'
    """
    joined = sep.join(items)
    # The estimate is at most max(words, chars/4) and words <= (chars+1)/2, so short
    # text fits without splitting it into words.
    if (count is approx_tokens and len(joined) < 2 * budget) or count(joined) <= budget:
        return joined
    out, used = [], 0
    for i, it in enumerate(items):
        cost = count(it + sep)
        if used + cost > budget and out:
            return sep.join(out) + f"{sep}… {len(items) - i} more"
        out.append(it)
        used += cost
    return sep.join(out)


def truncate_text(text: str, budget: int, count: TokenCounter = approx_tokens) -> str:
    """Cut ``text`` to about ``budget`` tokens at a line or word boundary, with a marker.

    >>> truncate_text("one two three four five six", budget=3)
    'one two … (4 more words)'
    """
    if count(text) <= budget:
        return text
    words = text.split(" ")
    lo, hi = 0, len(words)
    while lo < hi:  # the longest prefix of words within budget
        mid = (lo + hi + 1) // 2
        if count(" ".join(words[:mid])) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo]) + f" … ({len(words) - lo} more words)"


_QUOTED = re.compile(r"\"([^\"]*)\"|'([^']*)'")
_ALL_QUOTED = re.compile(r"^\s*(?:\"[^\"]*\"|'[^']*')\s*(?:,\s*(?:\"[^\"]*\"|'[^']*')\s*)*$")


def split_args(s: str) -> list[str]:
    """Split call arguments on commas outside quotes; strip quotes and spaces.

    >>> split_args('"Washington, D.C.", \\'location.location.containedby\\'')
    ['Washington, D.C.', 'location.location.containedby']
    >>> split_args("")
    []
    >>> split_args('"x", \'\'')
    ['x', '']
    >>> split_args("Schindler's List, directed_by")  # a quote inside an unquoted argument is text
    ["Schindler's List", 'directed_by']
    """
    if _ALL_QUOTED.match(s):  # the usual form: every argument quoted
        # a non-participating group is "", so ``a or b`` is the quoted text either way
        return [a or b for a, b in _QUOTED.findall(s)]
    args, cur, quote = [], [], ""
    for ch in s:
        if quote:
            if ch == quote:
                quote = ""
            else:
                cur.append(ch)
        elif ch in "\"'" and not "".join(cur).strip():  # quotes open an argument, nowhere else
            quote = ch
        elif ch == ",":
            args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    tail = "".join(cur).strip()
    if tail or args:
        args.append(tail)
    return args
