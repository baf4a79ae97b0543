"""A dict run is scored in place (py/src/dict_run.rs): its values and counts must be those of
the same run read as records, on every shape the in-place path takes (runs best first, shuffled,
tied, numpy scores, non-ASCII ids) and every one it hands back (int scores, `str` subclasses)."""

import random

import pytest

from conftest import native

MEASURES = ["nDCG@10", "nDCG", "AP", "P@5", "R@20", "RR", "Rprec", "Bpref", "Judged@10",
            "NumRet", "NumRelRet"]
COUNTS = ["records", "queries", "queries_absent", "queries_without_relevant", "ties_broken",
          "dropped_unknown_queries"]


class Id(str):
    """A `str` subclass: the in-place path leaves such keys to the records' reading."""


def random_case(seed):
    """A dict run and dict qrels in one of several shapes, chosen by the seed."""
    rng = random.Random(seed)
    shape = seed % 6
    run, qrels = {}, {}
    for q in range(40):
        qid = f"q{q:02d}"
        depth = rng.randrange(0, 25)
        docs = rng.sample([f"d{i}" if i % 7 else f"é{i}ü" for i in range(60)], depth)
        if shape == 0:  # best first, every score distinct: no sort
            scores = sorted(rng.sample(range(1000), depth), reverse=True)
        elif shape == 1:  # distinct, any order
            scores = rng.sample(range(1000), depth)
        else:  # few values: ties, -0.0 among them
            scores = [rng.choice([3.0, 2.5, 0.0, -0.0, -1.0]) for _ in range(depth)]
        values = [float(s) / 7 for s in scores]
        if shape == 3:
            import numpy as np

            values = [np.float64(v) for v in values]
        docs_of_q = dict(zip(docs, values))
        if shape == 4 and q == 39:  # an int score: the whole run is read as records
            docs_of_q = {**docs_of_q, "dint": 2}
        if shape == 5 and q == 39:  # a str subclass key: read as records
            docs_of_q = {**docs_of_q, Id("dsub"): 0.5}
        if q % 13 != 5:  # some judged queries are absent; a few have no document
            run[qid] = docs_of_q
        judged_docs = rng.sample(docs, min(len(docs), rng.randrange(0, 5)))
        judged = {d: rng.randrange(-1, 5) for d in judged_docs}
        judged[f"never{q}"] = rng.randrange(0, 3)  # judged, never retrieved
        qrels[qid] = judged
    run["unjudged"] = {"d1": 1.0, "d2": 0.5}
    return run, qrels


def records(run):
    """The same run as an iterable of records: read as columns, never in place."""
    return [{"query_id": str(q), "doc_id": str(d), "score": s}
            for q, docs in run.items() for d, s in docs.items()]


def scored(run, qrels, **kw):
    import hopbench

    pq = hopbench.evaluate(run, qrels, MEASURES, per_query=True, ci=False,
                           unknown_queries="drop", **kw)
    values = list(zip(pq["query_id"], pq["measure"], pq["value"]))
    return values, dict(pq.attrs)


def same(a, b):
    """Equal value for value; undefined values (NaN) equal each other."""
    return len(a) == len(b) and all(
        x[:2] == y[:2] and (x[2] == y[2] or (x[2] != x[2] and y[2] != y[2])) for x, y in zip(a, b))


def test_in_place_equals_the_records_reading():
    native()
    for seed in range(36):
        run, qrels = random_case(seed)
        for ties in ("id", "trec_eval"):
            for level in (1, 2):
                kw = {"ties": ties, "relevance_level": level}
                (a, ca), (b, cb) = scored(run, qrels, **kw), scored(records(run), qrels, **kw)
                assert same(a, b), (seed, ties, level)
                assert [ca[k] for k in COUNTS] == [cb[k] for k in COUNTS], (seed, ties, level)
                # the dict was read in place where it is of the plain case (shapes 4 and 5
                # are not), the records never
                assert ca["run_in_place"] == (seed % 6 < 4) and not cb["run_in_place"]
                assert ca["qrels_in_place"] and cb["qrels_in_place"]
                if seed % 6 >= 2:  # the tie branch was taken
                    assert ca["ties_broken"] > 0


def test_errors_in_a_dict_are_named_as_before():
    native()
    import hopbench

    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
    cases = [
        ({"q1": {"d1": 1.0}, "q2": {"d2": float("inf")}}, '$["q2"]["d2"]'),
        ({"q1": {"d1": 1.0}, "q2": {"d2": True}}, '$["q2"]["d2"]'),
        ({"q1": {"d1": 1.0}, "q2": {"\ud800": 1.0}}, "not valid text"),
        ({"q1": {"d1": 1.0}, "q2": ["d2"]}, "not a dict of documents"),
        ({"q1": {"d1": 1.0}, 3: {"d2": 1.0}}, "not str"),
        ({"q1": {"d1": 1.0}, "q3": {"d2": 1.0}}, '$["q3"]["d2"]'),
    ]
    for run, text in cases:
        with pytest.raises(hopbench.InputError) as e:
            hopbench.evaluate(run, qrels, "AP")
        assert text in str(e.value), (run, str(e.value))
    # an unknown query without records is no error, as a file without its lines
    out = hopbench.evaluate({"q1": {"d1": 1.0}, "q3": {}}, qrels, "AP", ci=False)
    assert out.attrs["queries_absent"] == 1 and out.attrs["records"] == 1
