"""Typed errors. Every error a user can provoke with bad input is one of these."""

from __future__ import annotations

from typing import Any


class KGReasonError(Exception):
    """Base class of all kgreason errors."""


class KBError(KGReasonError):
    """A knowledge-base operation failed."""


class KBQueryError(KBError):
    """The query is malformed, not allowed (updates, LOAD, SERVICE) or rejected by the engine."""


class KBForbiddenQuery(KBQueryError):
    """The query would write to the KB or reach outside it (update, LOAD, SERVICE)."""


class KBTimeout(KBError):
    """The query ran past its time budget."""


class KBUnavailable(KBError):
    """The KB cannot be reached (endpoint down, connection refused, store closed)."""


class KBMalformedAnswer(KBUnavailable):
    """The endpoint answered something that is not a SPARQL result (a bad status line, an
    oversized header, JSON of another shape): the endpoint failed, not the query."""


class KBTruncated(KBError):
    """The result exceeded the row cap, or the engine silently cut it.

    ``rows`` holds what was received, so nothing is lost.
    """

    def __init__(self, message: str, rows: list[dict[str, Any]] | None = None, cap: int = 0):
        super().__init__(message)
        self.rows = rows or []
        self.cap = cap


class DatasetError(KGReasonError):
    """A dataset file is missing or not in the expected format."""


class EnvError(KGReasonError):
    """The environment was used against its contract (e.g. ``step`` before ``reset``)."""


class RegistryError(KGReasonError, KeyError):
    """Unknown registered name, or a name re-registered with a different object."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class RewardError(KGReasonError):
    """A reward cannot score what it was given (e.g. a tree-node reward on a linear rollout)."""


class ConfigError(KGReasonError, ValueError):
    """A configuration value or combination of parts that cannot work; the message names
    the bad value and the valid choices."""


class EngineError(KGReasonError):
    """A rollout engine could not generate what it was asked for."""


class EngineUnavailable(EngineError):
    """No generation server answered (each one's error is named)."""


class EngineStaleWeights(EngineError):
    """A server answered from other weights than the trainer's current ones."""
