#!/usr/bin/env python3
"""Link and anchor check of the Markdown: README.md, CONTRIBUTING.md and every .md under docs/.

Checks, for every relative Markdown link `[text](path#anchor)`, `[text](#anchor)`, image
`![alt](path)` and reference definition `[id]: path` outside code blocks and code spans:

- the file (or directory) exists, relative to the linking file;
- the anchor is a heading of the target (.md targets only), under the GitHub / mdBook rule:
  the heading's text lowercased, everything but letters, digits, `-` and `_` dropped, each
  space a `-`; the second heading with the same id gets `-1`, the third `-2`, ...
  (`{#id}` after a heading sets its id, as mdBook allows);
- a link from inside the book's sources does not leave them (it would break in the built book).

And for the book (`docs/book.toml`, its `src`, default `src`): every chapter that
`SUMMARY.md` names exists, and every .md file under the sources is in `SUMMARY.md`.

http(s), mailto and other absolute URLs are not fetched. Prints one line per problem,
`file:line: ...`, then a one-line summary; exits 1 when there is a problem, 0 otherwise.

    scripts/docs_check.py              # the repository this script is in
    scripts/docs_check.py --root DIR   # another tree
    scripts/docs_check.py --self-test  # proves the check can fail: a tree with two faults
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import tomllib
import unicodedata
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
HEADING_ID = re.compile(r"\s*\{#([^}\s]+)[^}]*\}\s*$")
# [text](target "title") and ![alt](target); the text may hold one level of brackets
INLINE_LINK = re.compile(
    r"(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(<[^>]*>|[^\s)]+)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)"
)
REF_DEF = re.compile(r"^ {0,3}\[([^\]]+)\]:\s*(<[^>]*>|\S+)")
# a code span may wrap lines, never across a blank line; it closes on a run of exactly its
# opening's length
CODE_SPAN = re.compile(r"(`+)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.S)
HTML_ANCHOR = re.compile(r"<a\s+[^>]*(?:name|id)\s*=\s*[\"']([^\"']+)[\"']", re.I)
SUMMARY_LINK = re.compile(r"^\s*(?:[-*+]\s+)?\[([^\]]*)\]\(([^)]*)\)\s*$")


@dataclass
class Stats:
    files: int = 0
    links: int = 0
    anchors: int = 0
    images: int = 0
    chapters: int = 0
    problems: list[str] = field(default_factory=list)

    def problem(self, path: Path, root: Path, line: int, what: str) -> None:
        self.problems.append(f"{rel(path, root)}:{line}: {what}")


def rel(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def slug(text: str) -> str:
    """A heading's anchor, as GitHub and mdBook make it from the heading's rendered text."""
    text = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", text)  # images: their alt text
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "")
    out = []
    for ch in text.strip().lower():
        if ch in "-_" or unicodedata.category(ch)[0] in "LN":
            out.append(ch)
        elif ch.isspace():
            out.append("-")
        # every other character (punctuation, symbols, emphasis markers) is dropped
    return "".join(out)


def fenced_lines_blanked(text: str) -> list[str]:
    """The file's lines, with every line of a fenced code block (fences too) made empty."""
    out, fence = [], None
    for line in text.split("\n"):
        m = FENCE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
                out.append("")
            else:
                out.append(line)
            continue
        run = m.group(1) if m else ""
        if run and run[0] == fence[0] and len(run) >= len(fence) and not line.strip()[len(run):].strip():
            fence = None
        out.append("")
    return out


def prose(text: str) -> str:
    """The text outside code: fenced blocks and code spans (which may wrap lines within a
    paragraph) blanked, every newline kept, so offsets still give line numbers."""
    text = "\n".join(fenced_lines_blanked(text))
    return CODE_SPAN.sub(lambda s: re.sub(r"[^\n]", " ", s.group(0)), text)


def anchors_of(path: Path, cache: dict[Path, set[str]]) -> set[str]:
    """Every anchor of a Markdown file: its headings' ids (duplicates numbered) and HTML anchors."""
    key = path.resolve()
    if key in cache:
        return cache[key]
    seen: dict[str, int] = {}
    ids: set[str] = set()
    for line in fenced_lines_blanked(path.read_text(encoding="utf-8")):
        for a in HTML_ANCHOR.findall(line):
            ids.add(a)
        h = HEADING.match(line)
        if not h:
            continue
        title = h.group(2) or ""
        explicit = HEADING_ID.search(title)
        if explicit:
            ids.add(explicit.group(1))
            continue
        base = slug(title)
        n = seen.get(base, 0)
        seen[base] = n + 1
        ids.add(base if n == 0 else f"{base}-{n}")
    cache[key] = ids
    return ids


def is_external(target: str) -> bool:
    return bool(re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target)) or target.startswith("//")


def book_src(root: Path) -> Path | None:
    toml = root / "docs" / "book.toml"
    if not toml.is_file():
        return None
    with toml.open("rb") as f:
        conf = tomllib.load(f)
    return (root / "docs" / conf.get("book", {}).get("src", "src")).resolve()


def markdown_files(root: Path) -> list[Path]:
    files = [root / n for n in ("README.md", "CONTRIBUTING.md") if (root / n).is_file()]
    docs = root / "docs"
    if docs.is_dir():
        for dirpath, dirnames, filenames in os.walk(docs):
            dirnames[:] = sorted(d for d in dirnames if d != "book" and not d.startswith("."))
            files += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(".md")]
    return files


def check_link(src: Path, no: int, target: str, image: bool, root: Path, book: Path | None,
               cache: dict, stats: Stats) -> None:
    if target.startswith("<") and target.endswith(">"):
        target = target[1:-1]
    if is_external(target):
        return
    if image:
        stats.images += 1
    else:
        stats.links += 1
    path_part, _, anchor = target.partition("#")
    path_part = urllib.parse.unquote(path_part.split("?", 1)[0])
    dest = (src.parent / path_part).resolve() if path_part else src.resolve()
    if path_part and not dest.exists():
        stats.problem(src, root, no, f"{'image' if image else 'link'} `{target}`: no file {rel(dest, root)}")
        return
    if book is not None and path_part:
        inside = lambda p: p == book or book in p.parents
        if inside(src.resolve()) and not inside(dest):
            stats.problem(src, root, no, f"link `{target}` leaves the book's sources ({rel(book, root)}): "
                                         "it would be broken in the built book")
    if anchor:
        stats.anchors += 1
        if dest.is_file() and dest.suffix == ".md":
            if urllib.parse.unquote(anchor) not in anchors_of(dest, cache):
                stats.problem(src, root, no, f"link `{target}`: no heading with the anchor "
                                             f"#{anchor} in {rel(dest, root)}")


def check_summary(book: Path, root: Path, stats: Stats) -> None:
    summary = book / "SUMMARY.md"
    if not summary.is_file():
        stats.problem(summary, root, 0, "the book has no SUMMARY.md")
        return
    listed: set[Path] = set()
    for no, line in enumerate(prose(summary.read_text(encoding="utf-8")).split("\n"), 1):
        m = SUMMARY_LINK.match(line)
        if not m:
            continue
        stats.chapters += 1
        target = m.group(2).strip()
        if not target:
            stats.problem(summary, root, no, f"chapter `{m.group(1)}` is a draft (no file)")
            continue
        dest = (book / urllib.parse.unquote(target.split("#", 1)[0])).resolve()
        listed.add(dest)
        if not dest.is_file():
            stats.problem(summary, root, no, f"chapter `{m.group(1)}`: no file {rel(dest, root)}")
    for dirpath, dirnames, filenames in os.walk(book):
        dirnames.sort()
        for f in sorted(filenames):
            p = (Path(dirpath) / f).resolve()
            if f.endswith(".md") and p != summary.resolve() and p not in listed:
                stats.problem(p, root, 1, "not in SUMMARY.md: the built book would leave it out")


def check(root: Path) -> Stats:
    root = root.resolve()
    stats = Stats()
    cache: dict[Path, set[str]] = {}
    book = book_src(root)
    for src in markdown_files(root):
        stats.files += 1
        text = prose(src.read_text(encoding="utf-8"))
        for m in INLINE_LINK.finditer(text):
            no = text.count("\n", 0, m.start()) + 1
            check_link(src, no, m.group(3), m.group(1) == "!", root, book, cache, stats)
        for no, line in enumerate(text.split("\n"), 1):
            d = REF_DEF.match(line)
            if d:
                check_link(src, no, d.group(2), False, root, book, cache, stats)
    if book is not None:
        check_summary(book, root, stats)
    return stats


def summary_line(stats: Stats) -> str:
    return (f"docs_check: {stats.files} files, {stats.links} links ({stats.anchors} with an anchor), "
            f"{stats.images} images, {stats.chapters} chapters: {len(stats.problems)} problems")


def self_test() -> int:
    """A tiny tree with one broken link, one broken anchor and good links: exactly two problems."""
    assert slug("Scale: `bench scale`") == "scale-bench-scale"
    assert slug("What hopbench refuses and why") == "what-hopbench-refuses-and-why"
    assert slug("Conversations (CRP-SPEC-028)") == "conversations-crp-spec-028"
    assert slug("The embedder beside sentence-transformers") == "the-embedder-beside-sentence-transformers"
    with tempfile.TemporaryDirectory(prefix="docs-check-") as tmp:
        root = Path(tmp)
        (root / "docs" / "src").mkdir(parents=True)
        (root / "docs" / "book.toml").write_text('[book]\ntitle = "t"\nsrc = "src"\n')
        (root / "docs" / "src" / "SUMMARY.md").write_text("# Summary\n\n- [A](a.md)\n")
        (root / "docs" / "src" / "a.md").write_text(
            "# A\n\n## Real heading\n\ntext\n\n## Real heading\n\n"
            "```sh\n# not a heading\n[not a link](nowhere.md)\n```\n\n"
            "Back to [the top](#a) and `[code](nowhere.md)`.\n"
        )
        (root / "README.md").write_text(
            "# Readme\n\n"
            "A [good link](docs/src/a.md#real-heading), its twin [too](docs/src/a.md#real-heading-1),\n"
            "a [broken link](docs/src/missing.md),\n"
            "a [broken anchor](docs/src/a.md#no-such-heading), [a web page](https://example.org/x#y).\n"
        )
        stats = check(root)
        expected = [
            "README.md:4: link `docs/src/missing.md`: no file docs/src/missing.md",
            "README.md:5: link `docs/src/a.md#no-such-heading`: no heading with the anchor "
            "#no-such-heading in docs/src/a.md",
        ]
        if stats.problems != expected:
            print("docs_check --self-test: FAILED", file=sys.stderr)
            print("expected:\n  " + "\n  ".join(expected), file=sys.stderr)
            print("found:\n  " + "\n  ".join(stats.problems or ["(none)"]), file=sys.stderr)
            return 1
        # README's four, a.md's one, SUMMARY.md's one; none in code, the web page not counted
        if stats.links != 6 or stats.chapters != 1:
            print(f"docs_check --self-test: FAILED: counted {stats.links} links, "
                  f"{stats.chapters} chapters (expected 6, 1)", file=sys.stderr)
            return 1
    print("docs_check --self-test: ok (found exactly the broken link and the broken anchor)")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                    help="the repository to check (default: the one this script is in)")
    ap.add_argument("--self-test", action="store_true",
                    help="check a generated tree with two known faults and assert both are found")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    stats = check(args.root)
    for p in stats.problems:
        print(p)
    print(summary_line(stats))
    return 1 if stats.problems else 0


if __name__ == "__main__":
    sys.exit(main())
