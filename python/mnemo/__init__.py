"""mnemo in process: search an agent's Markdown memory and its stored facts.

This package is libmnemo (the library under the ``mnemo`` command) loaded
into Python, as :mod:`sqlite3` is SQLite: no daemon, no subprocess. A
workspace is a folder of Markdown memory (``MEMORY.md``, ``USER.md``,
``memory/*.md``); mnemo indexes it into a SQLite (or PostgreSQL) database and
searches it by keywords, and by meaning when an embedding provider is set.
Structured memories ("facts", Mem0-style) live in the same store.

Quick start::

    import mnemo

    with mnemo.open(workspace="~/agent", db="/tmp/agent.sqlite") as m:
        m.index()
        for r in m.search("postgres migration", max_results=3):
            print(r.citation, round(r.score, 2), r.snippet[:60])
        m.memories.add("User prefers dark mode", category="preference")
        print(m.recall("what theme should the editor use?", strategy="always"))

Every failure raises a subclass of :class:`mnemo.Error` carrying the
library's status code (``.code``, ``.name``) and its message: ``NotFound``,
``InvalidArgument`` (also a ``ValueError``), ``Damaged``, ``Unavailable``...

Threads: a :class:`Mnemo` object may be shared between threads; its calls
are serialised by a lock of its own (the library allows one thread at a time
per handle). The GIL is released while the library works, so threads with a
handle each search and index in parallel. See docs/python.md.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from . import _mnemo

__all__ = [
    "open",
    "Mnemo",
    "Memories",
    "Result",
    "SearchResults",
    "Memory",
    "MemoryList",
    "HistoryEvent",
    "IndexStats",
    "Progress",
    "Excerpt",
    "Error",
    "OutOfMemory",
    "FileSystemError",
    "DatabaseError",
    "HTTPError",
    "Timeout",
    "NotFound",
    "InvalidArgument",
    "BadInput",
    "Unavailable",
    "Misuse",
    "Damaged",
    "Corrupt",
    "Busy",
    "Denied",
    "version",
    "settings",
    "__version__",
]

# --------------------------------------------------------------------------
# Errors: one class per MNEMO_* status code of mnemo.h
# --------------------------------------------------------------------------


class Error(Exception):
    """A libmnemo call failed.

    ``code`` is the MNEMO_* status (an int, stable), ``name`` its stable
    name (``"not_found"``, ``"invalid"``... as the command and the daemon
    report it in ``{"error":{"code":...}}``) and ``message`` the library's
    explanation (``mnemo_errmsg``), which names files and fixes where it can.
    """

    code: int = -1
    name: str = "error"

    def __init__(self, message: str, code: Optional[int] = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None and code != type(self).code:
            self.code = code
            self.name = _API_NAMES.get(code, "error")


class OutOfMemory(Error, MemoryError):
    """MNEMO_NOMEM: out of memory."""


class FileSystemError(Error):
    """MNEMO_IO: a file could not be read or written."""


class DatabaseError(Error):
    """MNEMO_DB: the database failed (SQLite or PostgreSQL)."""


class HTTPError(Error):
    """MNEMO_HTTP: an HTTP or network error (embedding provider, model hub)."""


class Timeout(Error):
    """MNEMO_TIMEOUT: an operation ran out of time."""


class NotFound(Error, LookupError):
    """MNEMO_NOTFOUND: no such file, index or record (index first: ``Mnemo.index``)."""


class InvalidArgument(Error, ValueError):
    """MNEMO_INVALID: a bad argument, setting, filter or input text."""


BadInput = InvalidArgument


class Unavailable(Error):
    """MNEMO_UNAVAILABLE: a needed service or feature (a provider, a model) is missing."""


class Misuse(Error):
    """MNEMO_MISUSE: the API was used in a way not allowed (e.g. a closed handle)."""


class Damaged(Error):
    """MNEMO_CORRUPT: the database is damaged, foreign or too new."""


Corrupt = Damaged


class Busy(Error):
    """MNEMO_BUSY: locked by another process longer than busyTimeoutMs."""


class Denied(Error):
    """MNEMO_DENIED: a path outside the memory roots."""


_CLASSES: Dict[str, "type[Error]"] = {
    "NOMEM": OutOfMemory,
    "IO": FileSystemError,
    "DB": DatabaseError,
    "HTTP": HTTPError,
    "TIMEOUT": Timeout,
    "NOTFOUND": NotFound,
    "INVALID": InvalidArgument,
    "UNAVAILABLE": Unavailable,
    "MISUSE": Misuse,
    "CORRUPT": Damaged,
    "BUSY": Busy,
    "DENIED": Denied,
}
_API_NAMES: Dict[int, str] = {}


def _register_errors() -> None:
    table: List[Optional["type[Error]"]] = []
    for name, value, _text, api in _mnemo.status_codes():
        _API_NAMES[value] = api
        cls = _CLASSES.get(name)
        if cls is not None:
            cls.code = value
            cls.name = api
        while len(table) <= value:
            table.append(None)
        table[value] = cls
    table[0] = Error  # a code this package does not know yet: the base class
    _mnemo._set_errors(table)


_register_errors()

__version__: str = _mnemo.version()


def version() -> str:
    """The version of the bundled libmnemo (MNEMO_VERSION)."""
    return _mnemo.version()


# --------------------------------------------------------------------------
# Settings: Python names (max_results) for the configuration keys (maxResults)
# --------------------------------------------------------------------------

_KEYS: Dict[str, str] = {}


def settings() -> Dict[str, str]:
    """Every setting ``mnemo.open`` accepts: its key (as in mnemo.json) and what it does."""
    return {key: help for key, _env, help in _mnemo.config_keys()}


def _config_key(name: str) -> str:
    if not _KEYS:
        for key, _env, _help in _mnemo.config_keys():
            _KEYS[key.lower()] = key
    return _KEYS.get(name.replace("_", "").lower(), name)


def _config_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value)
    if isinstance(value, os.PathLike):
        return str(os.fspath(value))
    return str(value)


# --------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Progress:
    """Where an index run is: ``phase`` "scan", "index" (files ``done`` of ``total``)
    or "embed" (chunks embedded of those missing a vector); ``bytes`` read so far."""

    phase: str
    done: int
    total: int
    bytes: int


@dataclass(frozen=True)
class IndexStats:
    """What :meth:`Mnemo.index` did (mnemo_sync_stats)."""

    files_seen: int
    files_added: int
    files_changed: int
    files_touched: int
    files_unchanged: int
    files_removed: int
    files_renamed: int
    files_skipped: int
    chunks_added: int
    chunks_removed: int
    bytes_read: int
    seconds: float
    rebuilt: bool
    rebuild_reason: Optional[str]
    chunks_embedded: int
    embed_cache_hits: int
    vectors_total: int
    embed_warning: Optional[str]


@dataclass(frozen=True)
class Excerpt:
    """Lines of a memory file (:meth:`Mnemo.get`)."""

    path: str
    text: str
    from_line: int
    to_line: int
    total_lines: int
    truncated: bool
    next_from: int


def _f4(x: float) -> float:
    return float("%.4f" % x)


def _iso(t: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t)) if t else ""


_TIERS = {3: "path", 2: "name", 1: "stem", 0: "content"}


@dataclass(frozen=True)
class Result:
    """One search result: a passage of a note (``kind`` "note" or "media") or a stored fact.

    The OpenClaw ``memory_search`` fields are common to both; a fact adds
    ``id``, ``category``, ``importance``... (and ``path`` is ``memory://ID``).
    ``to_dict()`` is the JSON object ``mnemo search --json`` prints for it.
    """

    kind: str
    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    source: str
    citation: str
    # notes
    text_score: Optional[float] = None
    vector_score: Optional[float] = None  # None when no vector leg ran
    date: Optional[str] = None  # YYYY-MM-DD a dated note is about
    mime_type: Optional[str] = None  # media
    tier: Optional[str] = None  # explain: "path", "name", "stem" or "content"
    recency: Optional[float] = None  # explain: the recency factor applied
    importance_factor: Optional[float] = None  # explain: the importance factor applied
    rank_before: Optional[int] = None  # explain: position before the diversity pass
    rank_after: Optional[int] = None
    # facts
    id: Optional[str] = None
    category: Optional[str] = None
    importance: Optional[float] = None
    type: Optional[str] = None
    subject: Optional[str] = None
    scope: Optional[str] = None  # "long-term" or "session"
    user_id: Optional[str] = None
    agent_id: Optional[str] = None
    run_id: Optional[str] = None
    metadata: Optional[Dict[str, Any]] = None
    triggers: Tuple[str, ...] = ()
    created_at: Optional[str] = None  # ISO 8601
    updated_at: Optional[str] = None
    relevance: Optional[float] = None  # the memory search's relevance, before importance
    explained: bool = field(default=False, repr=False, compare=False)

    def __repr__(self) -> str:
        keep = ("kind", "citation", "score") + (
            ("id", "category", "importance") if self.kind == "fact" else ())
        inner = ", ".join(f"{k}={getattr(self, k)!r}" for k in keep)
        text = self.snippet if len(self.snippet) <= 60 else self.snippet[:57] + "..."
        return f"Result({inner}, snippet={text!r})"

    @property
    def is_fact(self) -> bool:
        """True for a stored fact, False for a note or media passage."""
        return self.kind == "fact"

    def to_dict(self) -> Dict[str, Any]:
        """This result as ``mnemo search --json`` writes it (OpenClaw's memory_search shape)."""
        if self.kind == "fact":
            d: Dict[str, Any] = {
                "kind": "fact",
                "id": self.id,
                "path": self.path,
                "startLine": 1,
                "endLine": 1,
                "score": _f4(self.score),
                "snippet": self.snippet,
                "source": self.source,
                "citation": self.citation,
                "category": self.category,
                "importance": float("%.4g" % (self.importance or 0.0)),
                "type": self.type,
                "subject": self.subject,
                "scope": self.scope,
                "user_id": self.user_id,
            }
            if self.agent_id:
                d["agent_id"] = self.agent_id
            if self.run_id:
                d["run_id"] = self.run_id
            d["created_at"] = self.created_at or ""
            d["updated_at"] = self.updated_at or ""
            d["relevance"] = _f4(self.relevance if self.relevance is not None else 0.0)
            return d
        d = {
            "kind": "media" if self.mime_type is not None else "note",
            "path": self.path,
            "startLine": self.start_line,
            "endLine": self.end_line,
            "score": _f4(self.score),
        }
        if self.vector_score is not None:
            d["vectorScore"] = _f4(self.vector_score)
        d["textScore"] = _f4(self.text_score or 0.0)
        d["snippet"] = self.snippet
        d["source"] = self.source
        d["citation"] = self.citation
        if self.date is not None:
            d["date"] = self.date
        if self.mime_type is not None:
            d["mimeType"] = self.mime_type
        if self.explained:
            d["explain"] = {
                "textScore": _f4(self.text_score or 0.0),
                "vectorScore": None if self.vector_score is None else _f4(self.vector_score),
                "tier": self.tier,
                "recency": _f4(self.recency or 0.0),
                "importance": _f4(self.importance_factor or 0.0),
                "rankBefore": self.rank_before,
                "rankAfter": self.rank_after,
            }
        return d


def _note(t: Tuple[Any, ...], explained: bool) -> Result:
    (_, path, start, end, score, snippet, source, citation, text_score, vector_score, tier,
     recency, importance, rank_before, rank_after, date, kind, mime) = t
    return Result(
        kind=kind or "note", path=path, start_line=start, end_line=end, score=score,
        snippet=snippet, source=source, citation=citation, text_score=text_score,
        vector_score=vector_score if vector_score >= 0 else None, date=date, mime_type=mime,
        tier=_TIERS.get(tier, "content"), recency=recency, importance_factor=importance,
        rank_before=rank_before, rank_after=rank_after, explained=explained,
    )


def _fact(t: Tuple[Any, ...]) -> Result:
    (_, id_, text, category, importance, type_, subject, user_id, agent_id, run_id, metadata,
     triggers, created, updated, _expires, _confirmed, _deleted, _confirmations, score,
     relevance) = t
    cit = "memory://" + id_
    return Result(
        kind="fact", path=cit, start_line=1, end_line=1, score=score, snippet=text,
        source="memory", citation=cit, id=id_, category=category, importance=importance,
        type=type_, subject=subject, scope="session" if run_id else "long-term",
        user_id=user_id, agent_id=agent_id, run_id=run_id,
        metadata=json.loads(metadata) if metadata else {}, triggers=tuple(triggers),
        created_at=_iso(created), updated_at=_iso(updated), relevance=relevance,
    )


class SearchResults(List[Result]):
    """The results of :meth:`Mnemo.search`, best first: a list with the search's facts.

    ``mode`` is "keyword" or "hybrid" (the vector leg ran); ``warning`` says
    why facts are missing or incomplete; ``provider`` is the embedding
    provider used; ``fallback`` is ``(provider, reason)`` when provider
    "auto" could not embed the query and the search ran keyword-only.
    """

    mode: str
    warning: Optional[str]
    provider: Optional[str]
    fallback: Optional[Tuple[str, str]]

    def __init__(self, items: Iterable[Result] = (), mode: str = "keyword",
                 warning: Optional[str] = None, provider: Optional[str] = None,
                 fallback: Optional[Tuple[str, str]] = None) -> None:
        super().__init__(items)
        self.mode = mode
        self.warning = warning
        self.provider = provider
        self.fallback = fallback

    def to_dicts(self) -> List[Dict[str, Any]]:
        """Every result's ``to_dict()``: the ``"results"`` array of ``mnemo search --json``."""
        return [r.to_dict() for r in self]


@dataclass(frozen=True)
class Memory:
    """A stored memory (a fact), as the library's JSON record (docs/memories.md).

    Times are ISO 8601 strings (None when unset). ``score`` is set by
    searches, ``duplicate`` by an add that found the same text stored.
    ``to_dict()`` is the record exactly as the library (and ``mnemo memory
    ... --json``) gives it.
    """

    id: str
    text: str
    category: str
    importance: float
    type: str
    subject: str
    user_id: str
    agent_id: str
    run_id: str
    metadata: Dict[str, Any]
    triggers: Tuple[str, ...]
    created_at: Optional[str]
    updated_at: Optional[str]
    expires_at: Optional[str]
    confirmations: int
    last_confirmed_at: Optional[str]
    deleted_at: Optional[str]
    score: Optional[float] = None
    duplicate: bool = False
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def deleted(self) -> bool:
        """True for a soft-deleted memory (restore brings it back)."""
        return self.deleted_at is not None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Memory":
        """A Memory from the library's JSON record."""
        return cls(
            id=d.get("id", ""), text=d.get("text", ""), category=d.get("category", ""),
            importance=float(d.get("importance", 0.0)), type=d.get("type", ""),
            subject=d.get("subject", ""), user_id=d.get("user_id", ""),
            agent_id=d.get("agent_id", ""), run_id=d.get("run_id", ""),
            metadata=dict(d.get("metadata") or {}), triggers=tuple(d.get("triggers") or ()),
            created_at=d.get("created_at"), updated_at=d.get("updated_at"),
            expires_at=d.get("expires_at"), confirmations=int(d.get("confirmations", 0)),
            last_confirmed_at=d.get("last_confirmed_at"), deleted_at=d.get("deleted_at"),
            score=d.get("score"), duplicate=bool(d.get("duplicate", False)), raw=dict(d),
        )

    def to_dict(self) -> Dict[str, Any]:
        """The JSON record as the library gave it."""
        return dict(self.raw)


class MemoryList(List[Memory]):
    """A page of :meth:`Memories.list` or the results of :meth:`Memories.search`.

    ``total``: the memories the options select past the page too (a list) or
    the results (a search); ``total_capped``: the count stopped at
    memoryCountLimit; ``mode`` (search): "keyword" or "hybrid";
    ``unreadable``: ``[{"id", "why"}]`` memories left out because they cannot
    be read, with ``warnings``. ``to_dict()`` is the library's JSON answer.
    """

    def __init__(self, answer: Mapping[str, Any], key: str) -> None:
        super().__init__(Memory.from_dict(x) for x in answer.get(key, ()))
        self.total: int = int(answer.get("total", len(self)))
        self.total_capped: bool = bool(answer.get("totalCapped", False))
        self.mode: Optional[str] = answer.get("mode")
        self.unreadable: List[Dict[str, str]] = list(answer.get("unreadable", ()))
        self.warnings: List[str] = list(answer.get("warnings", ()))
        self._answer = dict(answer)

    def to_dict(self) -> Dict[str, Any]:
        """The library's JSON answer (``mnemo memory list|search --json``)."""
        return dict(self._answer)


@dataclass(frozen=True)
class HistoryEvent:
    """One change of a memory: ``event`` ADD, UPDATE, DELETE, CONFIRM or RESTORE."""

    event: str
    old_text: Optional[str]
    new_text: Optional[str]
    at: str
    detail: Optional[str]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "HistoryEvent":
        """A HistoryEvent from the library's JSON."""
        return cls(event=d.get("event", ""), old_text=d.get("old_text"),
                   new_text=d.get("new_text"), at=d.get("at", ""), detail=d.get("detail"))


# --------------------------------------------------------------------------
# The handle
# --------------------------------------------------------------------------

_KIND_BITS = {"note": 1, "notes": 1, "fact": 2, "facts": 2, "media": 4, "all": 0}

Filters = Mapping[str, Any]
"""A filter in Mem0's language, e.g. ``{"AND": [{"category": "preference"},
{"importance": {"gte": 0.5}}]}`` (docs/memories.md)."""


def _kinds(kinds: Union[None, str, Iterable[str]]) -> int:
    if kinds is None:
        return 0
    words = [kinds] if isinstance(kinds, str) else list(kinds)
    bits = 0
    for w in words:
        for part in str(w).split(","):
            part = part.strip().lower()
            if part not in _KIND_BITS:
                raise InvalidArgument(
                    f"kinds: '{part}' is not one of note, fact, media, all", InvalidArgument.code)
            if _KIND_BITS[part] == 0:
                return 0
            bits |= _KIND_BITS[part]
    return bits


def _filters(filters: Union[None, str, Filters]) -> Optional[str]:
    if filters is None:
        return None
    if isinstance(filters, str):
        return filters
    return json.dumps(filters)


def _options(**kw: Any) -> Optional[str]:
    o = {k: v for k, v in kw.items() if v is not None}
    if "filters" in o and isinstance(o["filters"], str):
        try:
            o["filters"] = json.loads(o["filters"])
        except ValueError as e:
            raise InvalidArgument(f"filters: not JSON: {e}", InvalidArgument.code) from None
    return json.dumps(o) if o else None


class Mnemo:
    """An open workspace and index: ``mnemo.open(...)`` makes one.

    Usable as a context manager (closed on exit). Safe to share between
    threads (calls take turns on a lock of the handle); give each thread its
    own handle for parallel searches.
    """

    def __init__(self, workspace: Union[None, str, "os.PathLike[str]"] = None,
                 db: Union[None, str, "os.PathLike[str]"] = None, *,
                 config_file: Union[None, str, "os.PathLike[str]"] = None,
                 **settings: Any) -> None:
        pairs: List[Tuple[str, str]] = []
        if db is not None:
            pairs.append(("db", os.path.expanduser(os.fspath(db))))
        for name, value in settings.items():
            if value is not None:
                pairs.append((_config_key(name), _config_value(value)))
        ws = os.path.expanduser(os.fspath(workspace)) if workspace is not None else None
        cf = os.path.expanduser(os.fspath(config_file)) if config_file is not None else None
        self._h = _mnemo.Handle(ws, cf, pairs)
        self.memories = Memories(self)
        """The structured memories (facts) of this store: :class:`Memories`."""

    # -- lifetime --

    def close(self) -> None:
        """Closes the handle and its database (idempotent)."""
        self._h.close()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran."""
        return bool(self._h.closed)

    def __enter__(self) -> "Mnemo":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if self.closed:
            return "<mnemo.Mnemo closed>"
        return f"<mnemo.Mnemo workspace={self.workspace!r} db={self.db_path!r}>"

    # -- about --

    @property
    def workspace(self) -> str:
        """The absolute workspace directory."""
        return str(self._h.info()[0])

    @property
    def db_path(self) -> str:
        """The index database this handle uses."""
        return str(self._h.info()[1])

    @property
    def search_mode(self) -> str:
        """"hybrid" when searches would run the vector leg, else "keyword"."""
        return str(self._h.info()[2])

    @property
    def warning(self) -> Optional[str]:
        """What the last index or memory call wants said beside its result, or None."""
        w = self._h.info()[3]
        return None if w is None else str(w)

    # -- indexing and reading --

    def index(self, force: bool = False,
              progress: Optional[Callable[[Progress], Any]] = None) -> IndexStats:
        """Brings the index up to date with the memory files (mnemo_sync).

        Only changed files are read; ``force`` rebuilds from scratch.
        ``progress`` is called with a :class:`Progress` as files are scanned
        and indexed (from the calling thread); an exception it raises is
        raised after the run, which is not interrupted. Raises ``Busy`` when
        another writer holds the index longer than busyTimeoutMs, and the
        provider's error when a named embedding provider fails.
        """
        cb: Optional[Callable[[str, int, int, int], None]] = None
        if progress is not None:
            user = progress

            def cb(phase: str, done: int, total: int, nbytes: int) -> None:
                user(Progress(phase, done, total, nbytes))

        return IndexStats(**self._h.sync(force=force, progress=cb))

    def get(self, citation_or_path: str, from_line: Optional[int] = None,
            lines: Optional[int] = None) -> Excerpt:
        """Reads lines of a memory file: a path, or a citation as results give it ("path#L5-L9").

        At most ``lines`` lines (default 120) from ``from_line``; raises
        ``Denied`` for a path outside the memory roots, ``NotFound`` when missing.
        """
        d = self._h.get(citation_or_path, from_line or 0, lines or 0)
        return Excerpt(**d)

    def status(self, deep: bool = False, probe: bool = True) -> Dict[str, Any]:
        """The workspace, database, counts, last sync and embedding setup (mnemo status --json).

        With ``deep`` the index is checked page by page and the provider is
        probed with a test query (unless ``probe`` is False: a paid request).
        """
        flags = (1 if deep else 0) | (2 if deep and not probe else 0)
        return dict(json.loads(self._h.status(flags)))

    def files(self, limit: Optional[int] = None) -> Dict[str, Any]:
        """The files the index holds, by path: ``{"indexed", "files": [{"path", "kind",
        "size", "mtime", "chunks"}], "count", "truncated"}``.

        ``kind`` is ``memory``, ``extra``, ``session`` or ``media``; paths are those
        results cite and :meth:`get` reads. Before any index, ``indexed`` is False
        and the list empty.
        """
        o = json.dumps({"limit": limit}) if limit is not None else None
        return dict(json.loads(self._h.files(o)))

    # -- search --

    def _search_args(self, query: Union[str, bytes], kinds: Any, max_results: Optional[int],
                     min_score: Optional[float], strict: Optional[bool], explain: bool,
                     corpus: Optional[str], user_id: Optional[str], agent_id: Optional[str],
                     run_id: Optional[str], scope: Optional[str],
                     categories: Optional[Sequence[str]], type: Optional[str],
                     subject: Optional[str], filters: Union[None, str, Filters]) -> Dict[str, Any]:
        if isinstance(categories, str):
            categories = [c for c in categories.split(",") if c]
        return dict(
            query=query, kinds=_kinds(kinds), max_results=max_results or 0,
            min_score=-1.0 if min_score is None else float(min_score),
            strict=-1 if strict is None else int(bool(strict)), explain=int(explain),
            corpus=corpus, user_id=user_id, agent_id=agent_id, run_id=run_id, scope=scope,
            categories=categories, type=type, subject=subject, filters=_filters(filters),
        )

    def search(self, query: Union[str, bytes], *, max_results: Optional[int] = None,
               min_score: Optional[float] = None,
               kinds: Union[None, str, Iterable[str]] = None, strict: Optional[bool] = None,
               filters: Union[None, str, Filters] = None, explain: bool = False,
               corpus: Optional[str] = None, user_id: Optional[str] = None,
               agent_id: Optional[str] = None, run_id: Optional[str] = None,
               scope: Optional[str] = None, categories: Optional[Sequence[str]] = None,
               type: Optional[str] = None, subject: Optional[str] = None) -> SearchResults:
        """Searches the notes and the stored facts, ranked on one scale (mnemo search).

        ``query``: keywords, "quoted phrases", -excluded terms, or a file
        name. ``max_results`` (default: config maxResults, 6); ``min_score``
        a bar on relevance; ``strict`` (True: nothing when nothing clears
        minScore); ``kinds``: "note", "fact", "media", "all" or a list of
        them; ``corpus``: "memory", "sessions" or "all". The facts are chosen
        by ``user_id``, ``agent_id``, ``run_id``, ``scope``, ``categories``,
        ``type``, ``subject`` and ``filters`` (a dict in Mem0's filter
        language). Raises ``NotFound`` when no index exists yet (call
        :meth:`index`), ``InvalidArgument`` for an empty query or a bad filter.
        """
        args = self._search_args(query, kinds, max_results, min_score, strict, explain, corpus,
                                 user_id, agent_id, run_id, scope, categories, type, subject,
                                 filters)
        hits, mode, warning, provider, fb_from, fb_reason = self._h.search(**args)
        return SearchResults(
            (_fact(t) if t[0] == "fact" else _note(t, explain) for t in hits),
            mode=mode, warning=warning, provider=provider,
            fallback=(fb_from, fb_reason) if fb_from is not None else None,
        )

    def search_json(self, query: Union[str, bytes], **options: Any) -> Dict[str, Any]:
        """:meth:`search` answered as the JSON object ``mnemo search --json`` prints.

        Takes the options of :meth:`search`; the object is
        ``{"results": [...], "mode": ..., "kinds": [...], ...}``, parsed.
        """
        names = ("max_results", "min_score", "kinds", "strict", "filters", "explain", "corpus",
                 "user_id", "agent_id", "run_id", "scope", "categories", "type", "subject")
        unknown = set(options) - set(names)
        if unknown:
            raise TypeError(f"search_json() got unexpected options: {sorted(unknown)}")
        o = {n: options.get(n) for n in names}
        a = self._search_args(query, o["kinds"], o["max_results"], o["min_score"], o["strict"],
                              bool(o["explain"]), o["corpus"], o["user_id"], o["agent_id"],
                              o["run_id"], o["scope"], o["categories"], o["type"], o["subject"],
                              o["filters"])
        return dict(json.loads(self._h.search(as_json=True, **a)))

    # -- recall --

    def recall(self, message: str, *, user_id: Optional[str] = None,
               agent_id: Optional[str] = None, run_id: Optional[str] = None,
               strategy: Optional[str] = None) -> str:
        """The ``<recalled-memories>`` block to put before a prompt about ``message``.

        ``strategy``: "smart" (the default of config recallStrategy: only
        when the message calls for it), "always" or "manual" (an empty
        string). Empty when nothing is recalled.
        """
        return str(self._h.memory_recall(_options(
            message=message, user_id=user_id, agent_id=agent_id, run_id=run_id,
            strategy=strategy) or "{}"))

    def recall_triggers(self, message: str) -> str:
        """The curated entries whose ``<!-- trigger: ... -->`` phrases occur in ``message``."""
        return str(self._h.recall_triggers(message))


class Memories:
    """The structured memories (facts) of a store, Mem0-style: ``m.memories``.

    Records are :class:`Memory` objects; options are those of
    ``mnemo memory`` (docs/memories.md); ``filters`` is a dict in Mem0's
    filter language, e.g. ``{"category": {"in": ["preference", "decision"]}}``.
    """

    def __init__(self, owner: Mnemo) -> None:
        self._m = owner

    def add(self, text: str, *, category: Optional[str] = None,
            importance: Optional[float] = None, type: Optional[str] = None,
            subject: Optional[str] = None, user_id: Optional[str] = None,
            agent_id: Optional[str] = None, run_id: Optional[str] = None,
            metadata: Optional[Mapping[str, Any]] = None,
            triggers: Optional[Sequence[str]] = None,
            expires_at: Optional[str] = None) -> Memory:
        """Stores a memory and returns it (``duplicate`` True when the same text was stored).

        Text that looks like a credential is refused (``InvalidArgument``), as
        is anything beyond the limits of docs/memories.md.
        """
        rec = _options(text=text, category=category, importance=importance, type=type,
                       subject=subject, user_id=user_id, agent_id=agent_id, run_id=run_id,
                       metadata=dict(metadata) if metadata is not None else None,
                       triggers=list(triggers) if triggers is not None else None,
                       expires_at=expires_at)
        return Memory.from_dict(json.loads(self._m._h.memory_add(rec or "{}")))

    def get(self, id: str) -> Memory:
        """The memory ``id`` (deleted ones too); ``NotFound`` when unknown."""
        return Memory.from_dict(json.loads(self._m._h.memory_get(id)))

    def update(self, id: str, text: Optional[str] = None, **changes: Any) -> Memory:
        """Changes fields of memory ``id`` (text, category, importance, metadata...)."""
        if text is not None:
            changes["text"] = text
        return Memory.from_dict(json.loads(self._m._h.memory_update(id, json.dumps(changes))))

    def delete(self, id: str) -> None:
        """Soft-deletes memory ``id``: gone from searches and lists until purged."""
        self._m._h.memory_delete(id)

    def restore(self, id: str) -> Memory:
        """Brings deleted memory ``id`` back."""
        return Memory.from_dict(json.loads(self._m._h.memory_restore(id)))

    def purge(self, id: Optional[str] = None) -> int:
        """Removes deleted memories for good (``id``, or all): how many."""
        return int(self._m._h.memory_purge(id))

    def confirm(self, id: str) -> Memory:
        """The user confirmed memory ``id``: counted, and it fades more slowly."""
        return Memory.from_dict(json.loads(self._m._h.memory_confirm(id)))

    def history(self, id: str) -> List[HistoryEvent]:
        """The changes of memory ``id``, oldest first."""
        return [HistoryEvent.from_dict(e) for e in json.loads(self._m._h.memory_history(id))]

    def list(self, *, user_id: Optional[str] = None, agent_id: Optional[str] = None,
             run_id: Optional[str] = None, scope: Optional[str] = None,
             categories: Optional[Sequence[str]] = None, type: Optional[str] = None,
             subject: Optional[str] = None, filters: Union[None, str, Filters] = None,
             limit: Optional[int] = None, offset: Optional[int] = None,
             deleted: Optional[bool] = None) -> MemoryList:
        """Memories matching the options, newest first (a page of ``limit``, default 100)."""
        o = _options(user_id=user_id, agent_id=agent_id, run_id=run_id, scope=scope,
                     categories=list(categories) if categories is not None else None, type=type,
                     subject=subject, filters=filters, limit=limit, offset=offset,
                     deleted=deleted)
        return MemoryList(json.loads(self._m._h.memory_list(o)), "memories")

    def search(self, query: str, *, user_id: Optional[str] = None,
               agent_id: Optional[str] = None, run_id: Optional[str] = None,
               scope: Optional[str] = None, categories: Optional[Sequence[str]] = None,
               type: Optional[str] = None, subject: Optional[str] = None,
               filters: Union[None, str, Filters] = None, limit: Optional[int] = None,
               min_score: Optional[float] = None) -> MemoryList:
        """Memories about ``query``, best first, each with its ``score`` (limit 10, at most 50)."""
        o = _options(user_id=user_id, agent_id=agent_id, run_id=run_id, scope=scope,
                     categories=list(categories) if categories is not None else None, type=type,
                     subject=subject, filters=filters, limit=limit, min_score=min_score)
        return MemoryList(json.loads(self._m._h.memory_search(query, o)), "results")

    def counts(self, *, bucket: str = "week", weeks: Optional[int] = None,
               user_id: Optional[str] = None, agent_id: Optional[str] = None,
               run_id: Optional[str] = None, scope: Optional[str] = None,
               categories: Optional[Sequence[str]] = None, type: Optional[str] = None,
               subject: Optional[str] = None, filters: Union[None, str, Filters] = None,
               deleted: Optional[bool] = None) -> Dict[str, Any]:
        """Memories per week (from Monday 00:00 UTC) or day, by category, counted by the
        store: ``{"buckets": [{"start", "total", "byCategory"}], "total"}``, oldest first.

        The options are :meth:`list`'s; ``weeks`` keeps the last N weeks.
        """
        o = _options(user_id=user_id, agent_id=agent_id, run_id=run_id, scope=scope,
                     categories=list(categories) if categories is not None else None, type=type,
                     subject=subject, filters=filters, deleted=deleted, bucket=bucket,
                     weeks=weeks)
        return dict(json.loads(self._m._h.memory_counts(o)))

    def recover(self, path: str) -> Dict[str, Any]:
        """Salvages the memories still readable from a damaged store or index file at ``path``."""
        return dict(json.loads(self._m._h.memory_recover(path)))

    def __iter__(self) -> Iterator[Memory]:
        """Every memory (not deleted) of the configured user, newest first, page by page."""
        offset = 0
        while True:
            page = self.list(limit=100, offset=offset)
            yield from page
            if len(page) < 100:
                return
            offset += len(page)


def open(workspace: Union[None, str, "os.PathLike[str]"] = None,
         db: Union[None, str, "os.PathLike[str]"] = None, *,
         config_file: Union[None, str, "os.PathLike[str]"] = None,
         **settings: Any) -> Mnemo:
    """Opens the workspace ``workspace`` (default: the current directory) and its index ``db``.

    ``settings`` are configuration keys (``mnemo config keys``), in Python
    spelling or as in mnemo.json: ``max_results=3``, ``provider="static"``,
    ``extra_paths=["notes"]``, ``store="postgres://..."``. They apply over
    the standard layering (user config, ``config_file`` or
    <workspace>/mnemo.json, MNEMO_* environment variables), as the
    command's flags do. The database is opened lazily, by the first call
    that needs it. Raises ``InvalidArgument`` for an unknown key or a bad value.
    """
    return Mnemo(workspace, db, config_file=config_file, **settings)

