"""hopbench.backend.serve speaks the external-engine protocol for a plain function: the ready
line, one checked answer per request, and every bad return or exception a failure whose last
stderr line names the query, as the harness quotes it in the cell's reason."""

import io
import json
import math
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

from conftest import CHUNKS, DIM, REPO, harness_env, hopbench_binary, run_backend
from hopbench.backend import BackendError, Corpus, check_results, serve

IDS = [c[0] for c in CHUNKS]


def request(query_id, text="alice paris", k=3, vector=None):
    r = {"query_id": query_id, "text": text}
    if vector is not None:
        r["vector"] = vector
    r["k"] = k
    return r


def serve_here(monkeypatch, export, side, requests, vectors="embedding", **kwargs):
    """Runs serve in this process with the harness's environment and the requests as stdin;
    returns the JSON lines it wrote."""
    for k, v in harness_env(export, side, vectors).items():
        monkeypatch.setenv(k, v)
    if side != "dense":
        monkeypatch.delenv("HOPBENCH_VECTORS", raising=False)
    out = io.StringIO()
    kwargs.setdefault("name", "test_backend")  # in process, argv[0] is pytest's
    serve(stdin=[json.dumps(r) + "\n" for r in requests], stdout=out, **kwargs)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def fails(monkeypatch, capsys, export, search, requests, side="lexical", **kwargs):
    """Runs serve expecting a failure: returns the last stderr line after checking the exit
    status is 1."""
    with pytest.raises(SystemExit) as exit_:
        serve_here(monkeypatch, export, side, requests, search=search, **kwargs)
    assert exit_.value.code == 1
    return capsys.readouterr().err.rstrip("\n").splitlines()[-1]


# --- the protocol, in process -------------------------------------------------------------


def test_answers_follow_the_protocol_with_values_converted(monkeypatch, export):
    np = pytest.importorskip("numpy")
    seen = []

    def search(query_id, text, vector, k):
        seen.append((query_id, text, vector, k))
        # numpy strings and floats, an int score: json could write none of the numpy ones
        return [(np.str_("c2"), np.float32(2.5)), ("c0", 1), ("c5", np.float64(-0.25))][:k]

    lines = serve_here(monkeypatch, export, "lexical",
                       [request("q1", k=3), request("q2", "other", k=1), request("q3", k=0)],
                       search=search)
    assert lines == [
        {"ready": True},
        {"query_id": "q1", "results": [{"id": "c2", "score": 2.5}, {"id": "c0", "score": 1.0},
                                       {"id": "c5", "score": -0.25}]},
        {"query_id": "q2", "results": [{"id": "c2", "score": 2.5}]},
        {"query_id": "q3", "results": []},
    ]
    # k = 0 is answered without calling search; the lexical side has no vector
    assert seen == [("q1", "alice paris", None, 3), ("q2", "other", None, 1)]


def test_the_dense_side_passes_the_vector_and_a_mapping_or_generator_may_be_returned(monkeypatch, export):
    vec = [0.5, -0.5, 0.5, -0.5]
    got = []

    def search(query_id, text, vector, k):
        got.append(vector)
        if query_id == "q1":
            return {"c1": 0.75, "c4": 0.5}
        return ((i, 1.0 / (n + 1)) for n, i in enumerate(IDS[:k]))

    lines = serve_here(monkeypatch, export, "dense",
                       [request("q1", vector=vec), request("q2", k=2, vector=vec)], search=search)
    assert lines[1]["results"] == [{"id": "c1", "score": 0.75}, {"id": "c4", "score": 0.5}]
    assert lines[2]["results"] == [{"id": "c0", "score": 1.0}, {"id": "c1", "score": 0.5}]
    assert got == [vec, vec]


def test_setup_gets_the_corpus_as_hopbench_indexes_it(monkeypatch, export):
    np = pytest.importorskip("numpy")
    corpora = []

    def setup(corpus):
        corpora.append(corpus)
        return lambda query_id, text, vector, k: [(corpus.ids[0], 1.0)]

    lines = serve_here(monkeypatch, export, "dense", [request("q1", vector=[0.0] * DIM)],
                       vectors="embedding_content", setup=setup)
    assert lines[1] == {"query_id": "q1", "results": [{"id": "c0", "score": 1.0}]}
    (corpus,) = corpora
    assert isinstance(corpus, Corpus) and len(corpus) == len(CHUNKS)
    assert corpus.export == export.resolve()
    assert (corpus.side, corpus.vector_column) == ("dense", "embedding_content")
    assert corpus.ids == IDS
    # header + the manifest's joiner (a space here) + text; the text alone without a header
    assert corpus.texts[0] == "Alice Alice was born in Paris."
    assert corpus.texts[3] == "Berlin is the capital of Germany."
    assert corpus.vectors.dtype == np.float32 and corpus.vectors.shape == (len(CHUNKS), DIM)
    from conftest import unit
    np.testing.assert_allclose(corpus.vectors[2], unit(2, 1), rtol=1e-6)
    assert corpus.bm25_stats["params"] == {"k1": 0.9, "b": 0.4}


def test_serve_takes_search_or_setup_and_a_known_side():
    with pytest.raises(TypeError, match="either search or setup"):
        serve()
    with pytest.raises(TypeError, match="either search or setup"):
        serve(lambda *a: [], setup=lambda c: None)
    with pytest.raises(TypeError, match="a side is one of"):
        serve(lambda *a: [], side="sparse")


# --- bad returns and exceptions name the query ------------------------------------------------


def ret(value):
    return lambda query_id, text, vector, k: value


@pytest.mark.parametrize("search, detail", [
    (ret([("c0", float("nan"))]), "result 0 (`c0`) has the non-finite score nan"),
    (ret([("c0", 1.0), ("c1", float("-inf"))]), "result 1 (`c1`) has the non-finite score -inf"),
    (ret([("c0", 1e39)]), "result 0 (`c0`) has the score 1e+39, infinite as float32 (hopbench ranks on float32)"),
    (ret([("c0", 1.0), ("c2", 0.5), ("c0", 0.25)]), "result 2 names `c0` a second time (first as result 0)"),
    (ret([("c0", 1.0), ("nope", 0.5)]), "result 1 names `nope`, which is not a chunk id of the corpus"),
    (ret([(i, 1.0) for i in IDS[:4]]), "4 results for k = 3"),
    (ret([(0, 1.0)]), "result 0: doc_id is 0 (int), not a str (chunk ids are strings)"),
    (ret([(b"c0", 1.0)]), "result 0: doc_id is b'c0' (bytes), not a str (chunk ids are strings)"),
    (ret([("c0", "1.0")]), "result 0 (`c0`): score is '1.0' (str), not a number"),
    (ret([("c0", True)]), "result 0 (`c0`): score is True (bool), not a number"),
    (ret([("c0", None)]), "result 0 (`c0`): score is None, not a number"),
    (ret(["c0"]), "result 0 is 'c0' (str), not a (doc_id, score) pair"),
    (ret([("c0", 1.0, "extra")]), "result 0 is ('c0', 1.0, 'extra') (tuple), not a (doc_id, score) pair"),
    (ret([{"id": "c0", "score": 1.0}]), "result 0 is {'id': 'c0', 'score': 1.0} (dict), not a (doc_id, score) pair"),
    (ret(None), "search returned None, not a list of (doc_id, score) pairs"),
    (ret("c0"), "search returned 'c0' (str), not a list of (doc_id, score) pairs"),
    (ret(3.5), "search returned 3.5 (float), not a list of (doc_id, score) pairs"),
])
def test_a_bad_answer_is_refused_naming_the_query_and_the_result(monkeypatch, capsys, export, search, detail):
    last = fails(monkeypatch, capsys, export, search, [request("q7")])
    assert last == f"test_backend: query `q7`: bad answer from search: {detail}"


def test_an_exception_of_search_is_a_failure_naming_the_query_with_its_traceback(monkeypatch, capsys, export):
    def search(query_id, text, vector, k):
        if query_id == "q2":
            raise ValueError("no index for this")
        return []

    with pytest.raises(SystemExit) as exit_:
        serve_here(monkeypatch, export, "lexical", [request("q1"), request("q2"), request("q3")],
                   search=search, name="mine")
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    # the traceback is the search's own (serve's frames left out), the summary comes last
    assert "Traceback (most recent call last)" in err and 'raise ValueError("no index for this")' in err
    assert "hopbench/backend.py" not in err
    assert err.rstrip("\n").splitlines()[-1] == "mine: query `q2`: search raised ValueError: no index for this"


def test_a_generator_that_raises_is_the_search_raising(monkeypatch, capsys, export):
    def search(query_id, text, vector, k):
        yield ("c0", 1.0)
        raise KeyError("c9")

    last = fails(monkeypatch, capsys, export, search, [request("q4")])
    assert last == "test_backend: query `q4`: search raised KeyError: 'c9'"


def test_a_backend_error_is_its_message_alone(monkeypatch, capsys, export):
    def search(query_id, text, vector, k):
        raise BackendError("a 3-d query vector, the corpus is 4-d")

    with pytest.raises(SystemExit):
        serve_here(monkeypatch, export, "lexical", [request("q5")], search=search)
    err = capsys.readouterr().err
    assert err == "test_backend: query `q5`: a 3-d query vector, the corpus is 4-d\n"


def test_start_up_failures_say_what_before_the_ready_line(monkeypatch, capsys, export):
    out = io.StringIO()

    def run(**kwargs):
        with pytest.raises(SystemExit):
            serve(stdin=[], stdout=out, name="b", **kwargs)
        return capsys.readouterr().err.rstrip("\n").splitlines()[-1]

    for k, v in harness_env(export, "lexical").items():
        monkeypatch.setenv(k, v)

    def broken(corpus):
        raise RuntimeError("out of memory")

    assert run(setup=broken) == "b: setup raised RuntimeError: out of memory"

    def refuses(corpus):
        raise BackendError("this export's tokenizer is not mine")

    assert run(setup=refuses) == "b: this export's tokenizer is not mine"
    assert run(setup=lambda corpus: 42) == "b: setup returned 42 (int), not the search function"
    assert run(search=ret([]), side="dense") == (
        "b: this backend answers the dense side; the leg asks it for the lexical side "
        "(HOPBENCH_SIDE=lexical): use it as the `dense:` engine of a leg")
    monkeypatch.delenv("HOPBENCH_EXPORT")
    assert run(search=ret([])).startswith("b: no export directory: HOPBENCH_EXPORT is not set")
    assert run(search=ret([]), export=export / "missing") == f"b: the export directory {export / 'missing'} does not exist"
    # nothing was answered: not even the ready line
    assert out.getvalue() == ""


def test_check_results_converts_and_may_skip_the_id_check():
    assert check_results([("x", 1)], k=1) == [("x", 1.0)]
    assert check_results({"x": 0.5, "y": -0.0}, k=2, known_ids={"x", "y"}) == [("x", 0.5), ("y", -0.0)]
    assert check_results([], k=0) == []
    with pytest.raises(BackendError, match="not a chunk id"):
        check_results([("x", 1)], k=1, known_ids=set())
    # the largest float32 and what rounds down to it are finite; what rounds up is not
    assert check_results([("x", 3.4028235677973362e38)], k=1)
    with pytest.raises(BackendError, match="infinite as float32"):
        check_results([("x", -3.4028235677973366e38)], k=1)


def test_help_documents_every_argument_of_serve():
    doc = serve.__doc__
    for arg in ("search", "setup", "side", "name", "export", "vector_column", "stdin", "stdout"):
        assert re.search(rf"^\s+{arg}: ", doc, re.M), f"serve's docstring does not document {arg}"


# --- as a process, as the harness starts it ---------------------------------------------------

ECHO_BACKEND = """
import sys
from hopbench.backend import serve

def search(query_id, text, vector, k):
    print("debugging", query_id)            # must not reach the protocol
    if text == "boom":
        raise ZeroDivisionError("division by zero")
    hits = [(cid, float(len(text) - n)) for n, cid in enumerate(sys.argv[1:])]
    return hits[:k]

serve(search)
"""


def test_a_process_answers_the_protocol_and_prints_go_to_stderr(tmp_path, export):
    script = tmp_path / "echo_backend.py"
    script.write_text(ECHO_BACKEND)
    status, lines, err = run_backend(script, export, "lexical",
                                     [request("q1", "abcd", k=2), request("q2", "ab", k=5)], "c1", "c3")
    assert status == 0, err
    assert lines == [
        '{"ready": true}',
        '{"query_id": "q1", "results": [{"id": "c1", "score": 4.0}, {"id": "c3", "score": 3.0}]}',
        '{"query_id": "q2", "results": [{"id": "c1", "score": 2.0}, {"id": "c3", "score": 1.0}]}',
    ]
    assert "debugging q1" in err and "debugging q2" in err


def test_a_process_that_fails_exits_1_with_the_query_named_last(tmp_path, export):
    script = tmp_path / "echo_backend.py"
    script.write_text(ECHO_BACKEND)
    status, lines, err = run_backend(script, export, "lexical",
                                     [request("q1", "abcd"), request("q2", "boom"), request("q3")], "c1")
    assert status == 1
    assert lines == ['{"ready": true}', '{"query_id": "q1", "results": [{"id": "c1", "score": 4.0}]}']
    assert err.rstrip("\n").splitlines()[-1] == \
        "echo_backend: query `q2`: search raised ZeroDivisionError: division by zero"
    status, lines, err = run_backend(script, export, "lexical", [request("q1", "abcd")], "c1", "c1")
    assert status == 1
    assert err.rstrip("\n").splitlines()[-1] == \
        "echo_backend: query `q1`: bad answer from search: result 1 names `c1` a second time (first as result 0)"


def readme_examples():
    """The ```python blocks that call serve in the backends' README and the book's chapter."""
    blocks = {}
    for doc in (REPO / "scripts/backends/README.md", REPO / "docs/src/engines.md"):
        for block in re.findall(r"```python\n(.*?)```", doc.read_text(), re.S):
            if "serve(" in block:
                blocks.setdefault(block, []).append(doc.relative_to(REPO))
    return blocks


def test_the_ten_line_example_of_the_docs_runs(tmp_path, export):
    pytest.importorskip("hnswlib")
    blocks = readme_examples()
    assert blocks, "no ```python example calling serve in the README or the book"
    for n, (code, where) in enumerate(blocks.items()):
        script = tmp_path / f"example{n}.py"
        script.write_text(code)
        vec = [0.5, 0.5, 0.5, 0.5]
        status, lines, err = run_backend(script, export, "dense", [request("q1", k=3, vector=vec),
                                                                    request("q2", k=100, vector=vec)])
        assert status == 0, f"{where}: {err}"
        answers = [json.loads(line) for line in lines[1:]]
        assert [len(a["results"]) for a in answers] == [3, len(CHUNKS)], where
        # HNSW over six points is exact: the best three are the three best cosines
        from conftest import unit
        cos = sorted(((sum(a * b for a, b in zip(unit(i, 0), vec)), cid) for i, cid in enumerate(IDS)),
                     reverse=True)
        got = sorted(answers[0]["results"], key=lambda r: -r["score"])
        assert [r["id"] for r in got] == [cid for _, cid in cos[:3]], where
        assert all(math.isclose(r["score"], c, abs_tol=1e-6) for r, (c, _) in zip(got, cos)), where


@pytest.mark.parametrize("script, modules", [
    ("bm25s_backend.py", ("bm25s", "Stemmer", "regex", "numpy")),
    ("hnswlib_backend.py", ("hnswlib", "numpy")),
])
def test_the_shipped_backends_find_the_package_from_the_source_tree(tmp_path, script, modules):
    for m in modules:
        pytest.importorskip(m)
    env = {k: v for k, v in harness_env(tmp_path, "lexical").items() if k != "PYTHONPATH"}
    p = subprocess.run([sys.executable, str(REPO / "scripts/backends" / script), "--help"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "--export" in p.stdout


def test_the_bm25s_backend_refuses_another_tokenizer_at_start_up(export):
    for m in ("bm25s", "Stemmer", "regex", "numpy"):
        pytest.importorskip(m)
    (export / "bm25-stats.json").write_text(json.dumps({"tokenizer": "whitespace", "params": {"k1": 1, "b": 1}}))
    status, lines, err = run_backend(REPO / "scripts/backends/bm25s_backend.py", export, "lexical", [])
    assert (status, lines) == (1, [])
    assert err.strip() == (f"bm25s_backend: {export.resolve()}/bm25-stats.json: tokenizer 'whitespace', "
                           "this backend reproduces 'lucene-english-v1'")


# --- end to end, a leg over a serve backend ---------------------------------------------------

WORDS_BACKEND = """
import re, sys
from hopbench.backend import serve

def build(corpus):
    words = [set(re.findall(r"\\w+", t.lower())) for t in corpus.texts]
    fail_on = sys.argv[1] if len(sys.argv) > 1 else None
    def search(query_id, text, vector, k):
        if query_id == fail_on:
            raise ValueError(f"refusing {query_id}")
        q = set(re.findall(r"\\w+", text.lower()))
        scored = [(corpus.ids[i], float(len(q & w))) for i, w in enumerate(words) if q & w]
        return sorted(scored, key=lambda s: (-s[1], s[0]))[:k]
    return search

serve(setup=build, side="lexical")
"""


def test_a_leg_over_a_serve_backend_runs_end_to_end(tmp_path):
    binary = hopbench_binary()
    if binary is None:
        pytest.skip("no hopbench binary: set HOPBENCH_BIN, or build one (cargo build) into "
                    "$CARGO_TARGET_DIR/debug or target/debug")
    pytest.importorskip("pyarrow")
    backend = tmp_path / "words_backend.py"
    backend.write_text(WORDS_BACKEND)
    ext = "{engine: external, command: [%s, '%s'%s], timeout_ms: 30000}"
    (tmp_path / "campaign.yaml").write_text(textwrap.dedent(f"""\
        results: results
        model: hashing-384
        recall_k: [1, 2, 5, 10, 20]
        stats: {{resamples: 200, permutations: 500, seed: 7}}
        datasets:
          synthetic: {{format: synthetic}}
        legs:
          words: {{kind: lexical, lexical: {ext % (sys.executable, backend, '')}}}
          words_rescue: {{kind: graph_rescue, lexical: {ext % (sys.executable, backend, '')}}}
          refuses: {{kind: lexical, lexical: {ext % (sys.executable, backend, ", q0003")}}}
        """))
    (tmp_path / "data").mkdir()
    env = harness_env(tmp_path, "lexical")
    for k in ("HOPBENCH_EXPORT", "HOPBENCH_SIDE", "HOPBENCH_VECTORS"):
        env.pop(k, None)
    p = subprocess.run([str(binary), "run-matrix", "--threads", "1", "--quiet", "--data-dir", "data",
                        "--no-curves", "--no-report"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr

    def summary(leg):
        return json.loads((tmp_path / "results/cells/synthetic" / f"{leg}.summary.json").read_text())

    for leg in ("words", "words_rescue"):
        s = summary(leg)
        assert s["status"] == "ok", s
        assert s["metrics"]["recall@10"] > 0, s["metrics"]
    s = summary("refuses")
    assert s["status"] == "error" and s["metrics"] == {}, s
    reason = s["reason"]
    assert reason.startswith(f"external lexical engine `{sys.executable} {backend} q0003`"), reason
    assert ", request for query `q0003`: the process exited (exit status: 1) before answering" in reason, reason
    assert reason.endswith("words_backend: query `q0003`: search raised ValueError: refusing q0003"), reason
