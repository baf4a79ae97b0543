#!/usr/bin/env python3
"""Turn a multi-hop QA set (HippoRAG's HotpotQA or MuSiQue files) into a `documents` dataset.

Usage:
    scripts/documents_from_multihop.py hotpotqa DATA_DIR/hotpotqa-train100 OUT_DIR [--limit N]
    scripts/documents_from_multihop.py musique  DATA_DIR/musique-train100  OUT_DIR [--limit N]

Writes OUT_DIR/documents.jsonl, queries.jsonl, spans.jsonl (span-level gold) and qrels.txt
(document-level gold, TREC style with tab-separated columns, since titles hold spaces), the four
files of hopbench's `documents` format. OUT_DIR is
created and must not be inside the hopbench repository (the data stays where the user keeps
it).

* hotpotqa: one document per title of `hotpotqa_train_corpus.json` (its sentences joined as
  published, i.e. with their leading spaces); a question's gold spans are its supporting
  *sentences* (`supporting_facts = [[title, sentence_index], ...]`), each span trimmed of white
  space. Facts whose sentence index is past the title's sentences (a known HotpotQA quirk) are
  skipped and counted.
* musique: one document per title of `musique_train_corpus.json`, its paragraphs joined with a
  blank line in corpus order; a question's gold spans are its supporting paragraphs
  (`is_supporting`), matched to the corpus on (title, text).

Offsets are Unicode code points of the document text (Python string indices), what the format
expects. Every document of the corpus is kept (the other questions' paragraphs are the
distractors); `--limit N` keeps the first N questions. Standard library only (Python >= 3.8).
"""

import argparse
import json
import os
import sys


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def trimmed(text, start, end):
    """[start, end) of text without leading and trailing white space."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def from_hotpotqa(src, limit):
    corpus = json.load(open(os.path.join(src, "hotpotqa_train_corpus.json"), encoding="utf-8"))
    questions = json.load(open(os.path.join(src, "hotpotqa_train.json"), encoding="utf-8"))
    docs, offsets = [], {}
    for title, sentences in corpus.items():
        text, starts = "", []
        for s in sentences:
            starts.append((len(text), len(text) + len(s)))
            text += s
        docs.append({"id": title, "title": title, "text": text})
        offsets[title] = (text, starts)
    queries, spans, qrels, skipped = [], [], [], 0
    for q in questions[:limit]:
        queries.append({"id": q["_id"], "text": q["question"]})
        seen = set()
        for title, idx in q["supporting_facts"]:
            if title not in offsets or idx >= len(offsets[title][1]):
                skipped += 1
                continue
            text, starts = offsets[title]
            a, b = trimmed(text, *starts[idx])
            if a < b and (title, a, b) not in seen:
                seen.add((title, a, b))
                spans.append({"query_id": q["_id"], "doc_id": title, "char_start": a, "char_end": b})
        for title in dict.fromkeys(t for t, _ in q["supporting_facts"] if t in offsets):
            qrels.append((q["_id"], title))
    return docs, queries, spans, qrels, skipped


def from_musique(src, limit):
    corpus = json.load(open(os.path.join(src, "musique_train_corpus.json"), encoding="utf-8"))
    questions = json.load(open(os.path.join(src, "musique_train.json"), encoding="utf-8"))
    by_title, order = {}, []
    for p in corpus:
        if p["title"] not in by_title:
            by_title[p["title"]] = []
            order.append(p["title"])
        by_title[p["title"]].append(p["text"])
    docs, where = [], {}
    for title in order:
        text = ""
        for para in by_title[title]:
            if text:
                text += "\n\n"
            if (title, para) not in where:
                where[(title, para)] = trimmed(text + para, len(text), len(text) + len(para))
            text += para
        docs.append({"id": title, "title": title, "text": text})
    queries, spans, qrels, skipped = [], [], [], 0
    for q in questions[:limit]:
        queries.append({"id": q["id"], "text": q["question"]})
        titles = []
        for p in q["paragraphs"]:
            if not p["is_supporting"]:
                continue
            key = (p["title"], p["paragraph_text"])
            if key not in where:
                skipped += 1
                continue
            a, b = where[key]
            spans.append({"query_id": q["id"], "doc_id": p["title"], "char_start": a, "char_end": b})
            if p["title"] not in titles:
                titles.append(p["title"])
        qrels.extend((q["id"], t) for t in titles)
    return docs, queries, spans, qrels, skipped


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("format", choices=["hotpotqa", "musique"])
    ap.add_argument("src", help="the dataset directory (e.g. ../shared/datasets/hotpotqa-train100)")
    ap.add_argument("out", help="where to write the documents set (created)")
    ap.add_argument("--limit", type=int, default=None, help="keep the first N questions")
    a = ap.parse_args()
    repo = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
    out = os.path.realpath(a.out)
    if out == repo or out.startswith(repo + os.sep):
        sys.exit(f"{a.out}: inside the repository; write the documents set elsewhere")
    docs, queries, spans, qrels, skipped = (from_hotpotqa if a.format == "hotpotqa" else from_musique)(
        a.src, a.limit
    )
    os.makedirs(out, exist_ok=True)
    write_jsonl(os.path.join(out, "documents.jsonl"), docs)
    write_jsonl(os.path.join(out, "queries.jsonl"), queries)
    write_jsonl(os.path.join(out, "spans.jsonl"), spans)
    # tab-separated: titles hold spaces, and a line with a tab is split on tabs only
    with open(os.path.join(out, "qrels.txt"), "w", encoding="utf-8") as f:
        f.write("".join(f"{q}\t0\t{d}\t1\n" for q, d in qrels))
    print(
        f"{out}: {len(docs)} documents, {len(queries)} queries, {len(spans)} gold spans, "
        f"{len(qrels)} document judgements ({skipped} gold facts skipped)"
    )


if __name__ == "__main__":
    main()
