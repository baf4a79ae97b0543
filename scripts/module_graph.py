#!/usr/bin/env python3
"""Import circles, folder layers, function lengths and file sizes of the workspace's crates (a
design check, not a test).

Usage:
    scripts/module_graph.py [--edges] [--descendant-edges] [CRATE_SRC ...]
                                          # default: datasets/src legs/src harness/src (py/src too
                                          # when given)

    --edges             under each cycle, every edge between its files with the line that makes
                        it (`file:line: path as written  -> file`): the lines to change.
    --descendant-edges  count a file's paths into its own descendants too (see below).

Three checks, each with one line per thing to mend (file and line):

* import cycles between files: `cycle in ...` (their edges with `--edges`);
* arrows back between the folders of a crate with a layer order (`LAYERS`): `arrow back in ...`,
  then every path that makes it, indented; a folder the order does not place:
  `layers of ...: folder X ... is not placed in LAYERS`;
* functions longer than `FN_LINES` lines: `long function: file:line: name is N lines (at most M)`.

Exit 1 when any of them finds something, else 0; one summary line per crate, then the five largest
files. `find_cycles(src)` / `analyse(src)`, `layer_violations(src, order)` and
`long_functions(src, limit)` are the same checks as functions (scripts/test_module_graph.py).

The files. The module tree of a crate is followed from its roots (`lib.rs`, `main.rs`,
`bin/*.rs`) through its `mod x;` declarations (`x.rs`, `x/mod.rs`, children of a non-`mod.rs`
file `a.rs` in `a/`, `#[path = ".."]`, inline `mod x { .. }`). A file under the crate's directory
that no declaration reaches (a module declared by a macro: `kinds!` in legs/src/kinds/mod.rs,
`formats!` in datasets/src/formats/mod.rs) is read too, with the module path of its place, unless
it is in a module declared under `#[cfg(test)]`.

The code. In each file comments (doc comments included) and string, byte-string, raw-string and
character literals are blanked first; then every `#[cfg(test)]` item (also `cfg(all(test, ..))`;
not `cfg(any(test, ..))` nor `cfg(not(test))`): a `mod tests { .. }` block (brace-matched), a `fn`,
`impl`, `use`, a struct field, a statement, and a `mod tests;` declaration, whose file (and
everything under it) is then not read. `#![cfg(test)]` at the top of a file drops the file. Every
line after such an item is read. What remains gives the paths:

* every `use` statement (`pub use` too, on one line or many), groups expanded, nested ones
  included: `use crate::{a, b::{c, d}}`, `use super::{x, y}`, `use super::page::{self, esc}`,
  `use super::*` (the parent's file);
* every path written in code, not only in `use` lines: `crate::a::f(..)`, `super::Job` in a type,
  `super::super::x`, `self::x`, `$crate::x` (in a `macro_rules!` body: the defining file's path);
* a path whose first segment is a child module of the current module (`dataset::Job` in the
  `mod.rs` that declares `mod dataset;`): in the 2018 edition it is `self::dataset::Job`.

The edges. A path is made absolute (`super` counted from the current module, inline modules
included) and lands in the file of its deepest prefix that is a module: `crate::a::b::C` is
`a/b.rs` when `b` is a module, `a.rs` or `a/mod.rs` when `b` is an item (re-exports are not
followed). As in the first version of this check, a path to the crate root (`lib.rs`, `main.rs`:
they re-export) is no edge, nor is a path to the file itself, and a path from a child to its
parent's item (`super::ReportOptions`, `crate::commands::Command` -> `mod.rs`) is an edge.
A path from a file into its own descendants (`mod.rs` -> `mod.rs`'s `dataset.rs`, the `pub use`
of a facade) is not: a `mod.rs` contains its children, it cannot import them "back", and with both
directions every facade `mod.rs` whose children use its items would be a cycle (11 on the tree
this was written against, instead of 2; `--descendant-edges` shows them). A `mod child;`
declaration is never an edge. Paths into other crates (`hopbench_datasets::..`, `std::..`) are
not edges of this graph.

A cycle is a strongly connected component of two or more files; its line is a closed walk through
all of its files (a file appears again when the walk passes it twice).

The layers. A crate's top-level folders (the first component of a file's path under `src`:
`harness/src/pipeline/data.rs` is in `pipeline`) are meant to follow its data flow, from what a
user runs (the harness's `commands`) down to what everything else uses (its `measure`). `LAYERS`
lists them top first, for the crates that declare one (matched by the end of the resolved src
path). Every edge above between two different folders must
point down the list: a folder then builds and reads without anything above it, and no two folders
can lean on each other through different files (a circle of folders that the circle check of
files cannot see). An arrow to the same or a higher position is an arrow back, printed with every
path that makes it; a folder the list does not place is an error of its own (its arrows are not
judged). Files directly in `src` (`lib.rs`, `main.rs`) and under `bin/` are the root, above every
folder: their paths, and paths to them, are not judged. Test code is not read (see above), so a
test may reach anywhere.

The functions. No function outside test code may be longer than `FN_LINES` (120) lines, from the
line of its `fn` to the line of its closing brace (attributes and doc comments before it not
counted): a longer one no longer fits a screen and does several things, which want names of their
own. Every `fn` item with a body in the code read above counts (free functions, methods, trait
default methods, nested functions: each on its own, the outer one keeping the lines of those
inside it); a declaration without a body (`fn x(&self);`) is none, nor a `fn(u32) -> u32` type,
nor a `fn` in a comment, a literal or a test item.
"""

import re
import sys
from collections import deque
from pathlib import Path, PurePosixPath

# The folders of a crate, top first: every path between two of them points down this list (see
# "The layers" above). Keyed by the end of the crate's src path.
LAYERS = {"harness/src": ["commands", "bench", "report", "cluster", "analysis", "pipeline", "store",
                          "measure"]}

# The longest a function outside tests may be, in lines (see "The functions" above).
FN_LINES = 120

# ---------------------------------------------------------------------------------------------
# Blanking: comments, literals, #[cfg(test)] items. Lengths and newlines are kept, so an offset of
# the blanked text is the same offset (and line) of the source.
# ---------------------------------------------------------------------------------------------

_IDENT_CHAR = re.compile(r"[A-Za-z0-9_]")
_RAW_STR = re.compile(r'(?:b|c)?r(#*)"')


def _ident_before(text, i):
    return i > 0 and _IDENT_CHAR.match(text[i - 1]) is not None


def blank_comments_and_literals(text: str) -> str:
    """`text` with every comment and string/char literal replaced by spaces (newlines kept)."""
    out = list(text)
    n = len(text)

    def blank(a, b):
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    i = 0
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
            continue
        if c == "/" and text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
            continue
        if c in "bcr" and not _ident_before(text, i):
            m = _RAW_STR.match(text, i)
            if m:
                close = '"' + m.group(1)
                j = text.find(close, m.end())
                j = n if j < 0 else j + len(close)
                blank(i, j)
                i = j
                continue
        if c == '"' or (c in "bc" and text.startswith('"', i + 1) and not _ident_before(text, i)):
            j = i + (1 if c == '"' else 2)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            blank(i, j)
            i = j
            continue
        if c == "'" or (c == "b" and text.startswith("'", i + 1) and not _ident_before(text, i)):
            k = i + (1 if c == "'" else 2)
            if k < n and text[k] == "\\":  # '\n', '\'', '\u{..}'
                j = text.find("'", k + 2)
                j = n if j < 0 else j + 1
                blank(i, j)
                i = j
                continue
            if k + 1 < n and text[k + 1] == "'" and text[k] != "\n":  # 'x'
                blank(i, k + 2)
                i = k + 2
                continue
            i = k  # a lifetime or a label: 'a
            continue
        i += 1
    return "".join(out)


def cfg_implies_test(pred: str) -> bool:
    """Whether the `cfg(...)` predicate `pred` (its inside) holds only in test builds."""
    toks = re.findall(r"[A-Za-z_]\w*|[(),=]", pred)
    pos = 0

    def parse():
        nonlocal pos
        name = toks[pos]
        pos += 1
        if pos < len(toks) and toks[pos] == "(":
            pos += 1
            args = []
            while toks[pos] != ")":
                args.append(parse())
                if toks[pos] == ",":
                    pos += 1
            pos += 1
            if name == "all":
                return any(args)
            if name == "any":
                return bool(args) and all(args)
            return False  # not(..): the item is kept
        if pos < len(toks) and toks[pos] == "=":
            pos += 1
            if pos < len(toks) and toks[pos] not in (",", ")"):
                pos += 1
            return False
        return name == "test"

    try:
        result = parse()
        return result and pos == len(toks)
    except IndexError:
        return False


_ATTR = re.compile(r"#\s*(!?)\s*\[")
_WORD = re.compile(r"\s*([A-Za-z_]\w*)")
# after `#[cfg(test)]`: items that end at `;` or at their `{ .. }` body
_ITEM_KW = {"fn", "impl", "mod", "struct", "enum", "union", "trait", "use", "const", "static",
            "type", "let", "crate", "macro_rules"}
# items that end only at `;` (their braces are groups or struct literals)
_SEMI_ONLY = {"use", "const", "static", "type", "let", "crate"}


def _bracket_end(t, i):
    """`t[i]` is an opening bracket; the offset after its matching closer."""
    depth, n = 0, len(t)
    while i < n:
        if t[i] in "([{":
            depth += 1
        elif t[i] in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _item_end(t, i):
    """The end of the item, field, variant or statement that starts at `i` (after its attribute)."""
    n = len(t)
    # further attributes
    while True:
        m = re.compile(r"\s*#\s*\[").match(t, i)
        if not m:
            break
        i = _bracket_end(t, m.end() - 1)
    # visibility and qualifiers, then the keyword (or a field's / statement's first word)
    j, kw = i, None
    while True:
        m = _WORD.match(t, j)
        if not m:
            break
        w = m.group(1)
        if w == "pub":
            j = m.end()
            k = re.compile(r"\s*\(").match(t, j)
            if k:
                j = _bracket_end(t, k.end() - 1)
            continue
        if w in ("unsafe", "async", "default", "extern"):
            j = m.end()
            continue
        if w == "const":
            nxt = _WORD.match(t, m.end())
            if nxt and nxt.group(1) in ("fn", "unsafe", "async", "extern"):
                j = m.end()
                continue
        kw = w
        break
    item = kw in _ITEM_KW
    semi_only = kw in _SEMI_ONLY
    depth = angle = 0
    j = i
    while j < n:
        ch = t[j]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return j  # the end of the enclosing struct / arguments / block
            depth -= 1
            if ch == "}" and depth == 0 and not semi_only:
                return j + 1
        elif ch == ";" and depth == 0:
            return j + 1
        elif not item and depth == 0:
            if ch == "<":
                angle += 1
            elif ch == ">" and angle and t[j - 1] not in "-=":
                angle -= 1
            elif ch == "," and angle == 0:
                return j + 1
        j += 1
    return n


def blank_test_items(t: str):
    """`t` (already without comments/literals) with every `#[cfg(test)]` item blanked; None when
    the file itself is test-only (`#![cfg(test)]` at its top)."""
    out = list(t)

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    pos = 0
    while True:
        m = _ATTR.search(t, pos)
        if not m:
            break
        close = _bracket_end(t, m.end() - 1)
        body = t[m.end():close - 1]
        c = re.fullmatch(r"\s*cfg\s*\((.*)\)\s*", body, re.S)
        if not (c and cfg_implies_test(c.group(1))):
            pos = m.end()
            continue
        if m.group(1):  # inner attribute: the enclosing block (or the file) is test code
            depth, k = 0, m.start() - 1
            while k >= 0:
                if t[k] == "}":
                    depth += 1
                elif t[k] == "{":
                    if depth == 0:
                        break
                    depth -= 1
                k -= 1
            if k < 0:
                return None
            end = _bracket_end(t, k)
            blank(k + 1, end - 1)
            pos = end
            continue
        end = _item_end(t, close)
        blank(m.start(), end)
        pos = max(end, m.end())
    return "".join(out)


def clean_source(text: str):
    """The code of a file that counts: comments, literals and test items blanked (None: the file
    is test-only)."""
    return blank_test_items(blank_comments_and_literals(text))


# ---------------------------------------------------------------------------------------------
# The module tree of a crate
# ---------------------------------------------------------------------------------------------

_MOD_OR_BRACE = re.compile(r"(?<![\w$])mod\s+(?:r#)?([A-Za-z_]\w*)\s*([;{])|[{}]")
_PATH_ATTR = re.compile(r'#\s*\[\s*path\s*=\s*"([^"]*)"\s*\]')


class SourceFile:
    def __init__(self, path: Path, modpath: tuple, raw: str, code: str):
        self.path = path
        self.modpath = modpath
        self.raw = raw
        self.code = code
        self.spans = []  # (start, end, modpath) of the inline modules

    def line_of(self, offset: int) -> int:
        return self.raw.count("\n", 0, offset) + 1

    def module_at(self, offset: int) -> tuple:
        best, depth = self.modpath, -1
        for a, b, mp in self.spans:
            if a <= offset < b and len(mp) > depth:
                best, depth = mp, len(mp)
        return best


def _is_mod_rs(path: Path, is_root: bool) -> bool:
    return is_root or path.name == "mod.rs"


def _child_file(f: Path, is_root: bool, inline: list, name: str, raw: str, code: str, at: int):
    """The file of `mod name;` declared in file `f` inside the inline modules `inline`."""
    # a `#[path = ".."]` among the attributes right before the declaration
    k = at
    while k > 0 and code[k - 1] not in ";{}":
        k -= 1
    attrs = raw[k:at]
    m = _PATH_ATTR.search(attrs)
    base = f.parent if _is_mod_rs(f, is_root) else f.parent / f.stem
    if m:
        if not inline:
            return [f.parent / m.group(1)]
        return [base.joinpath(*inline) / m.group(1)]
    d = base.joinpath(*inline)
    return [d / f"{name}.rs", d / name / "mod.rs"]


def crate_roots(src: Path):
    roots = [src / "lib.rs", src / "main.rs"] + sorted((src / "bin").glob("*.rs"))
    return [r for r in roots if r.is_file()]


def module_structure(code: str):
    """The `mod` items of a file's code: ([(inline path, name, offset)] of the `mod x;`
    declarations, [(start, end, inline path)] of the inline `mod x { .. }` blocks)."""
    decls, spans = [], []
    depth, stack = 0, []  # stack: (name, depth before its brace, start offset)
    for m in _MOD_OR_BRACE.finditer(code):
        if m.group(1):
            inline = tuple(s[0] for s in stack)
            if m.group(2) == "{":
                stack.append((m.group(1), depth, m.end()))
                depth += 1
            else:
                decls.append((inline, m.group(1), m.start()))
        elif m.group(0) == "{":
            depth += 1
        else:
            depth -= 1
            if stack and stack[-1][1] == depth:
                name, _, start = stack.pop()
                spans.append((start, m.start(), tuple(s[0] for s in stack) + (name,)))
    return decls, spans


def path_modpath(src: Path, f: Path) -> tuple:
    """The module path a file has by its place under `src` (`a/b.rs`, `a/b/mod.rs`: `a::b`)."""
    parts = f.relative_to(src).with_suffix("").parts
    return parts[:-1] if parts[-1] == "mod" else parts


class Crate:
    """One crate (one root): its files outside tests, its modules and the file of each.

    Files are found through `mod x;` declarations from the root. A file that no declaration
    reaches and that is not test code (a module declared by a macro, such as `kinds!` of
    legs/src/kinds/mod.rs) is adopted with the module path of its place (`adopt`)."""

    def __init__(self, src: Path, root: Path):
        self.src = src
        self.root = root
        self.files = {}  # Path -> SourceFile
        self.modules = {}  # modpath -> Path (inline modules: their file)
        self.test_only = set()  # files of test-only modules
        self.test_modpaths = set()  # modules declared under #[cfg(test)]
        self.missing = []  # declarations without a file: (file, line, name)
        self.adopted = []  # files found by their place, not by a declaration
        self._read([(root, ())])

    def _read(self, todo):
        queue = deque(todo)
        while queue:
            f, mp = queue.popleft()
            if f in self.files or f in self.test_only:
                continue
            raw = f.read_text(encoding="utf-8", errors="replace")
            untested = blank_comments_and_literals(raw)
            code = blank_test_items(untested)
            if code is None:
                self.test_only.add(f)
                self.test_modpaths.add(mp)
                continue
            sf = SourceFile(f, mp, raw, code)
            self.files[f] = sf
            self.modules[mp] = f
            decls, spans = module_structure(code)
            for start, end, inline in spans:
                sf.spans.append((start, end, mp + inline))
                self.modules[mp + inline] = f
            for inline, name, at in decls:
                cands = _child_file(f, f == self.root, list(inline), name, raw, code, at)
                hit = next((c for c in cands if c.is_file()), None)
                if hit is None:
                    self.missing.append((f, sf.line_of(at), name))
                else:
                    queue.append((hit, mp + inline + (name,)))
            # what only the test build declares
            all_decls, all_spans = module_structure(untested)
            kept = {mp + i + (n,) for i, n, _ in decls} | {mp + i for _, _, i in spans}
            for i, n, _ in all_decls:
                if mp + i + (n,) not in kept:
                    self.test_modpaths.add(mp + i + (n,))
            for _, _, i in all_spans:
                if mp + i not in kept:
                    self.test_modpaths.add(mp + i)

    def adopt(self, taken):
        """Reads the files under `src` that neither this crate's declarations nor `taken`
        reach, outside test modules, with the module path of their place."""
        todo = []
        for f in sorted(self.src.rglob("*.rs")):
            if f in self.files or f in self.test_only or f in taken:
                continue
            if f.relative_to(self.src).parts[0] == "bin" or f.name in ("lib.rs", "main.rs") \
                    and f.parent == self.src:
                continue
            mp = path_modpath(self.src, f)
            if any(mp[:len(t)] == t for t in self.test_modpaths) or mp in self.modules:
                continue
            todo.append((f, mp))
        before = set(self.files)
        self._read(todo)
        self.adopted += sorted(set(self.files) - before)

    def landing(self, absolute: tuple):
        """The file of the deepest module prefix of the absolute path `absolute`."""
        for n in range(len(absolute), -1, -1):
            f = self.modules.get(absolute[:n])
            if f is not None:
                return f, absolute[:n]
        return None, None

    def absolute(self, module: tuple, segs: list):
        """`segs` (as written in module `module`) as an absolute module path, or None when it does
        not start in this crate."""
        first = segs[0]
        if first in ("crate", "$crate"):
            return tuple(segs[1:])
        if first in ("super", "self"):
            base, k = list(module), 0
            while k < len(segs) and segs[k] in ("super", "self"):
                if segs[k] == "super":
                    if not base:
                        return None
                    base.pop()
                k += 1
            return tuple(base) + tuple(segs[k:])
        if module + (first,) in self.modules:  # a child module: `child::x` is `self::child::x`
            return module + tuple(segs)
        return None


# ---------------------------------------------------------------------------------------------
# Paths: `use` trees and paths in code
# ---------------------------------------------------------------------------------------------

_USE = re.compile(r"(?<![\w$])use\s")
_USE_TOKEN = re.compile(r"\s*(::|\{|\}|,|\*|;|\$?(?:r#)?[A-Za-z_]\w*)")
_CODE_PATH = re.compile(
    r"(?<![\w$:])(\$crate|crate|super|self|[a-z_][a-z0-9_]*)((?:\s*::\s*(?:r#)?[A-Za-z_]\w*)+)")
_SEG = re.compile(r"(?:r#)?([A-Za-z_]\w*)")


def use_statements(code: str):
    """(start, end, [(segments, offset of the last segment)]) of each `use` statement."""
    out = []
    pos = 0
    while True:
        m = _USE.search(code, pos)
        if not m:
            break
        toks = []
        j = m.end()
        while True:
            t = _USE_TOKEN.match(code, j)
            if not t:
                break
            toks.append((t.group(1), t.start(1)))
            j = t.end()
            if t.group(1) == ";":
                break
        if not toks or toks[-1][0] != ";":
            pos = m.end()
            continue
        leaves = []
        try:
            _parse_use_tree(toks, 0, [], leaves)
        except (ValueError, IndexError):  # not a use tree (a macro pattern): read as code
            pos = m.end()
            continue
        out.append((m.start(), j, leaves))
        pos = j
    return out


def _parse_use_tree(toks, i, prefix, leaves):
    """Parses one use tree at `toks[i]`; appends its leaf paths; returns the next index."""
    tok, off = toks[i]
    if tok == "{":
        i += 1
        while toks[i][0] != "}":
            i = _parse_use_tree(toks, i, prefix, leaves)
            if toks[i][0] == ",":
                i += 1
            elif toks[i][0] != "}":
                raise ValueError(f"unexpected {toks[i][0]!r} in a use group")
        return i + 1
    if tok == "*":
        leaves.append((prefix, off))
        return i + 1
    if tok == "::":  # `use ::name`: another crate
        prefix = prefix + ["::"]
        i += 1
        tok, off = toks[i]
    segs = list(prefix)
    while True:
        tok, off = toks[i]
        if tok in ("{", "*"):
            return _parse_use_tree(toks, i, segs, leaves)
        segs.append(tok)
        i += 1
        if toks[i][0] == "::":
            i += 1
            continue
        break
    if toks[i][0] == "as":
        i += 2
    if segs and segs[-1] == "self":
        segs = segs[:-1]
    leaves.append((segs, off))
    return i


def file_paths(crate: Crate, sf: SourceFile):
    """(offset, module, segments, text) of every path of `sf` that may land in this crate."""
    code = sf.code
    uses = use_statements(code)
    for start, end, leaves in uses:
        module = sf.module_at(start)
        for segs, off in leaves:
            if segs and segs[0] != "::":
                yield off, module, segs, "::".join(segs)
    spans = [(a, b) for a, b, _ in uses]
    k = 0
    for m in _CODE_PATH.finditer(code):
        while k < len(spans) and spans[k][1] <= m.start():
            k += 1
        if k < len(spans) and spans[k][0] <= m.start() < spans[k][1]:
            continue
        segs = [m.group(1)] + _SEG.findall(m.group(2))
        yield m.start(), sf.module_at(m.start()), segs, "::".join(segs)


class Edge:
    def __init__(self, src: Path, dst: Path, line: int, text: str):
        self.src, self.dst, self.line, self.text = src, dst, line, text


def crate_edges(crate: Crate, descendant_edges=False):
    """The edges of `crate`, one per path written. A path from a file into its own descendants
    (`mod.rs` -> `mod.rs`'s `child.rs`) is left out unless `descendant_edges`."""
    edges = []
    for f, sf in crate.files.items():
        for off, module, segs, text in file_paths(crate, sf):
            absolute = crate.absolute(module, segs)
            if absolute is None:
                continue
            dst, mp = crate.landing(absolute)
            if dst is None or dst == f or mp == ():
                continue  # outside the tree, the file itself, the crate root
            if not descendant_edges and crate.files[dst].modpath[:len(sf.modpath)] == sf.modpath:
                continue  # a module using its own child: the child is part of it
            edges.append(Edge(f, dst, sf.line_of(off), text))
    return edges


# ---------------------------------------------------------------------------------------------
# The graph
# ---------------------------------------------------------------------------------------------


def sccs(graph):
    """Strongly connected components (Tarjan, iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out


def _walk(graph, members):
    """A closed walk through every file of a strongly connected component."""
    members = sorted(members)
    inside = set(members)

    def path(a, b):
        prev, q = {a: None}, deque([a])
        while q:
            v = q.popleft()
            for w in sorted(graph.get(v, ())):
                if w in inside and w not in prev:
                    prev[w] = v
                    if w == b:
                        q.clear()
                        break
                    q.append(w)
        out, v = [], b
        while v != a:
            out.append(v)
            v = prev[v]
        return out[::-1]

    walk, seen = [members[0]], {members[0]}
    while len(seen) < len(members):
        cur = walk[-1]
        best = None
        for m in members:
            if m not in seen:
                p = path(cur, m)
                if best is None or len(p) < len(best):
                    best = p
        walk += best
        seen.update(best)
    return walk + path(walk[-1], members[0])  # back to the start


class Cycle:
    """A strongly connected component of two or more files."""

    def __init__(self, src: Path, files, walk, edges):
        self.src = src
        self.files = sorted(files)
        self.walk = walk
        self.edges = edges  # the edges between its files

    def names(self):
        return [p.relative_to(self.src).as_posix() for p in self.files]

    def line(self):
        return f"cycle in {self.src}: " + " -> ".join(
            p.relative_to(self.src).as_posix() for p in self.walk)


def read_crates(src: Path):
    """The crates whose sources are under `src`, one per root (`lib.rs`, `main.rs`, `bin/*.rs`);
    the files no declaration reaches belong to the first (lib.rs)."""
    crates = [Crate(src, root) for root in crate_roots(src)]
    if crates:
        crates[0].adopt({f for c in crates[1:] for f in c.files})
    return crates


def analyse(src, descendant_edges=False):
    """(files, edges, cycles, missing) of the crate(s) whose sources are under `src` (`lib.rs`,
    `main.rs`, `bin/*.rs` roots). `files`: the files read (outside tests); `missing`: `mod x;`
    declarations without a file, as (file, line, name)."""
    src = Path(src)
    files, edges, missing = [], [], []
    for crate in read_crates(src):
        files += sorted(crate.files)
        edges += crate_edges(crate, descendant_edges)
        missing += crate.missing
    graph = {f: set() for f in files}
    for e in edges:
        graph[e.src].add(e.dst)
    cycles = []
    for comp in sccs(graph):
        if len(comp) > 1:
            inside = set(comp)
            cyc_edges = sorted((e for e in edges if e.src in inside and e.dst in inside),
                               key=lambda e: (e.src, e.line, e.dst))
            cycles.append(Cycle(src, comp, _walk(graph, comp), cyc_edges))
    cycles.sort(key=lambda c: c.files)
    return files, edges, cycles, missing


def find_cycles(src, descendant_edges=False):
    """The import cycles of the crate under `src`: one sorted list of file names (relative to
    `src`, `/`-separated) per cycle."""
    return [c.names() for c in analyse(src, descendant_edges)[2]]


# ---------------------------------------------------------------------------------------------
# Folder layers
# ---------------------------------------------------------------------------------------------


def layer_order(src, layers=None):
    """The folder order that `layers` (default `LAYERS`) declares for the crate under `src`: the
    one whose key ends the resolved path of `src`; None when none does."""
    parts = Path(src).resolve().parts
    for key, order in (LAYERS if layers is None else layers).items():
        kp = PurePosixPath(key.strip("/")).parts
        if kp and tuple(parts[-len(kp):]) == kp:
            return order
    return None


def folder_of(src: Path, f: Path):
    """The top-level folder of file `f` under `src`; None for the root (files directly in `src`,
    and `bin/`, the binaries' roots)."""
    parts = f.relative_to(src).parts
    return None if len(parts) == 1 or parts[0] == "bin" else parts[0]


def _script_path():
    """This script's path, from the working directory when under it."""
    me = Path(__file__).resolve()
    try:
        return me.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return me.as_posix()


def _constant_line(name):
    """The line of this script where the constant `name` is assigned (for the reader to mend)."""
    for k, line in enumerate(Path(__file__).read_text().splitlines(), 1):
        if line.startswith(f"{name} ="):
            return k
    return 0


class LayerCheck:
    """The folder arrows of one crate judged against its order.

    `arrows`: the (from, to) folder pairs that some edge makes; `back`: {(from, to): [edges]} of
    the arrows to the same or a higher position; `unplaced`: {folder: [files]} of the folders the
    order does not list (their arrows are not judged)."""

    def __init__(self, src: Path, order, arrows, back, unplaced):
        self.src, self.order = src, order
        self.arrows, self.back, self.unplaced = arrows, back, unplaced

    def ok(self):
        return not self.back and not self.unplaced

    def lines(self):
        """The problems, as printed: one line per unplaced folder, per arrow back (then one
        indented line per path that makes it)."""
        out = []
        where = f"{_script_path()}:{_constant_line('LAYERS')}"
        for folder, files in self.unplaced.items():
            first = files[0].relative_to(self.src).as_posix()
            count = "1 file" if len(files) == 1 else f"{len(files)} files"
            more = ", .." if len(files) > 1 else ""
            out.append(f"layers of {self.src}: folder {folder} ({count}: {first}{more})"
                       f" is not placed in LAYERS ({where})")
        for (a, b), edges in self.back.items():
            paths = "path" if len(edges) == 1 else "paths"
            out.append(f"arrow back in {self.src}: {a} -> {b} ({len(edges)} {paths}; LAYERS "
                       f"position {self.order.index(a) + 1} -> {self.order.index(b) + 1})")
            for e in edges:
                out.append(f"    {e.src.relative_to(self.src).as_posix()}:{e.line}: {e.text}"
                           f" -> {e.dst.relative_to(self.src).as_posix()}")
        return out


def layer_violations(src, order, analysed=None):
    """Judges the folder arrows of the crate(s) under `src` against `order` (folders top first):
    a `LayerCheck`. `analysed`: the `analyse(src)` result, when already at hand."""
    src = Path(src)
    files, edges = (analysed or analyse(src))[:2]
    pos = {name: k for k, name in enumerate(order)}
    unplaced = {}
    for f in sorted(set(files)):
        folder = folder_of(src, f)
        if folder is not None and folder not in pos:
            unplaced.setdefault(folder, []).append(f)
    arrows, back = set(), {}
    for e in sorted(edges, key=lambda e: (e.src, e.line, e.text, e.dst)):
        a, b = folder_of(src, e.src), folder_of(src, e.dst)
        if a is None or b is None or a == b:
            continue
        arrows.add((a, b))
        if a in pos and b in pos and pos[b] <= pos[a]:
            same = back.setdefault((a, b), [])
            if not same or (same[-1].src, same[-1].line, same[-1].text) != (e.src, e.line, e.text):
                same.append(e)  # one line per path written (a file two roots read: once)
    back = dict(sorted(back.items(), key=lambda kv: (pos[kv[0][0]], pos[kv[0][1]])))
    return LayerCheck(src, list(order), arrows, back, unplaced)


# ---------------------------------------------------------------------------------------------
# Function lengths
# ---------------------------------------------------------------------------------------------

_FN = re.compile(r"(?<![\w$])fn\s+(?:r#)?([A-Za-z_]\w*)")


def _body_start(code, j):
    """The offset of the `{` that opens the body of the `fn` whose signature goes on at `j`; None
    for a declaration without a body (`;` first). Brackets and generics (`<{ N }>`) are skipped."""
    depth = angle = 0
    while j < len(code):
        ch = code[j]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "<":
            angle += 1
        elif ch == ">" and angle and code[j - 1] not in "-=":
            angle -= 1
        elif depth == 0 and angle == 0:
            if ch == ";" or ch == "}":  # a declaration, or the end of the enclosing block
                return None
            if ch == "{":
                return j
        j += 1
    return None


def fn_spans(code):
    """(name, offset of `fn`, offset after the closing brace) of every `fn` with a body in `code`
    (already blanked), nested ones included."""
    out = []
    for m in _FN.finditer(code):
        start = _body_start(code, m.end())
        if start is not None:
            out.append((m.group(1), m.start(), _bracket_end(code, start)))
    return out


class LongFn:
    def __init__(self, path: Path, line: int, name: str, lines: int, limit: int):
        self.path, self.line, self.name, self.lines, self.limit = path, line, name, lines, limit

    def text(self):
        return (f"long function: {self.path.as_posix()}:{self.line}: {self.name} is {self.lines}"
                f" lines (at most {self.limit})")


def long_functions(src, limit=FN_LINES):
    """The functions outside tests of the crate(s) under `src` longer than `limit` lines (from the
    line of `fn` to that of the closing brace), as `LongFn`s by file and line."""
    read = {}
    for crate in read_crates(Path(src)):
        for f, sf in crate.files.items():
            read.setdefault(f, sf)  # a file two roots declare: once
    out = []
    for f in sorted(read):
        sf = read[f]
        for name, a, b in fn_spans(sf.code):
            first, last = sf.line_of(a), sf.line_of(b - 1)
            if last - first + 1 > limit:
                out.append(LongFn(f, first, name, last - first + 1, limit))
    return out


def main(argv):
    args = argv[1:]
    show_edges = "--edges" in args
    descendant_edges = "--descendant-edges" in args
    args = [a for a in args if a not in ("--edges", "--descendant-edges")]
    unknown = [a for a in args if a.startswith("-")]
    if unknown:
        print(f"unknown option {unknown[0]} (see the module documentation)", file=sys.stderr)
        return 2
    roots = [Path(a) for a in args] or [Path(p) for p in ("datasets/src", "legs/src", "harness/src")]
    total = 0
    sizes = []
    for src in roots:
        if not crate_roots(src):
            print(f"{src}: no lib.rs or main.rs", file=sys.stderr)
            return 2
        for f in sorted(src.rglob("*.rs")):
            sizes.append((len(f.read_text(encoding="utf-8", errors="replace").splitlines()), f))
        files, edges, cycles, missing = analyse(src, descendant_edges)
        for f, line, name in missing:
            print(f"{f}:{line}: `mod {name};` has no file", file=sys.stderr)
        for c in cycles:
            total += 1
            print(c.line())
            if show_edges:
                for e in c.edges:
                    print(f"    {e.src.relative_to(src).as_posix()}:{e.line}: {e.text}"
                          f"  -> {e.dst.relative_to(src).as_posix()}")
        summary = f"import cycles: {len(cycles)}"
        order = layer_order(src)
        if order is not None:
            layers = layer_violations(src, order, (files, edges))
            for line in layers.lines():
                print(line)
            total += 0 if layers.ok() else 1
            summary += (f", folder arrows: {len(layers.arrows)}, arrows back: {len(layers.back)}"
                        f", unplaced folders: {len(layers.unplaced)}")
        long_fns = long_functions(src)
        for fn in long_fns:
            print(fn.text())
        total += len(long_fns)
        summary += f", long functions: {len(long_fns)}"
        pairs = len({(e.src, e.dst) for e in edges})
        print(f"{src}: {len(files)} files, {pairs} file imports, {summary}")
    sizes.sort(reverse=True)
    print("largest files:")
    for n, f in sizes[:5]:
        print(f"  {n:5d} {f}")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
