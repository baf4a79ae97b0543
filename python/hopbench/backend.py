"""A hopbench external engine written as one Python function.

hopbench can hand one first-stage side of a leg (``dense`` or ``lexical``) to another process
that speaks JSON lines over its stdin and stdout (``legs/src/engine/external.rs``;
``scripts/backends/README.md``). The protocol is small, but every backend used to carry the same
loop, and the ways to get it wrong (a numpy float that ``json`` cannot write, a ``print`` that
lands between two answers, a traceback the cell's reason cannot attribute) were each backend's
to find. :func:`serve` owns the loop, so a backend is only its index::

    import hnswlib
    from hopbench.backend import serve

    def build(corpus):                       # once, before hopbench sends any query
        index = hnswlib.Index(space="ip", dim=corpus.vectors.shape[1])
        index.init_index(max_elements=len(corpus))
        index.add_items(corpus.vectors)
        def search(query_id, text, vector, k):
            labels, distances = index.knn_query([vector], k=min(k, len(corpus)))
            return [(corpus.ids[i], 1.0 - d) for i, d in zip(labels[0], distances[0])]
        return search

    serve(setup=build, side="dense")

Nothing here imports the compiled extension, numpy or pyarrow at import time: a backend runs
under whatever interpreter the campaign names, from a source tree, and only what it touches of
the export is read (pyarrow for the corpus, numpy for its vectors).
"""

from __future__ import annotations

import functools
import json
import math
import numbers
import os
import pathlib
import struct
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NoReturn, Optional

__all__ = ["BackendError", "Corpus", "check_results", "serve"]

SIDES = ("dense", "lexical")
VECTOR_COLUMNS = ("embedding", "embedding_content")
# how the export's protocol joins a chunk's context header to its text (datasets/src/protocol.rs)
JOINERS = {"newline": "\n", "space": " "}


class BackendError(Exception):
    """A failure the backend explains in its own words.

    Raised from ``setup`` or ``search`` (or by :func:`check_results` for a bad answer), it ends
    the backend with its message alone on stderr, no traceback: hopbench quotes the end of the
    backend's stderr in the cell's reason, and an expected refusal ("this export's tokenizer is
    not the one I reproduce") reads better without one. Any other exception also ends the
    backend, with its traceback first and the same one-line summary last.
    """


class Corpus:
    """The export hopbench hands a backend, read on demand and kept once read.

    Each attribute reads only the columns it needs from ``corpus.parquet`` the first time it is
    asked for: a lexical backend never loads the vectors, a dense one never the texts, and a
    million chunks' texts are hundreds of megabytes. The rows are in the export's order (sorted
    by chunk id), the same for every attribute, so ``ids[i]`` is the chunk of ``texts[i]`` and
    ``vectors[i]``, and "ties on ascending chunk id" is "ties on ascending row".

    Attributes set at construction:
        export: the export directory (``HOPBENCH_EXPORT``), a :class:`pathlib.Path`.
        side: ``"dense"``, ``"lexical"``, or ``None`` when not run by hopbench.
        vector_column: the corpus column the leg ranks by on the dense side (``embedding``, or
            ``embedding_content`` for the text-alone ablation); ``None`` on the lexical side.
    """

    def __init__(self, export: os.PathLike | str, *, side: Optional[str] = None,
                 vector_column: Optional[str] = None):
        self.export = pathlib.Path(export)
        self.side = side
        self.vector_column = vector_column

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        return f"Corpus({str(self.export)!r}, side={self.side!r}, vector_column={self.vector_column!r})"

    def _read(self, columns: list[str]):
        import pyarrow.parquet as pq  # only a backend that reads the corpus needs pyarrow

        return pq.read_table(self.export / "corpus.parquet", columns=columns)

    @functools.cached_property
    def ids(self) -> list[str]:
        """The chunk ids, in the export's order: what a result's ``doc_id`` must be one of."""
        return self._read(["chunk_id"]).column("chunk_id").to_pylist()

    @functools.cached_property
    def texts(self) -> list[str]:
        """Each chunk's text as hopbench indexes and embeds it: the context header, the
        export's joiner and the body, or the body alone (``ChunkText::full_text``), so a lexical
        backend sees the words the built-in BM25 sees."""
        joiner = self.joiner
        table = self._read(["text", "context_header"]).to_pydict()
        return [t if h is None else f"{h}{joiner}{t}"
                for t, h in zip(table["text"], table["context_header"])]

    @functools.cached_property
    def vectors(self):
        """The corpus vectors of ``vector_column`` (``embedding`` when unset) as one float32
        numpy array, one L2-normalised row per chunk: inner product is cosine, the scale of
        hopbench's exact dense engine."""
        import numpy as np

        column = self.vector_column or "embedding"
        values = self._read([column]).column(column)
        if values.null_count:
            raise BackendError(f"{self.export}/corpus.parquet: `{column}` has null rows")
        n = len(values)
        if n == 0:
            return np.zeros((0, 0), dtype=np.float32)
        return np.asarray(values.combine_chunks().flatten(), dtype=np.float32).reshape(n, -1)

    @functools.cached_property
    def manifest(self) -> dict:
        """``manifest.json``: the export's protocol, model, counts and file hashes."""
        return json.loads((self.export / "manifest.json").read_text(encoding="utf-8"))

    @functools.cached_property
    def joiner(self) -> str:
        """What joins a context header to the body in :attr:`texts` (the manifest's protocol)."""
        name = self.manifest.get("protocol", {}).get("joiner")
        if name not in JOINERS:
            raise BackendError(f"{self.export}/manifest.json: protocol joiner {name!r} is not one of "
                               f"{sorted(JOINERS)}")
        return JOINERS[name]

    @functools.cached_property
    def bm25_stats(self) -> dict:
        """``bm25-stats.json``: the built-in BM25's tokenizer name, its ``params`` (``k1``,
        ``b``), the chunk count, average and per-chunk lengths, for a lexical backend that
        reproduces it."""
        return json.loads((self.export / "bm25-stats.json").read_text(encoding="utf-8"))


def check_results(returned: Any, k: int, known_ids: Optional[Any] = None) -> list[tuple[str, float]]:
    """Checks what a search function returned and turns it into plain ``(str, float)`` pairs.

    The harness refuses an answer with more than ``k`` results, an id that is not a chunk of the
    corpus or that comes twice, or a score that is not finite as float32 (the scale every
    ranking uses); it would say so, but only as a malformed line. Checked here, the message says
    which result of the function's return is wrong and how. Values are converted on the way
    (numpy strings and floats, ints), because ``json`` cannot write numpy floats and writes
    non-finite floats as the tokens ``NaN`` and ``Infinity``, which are not JSON.

    Args:
        returned: what the search function returned: an iterable of ``(doc_id, score)`` pairs
            (a list, a generator, a list of lists of two) or a mapping ``{doc_id: score}``.
        k: the most results the request allows.
        known_ids: the chunk ids of the corpus (a set, for speed), or ``None`` not to check ids.

    Returns:
        The pairs in the order given, each ``(doc_id, score)`` with ``doc_id`` a ``str`` and
        ``score`` a finite ``float``.

    Raises:
        BackendError: naming the first result that breaks a rule.
    """
    pairs = _as_pairs(returned)
    if len(pairs) > k:
        raise BackendError(f"{len(pairs)} results for k = {k}")
    out: list[tuple[str, float]] = []
    first_at: dict[str, int] = {}
    for index, pair in enumerate(pairs):
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise BackendError(f"result {index} is {_show(pair)}, not a (doc_id, score) pair")
        doc_id, score = pair
        if not isinstance(doc_id, str):
            raise BackendError(f"result {index}: doc_id is {_show(doc_id)}, not a str (chunk ids are strings)")
        doc_id = str(doc_id)  # a numpy.str_ or other subclass, as the plain str json writes
        if isinstance(score, bool) or not isinstance(score, numbers.Real):
            raise BackendError(f"result {index} (`{doc_id}`): score is {_show(score)}, not a number")
        value = float(score)
        if not math.isfinite(value):
            raise BackendError(f"result {index} (`{doc_id}`) has the non-finite score {value}")
        if not _finite_as_f32(value):
            raise BackendError(f"result {index} (`{doc_id}`) has the score {value}, infinite as float32 "
                               "(hopbench ranks on float32)")
        if known_ids is not None and doc_id not in known_ids:
            raise BackendError(f"result {index} names `{doc_id}`, which is not a chunk id of the corpus")
        if doc_id in first_at:
            raise BackendError(f"result {index} names `{doc_id}` a second time (first as result "
                               f"{first_at[doc_id]})")
        first_at[doc_id] = index
        out.append((doc_id, value))
    return out


def serve(search: Optional[Callable[[str, str, Optional[list], int], Any]] = None, *,
          setup: Optional[Callable[[Corpus], Callable]] = None,
          side: Optional[str] = None,
          name: Optional[str] = None,
          export: Optional[os.PathLike | str] = None,
          vector_column: Optional[str] = None,
          stdin: Optional[Iterable] = None,
          stdout: Optional[Any] = None) -> None:
    """Runs the external-engine protocol until hopbench closes stdin, answering with ``search``.

    Reads the export hopbench names in the environment (``HOPBENCH_EXPORT``, ``HOPBENCH_SIDE``,
    ``HOPBENCH_VECTORS``), builds the index with ``setup`` if given, says ``{"ready": true}``,
    then answers each request line with ``search(query_id, text, vector, k)``, checked by
    :func:`check_results` and written as the protocol's answer. A search returns an iterable of
    ``(doc_id, score)`` pairs (or a ``{doc_id: score}`` mapping): at most ``k``, each a chunk id
    of the corpus at most once, finite scores, in any order (hopbench sorts by score, ties on
    ascending id). Keep the scores on the built-in engine's scale (cosine for dense, BM25 for
    lexical): the graph-rescue gate reads them. A request with ``k == 0`` is answered with no
    results without calling ``search``. A query may be sent more than once with other texts
    (the conversation legs retrieve for earlier turns under the same id): never cache by id.

    Anything the backend writes to stdout (a ``print``, a C library's message) goes to stderr
    instead, so it cannot land between two answers; the protocol keeps the real stdout.

    Failures end the process with exit status 1 and one line on stderr, last (after the
    traceback, for an unexpected exception), which hopbench quotes in the cell's reason after
    its own "request for query `q17`: the process exited (exit status: 1) before answering":

    - ``NAME: query `q17`: search raised ValueError: ...`` (any exception of ``search``);
    - ``NAME: query `q17`: MESSAGE`` (a :class:`BackendError` that ``search`` raised);
    - ``NAME: query `q17`: bad answer from search: result 2 (`c9`) has the non-finite score
      nan`` (and likewise for too many results, an unknown or repeated id, a wrong type);
    - ``NAME: setup raised ...`` or ``NAME: MESSAGE`` before the ready line, which hopbench
      reports as a failure "at start-up".

    Args:
        search: ``search(query_id, text, vector, k)``, called once per request. ``query_id``
            and ``text`` are str; ``vector`` is the query's L2-normalised embedding as a list of
            floats (exactly the float32 values hopbench holds) on the dense side, ``None`` on
            the lexical side; ``k`` is the most results wanted (an int >= 1). Give either
            ``search`` or ``setup``.
        setup: ``setup(corpus)``, called once with the :class:`Corpus` before the ready line
            (not timed per query; hopbench waits up to the leg's ``startup_timeout_ms``). It
            builds the index and returns the search function, usually a closure over the index
            and ``corpus.ids``. Give either ``search`` or ``setup``.
        side: ``"dense"`` or ``"lexical"``: the one side this backend answers. When hopbench
            asks it for the other, it fails at start-up saying so, instead of answering a
            dense request without its vector or a lexical one with the wrong scores. ``None``
            (the default) answers either.
        name: the prefix of every message, e.g. ``"bm25s_backend"``; default: the script's
            file name without ``.py``.
        export: the export directory, instead of ``$HOPBENCH_EXPORT`` (for a run by hand).
        vector_column: the corpus vector column, instead of ``$HOPBENCH_VECTORS`` (for a run
            by hand); ``Corpus.vectors`` reads ``embedding`` when neither is set.
        stdin: the request lines (an iterable of str or bytes), instead of the process's stdin
            (for tests).
        stdout: where the ready line and the answers go (a text stream), instead of the
            process's stdout; with it given, stdout is left as it is (for tests).

    Returns:
        ``None``, when the requests end (hopbench closed stdin).

    Raises:
        SystemExit: (status 1) after any failure above, its message written to stderr.
        TypeError: when neither or both of ``search`` and ``setup`` are given, or ``side`` is
            not a side: a mistake in the backend's code, reported before anything runs.
    """
    if (search is None) == (setup is None):
        raise TypeError("serve() takes either search or setup (which returns the search function)")
    if side is not None and side not in SIDES:
        raise TypeError(f"serve(side={side!r}): a side is one of {SIDES}")
    name = name or _script_name()
    log = _Log(name)
    out = stdout if stdout is not None else _take_stdout()
    requests = stdin if stdin is not None else sys.stdin.buffer

    corpus = _corpus(log, export, vector_column, side)
    try:
        known = frozenset(corpus.ids)
    except Exception as e:  # the export is hopbench's: a failure here is the file's, not the backend's
        log.fail(f"cannot read the chunk ids of {corpus.export}/corpus.parquet: {type(e).__name__}: {e}")
    if setup is not None:
        try:
            search = setup(corpus)
        except BackendError as e:
            log.fail(str(e))
        except Exception as e:
            log.fail(f"setup raised {_what(e)}", exc=e)
        if not callable(search):
            log.fail(f"setup returned {_show(search)}, not the search function")

    try:
        _write(out, {"ready": True})
        for number, line in enumerate(requests, 1):
            if not line.strip():
                continue
            query_id, text, vector, k = _request(log, line, number, corpus.side)
            results: list[tuple[str, float]] = []
            if k > 0:
                where = f"query `{query_id}`"
                try:
                    returned = search(query_id, text, vector, k)
                    if isinstance(returned, Mapping):
                        returned = returned.items()
                    if isinstance(returned, Iterable) and not isinstance(returned, (str, bytes)):
                        returned = list(returned)  # a generator's own errors are the search's
                except BackendError as e:
                    log.fail(f"{where}: {e}")
                except Exception as e:
                    log.fail(f"{where}: search raised {_what(e)}", exc=e)
                try:
                    results = check_results(returned, k, known)
                except BackendError as e:
                    log.fail(f"{where}: bad answer from search: {e}")
            _write(out, {"query_id": query_id,
                         "results": [{"id": doc_id, "score": score} for doc_id, score in results]})
    except BrokenPipeError:
        # hopbench stopped reading (it stopped the cell for a failure elsewhere): nothing to
        # tell it, and nothing left to flush at exit
        try:
            out.close()
        except OSError:
            pass
        sys.exit(0)


def _corpus(log: "_Log", export, vector_column, side) -> Corpus:
    """The corpus the environment (or the caller's overrides) names, checked for ``side``."""
    env_side = os.environ.get("HOPBENCH_SIDE") or None
    if env_side is not None and env_side not in SIDES:
        log.fail(f"HOPBENCH_SIDE is {env_side!r}, not one of {SIDES}")
    if side is not None and env_side is not None and env_side != side:
        log.fail(f"this backend answers the {side} side; the leg asks it for the {env_side} side "
                 f"(HOPBENCH_SIDE={env_side}): use it as the `{side}:` engine of a leg")
    export = export if export is not None else os.environ.get("HOPBENCH_EXPORT")
    if not export:
        log.fail("no export directory: HOPBENCH_EXPORT is not set (hopbench sets it when it "
                 "starts the backend)")
    if not pathlib.Path(export).is_dir():
        log.fail(f"the export directory {export} does not exist")
    if vector_column is None and (env_side or side) != "lexical":
        vector_column = os.environ.get("HOPBENCH_VECTORS") or None
    if vector_column is not None and vector_column not in VECTOR_COLUMNS:
        log.fail(f"the vector column {vector_column!r} is not one of {VECTOR_COLUMNS}")
    return Corpus(export, side=env_side or side, vector_column=vector_column)


def _request(log: "_Log", line, number: int, side: Optional[str]):
    """``(query_id, text, vector, k)`` of one request line; a line hopbench would never send
    ends the backend (a confused pipe cannot be resynchronised)."""
    try:
        request = json.loads(line)
    except ValueError as e:
        log.fail(f"request {number} is not JSON ({e}): {_cut(line)}")
    if not isinstance(request, dict):
        log.fail(f"request {number} is not a JSON object: {_cut(line)}")
    query_id, text, k = request.get("query_id"), request.get("text"), request.get("k")
    vector = request.get("vector")
    if not isinstance(query_id, str) or not isinstance(text, str) \
            or not isinstance(k, int) or isinstance(k, bool) or k < 0:
        log.fail(f"request {number} lacks a string `query_id` and `text` or a count `k`: {_cut(line)}")
    if side == "dense" and vector is None:
        log.fail(f"request {number} (query `{query_id}`) on the dense side has no `vector`")
    return query_id, text, vector, k


def _as_pairs(returned: Any) -> list:
    """``returned`` as a list of its items, refusing what cannot be a list of results."""
    if isinstance(returned, Mapping):
        return list(returned.items())
    if returned is None or isinstance(returned, (str, bytes)) or not isinstance(returned, Iterable):
        raise BackendError(f"search returned {_show(returned)}, not a list of (doc_id, score) pairs")
    return returned if isinstance(returned, list) else list(returned)


def _finite_as_f32(value: float) -> bool:
    """Whether ``value`` stays finite rounded to float32, as the harness rounds it."""
    try:
        return math.isfinite(struct.unpack("f", struct.pack("f", value))[0])
    except OverflowError:
        return False


def _write(out, message: dict) -> None:
    out.write(json.dumps(message) + "\n")
    out.flush()


def _take_stdout():
    """The process's stdout, kept for the protocol alone; fd 1 (so ``print``, ``sys.stdout``
    and C libraries alike) goes to stderr from here on."""
    try:
        sys.stdout.flush()
        protocol = os.fdopen(os.dup(1), "w", encoding="utf-8", newline="\n")
        os.dup2(2, 1)
    except (OSError, ValueError, AttributeError):
        return sys.stdout  # no file descriptors (an embedded interpreter): share stdout
    sys.stdout = sys.stderr
    return protocol


def _script_name() -> str:
    arg = sys.argv[0] if sys.argv else ""
    return pathlib.Path(arg).stem if arg and arg not in ("-c", "-m", "-") else "hopbench.backend"


def _what(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def _show(value: Any) -> str:
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{text} ({type(value).__name__})" if value is not None else "None"


def _cut(line) -> str:
    if isinstance(line, bytes):
        line = line.decode("utf-8", "replace")
    line = line.rstrip("\r\n")
    return line if len(line) <= 200 else line[:200] + "…"


class _Log:
    """Messages on stderr, each prefixed with the backend's name."""

    def __init__(self, name: str):
        self.name = name

    def fail(self, message: str, exc: Optional[BaseException] = None) -> NoReturn:
        """Writes the traceback of ``exc`` (its frames in this module left out), then
        ``message`` as the last line, where hopbench's quote of the stderr's end finds it, and
        exits with status 1."""
        if exc is not None:
            tb = exc.__traceback__
            while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
                tb = tb.tb_next
            sys.stderr.write("".join(traceback.format_exception(type(exc), exc, tb)))
        sys.stderr.write(f"{self.name}: {message}\n")
        sys.stderr.flush()
        sys.exit(1)
