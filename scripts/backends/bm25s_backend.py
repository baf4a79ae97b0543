#!/usr/bin/env python3
"""An external lexical engine for hopbench: BM25 over an export's corpus with bm25s, speaking the
JSON-lines protocol of legs/src/engine/external.rs through hopbench.backend.serve.

It reproduces hopbench's built-in BM25 (datasets/src/lexical.rs) ranking for ranking:
- the analyzer: lowercase, runs of two or more Unicode alphanumerics or `_` (Rust's
  `char::is_alphanumeric`: the Alphabetic and Numeric properties, so Devanagari or Thai vowel
  signs stay inside their word, which Python's `\\w` would split on), the 33-word Lucene English
  stop set, then the Snowball English stemmer as rust-stemmers has it. PyStemmer 3 ships Snowball
  3, whose English stemmer changed ("international" -> "internat", hopbench "intern"), hence the
  pin to PyStemmer 2.2;
- Lucene BM25 with k1 and b from the export's own `bm25-stats.json`, as the f32 values hopbench
  holds; impacts computed in float64 and rounded to float32, summed in float32 in query-token
  order (a repeated query term counts twice), as hopbench does;
- only chunks with a positive score, best first, ties on ascending chunk id (the corpus is
  sorted by id).
The text indexed is the export's (header, joiner, body: Corpus.texts), as hopbench indexes it.
Measured: identical rankings (top 100) to the built-in `lexical` leg on every query of
synthetic, musique-train100 and hotpotqa-train100.

usage, in a campaign leg:
    lexical_bm25s: {kind: lexical, lexical: {engine: external,
                    command: [python3, scripts/backends/bm25s_backend.py]}}
The export directory comes from HOPBENCH_EXPORT (set by hopbench); `--export DIR` overrides it
for a run by hand.

needs: pip install bm25s==0.3.16 PyStemmer==2.2.0.3 regex==2026.5.9 pyarrow==26.0.1
"""
import argparse
import pathlib
import sys

import bm25s
import numpy as np
import regex
import Stemmer

try:
    from hopbench.backend import BackendError, serve
except ImportError:  # run from the source tree, the package not installed
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "python"))
    from hopbench.backend import BackendError, serve

# hopbench's datasets/src/lexical.rs STOPWORDS_EN (the Lucene English set)
STOPWORDS = frozenset(["a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
                       "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there",
                       "these", "they", "this", "to", "was", "will", "with"])
# the analyzer the export's BM25 statistics name (anything else would not be comparable)
TOKENIZER = "lucene-english-v1"
WORD = regex.compile(r"[\p{Alphabetic}\p{N}_]{2,}")


class Analyzer:
    def __init__(self):
        self.stemmer = Stemmer.Stemmer("english")

    def tokens(self, text):
        return [self.stemmer.stemWord(w) for w in WORD.findall(text.lower()) if w not in STOPWORDS]


def build(corpus):
    """The BM25 index over the export's corpus, and the search function that answers from it."""
    stats = corpus.bm25_stats
    if stats.get("tokenizer") != TOKENIZER:
        raise BackendError(f"{corpus.export}/bm25-stats.json: tokenizer {stats.get('tokenizer')!r}, "
                           f"this backend reproduces {TOKENIZER!r}")
    # hopbench holds k1 and b as f32
    k1, b = (float(np.float32(stats["params"][p])) for p in ("k1", "b"))
    analyzer = Analyzer()
    retriever = bm25s.BM25(method="lucene", k1=k1, b=b, dtype="float64")
    retriever.index([analyzer.tokens(t) for t in corpus.texts], show_progress=False)
    # impacts rounded to float32 once, then summed in float32
    retriever.scores["data"] = retriever.scores["data"].astype(np.float32)
    retriever.dtype = "float32"
    vocab = retriever.vocab_dict

    def search(query_id, text, vector, k):
        # unknown terms score nothing; a repeated term counts twice, as in hopbench
        known = [t for t in analyzer.tokens(text) if t in vocab]
        if not known:
            return []
        scores = np.asarray(retriever.get_scores(known))
        hit = np.flatnonzero(scores > 0)
        # score descending, ties on ascending chunk index (= ascending chunk id)
        best = hit[np.lexsort((hit, -scores[hit]))][:k]
        return [(corpus.ids[i], scores[i]) for i in best]

    return search


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--export", help="the export directory (default: $HOPBENCH_EXPORT)")
    args = ap.parse_args()
    serve(setup=build, side="lexical", export=args.export)


if __name__ == "__main__":
    main()
