#!/usr/bin/env python3
"""Tests of scripts/module_graph.py: `python3 scripts/test_module_graph.py` (plain unittest).

Each pattern of import cycle the check must see is a small crate written to a temporary directory
(the shapes of the two cycles of the tree it was written against: two sibling files through
`super::`, five files of `report/html/` around `dataset.rs`'s `Job`), plus crates whose only
"edges" are in test code, comments and literals, which must have none. The folder layers and the
function lengths are checked the same way: small crates that must fail (an arrow back, an unplaced
folder, a function of 121 lines) and pass (arrows down, the root, test code, 120 lines, bodiless
declarations, `fn` in literals and comments). One test runs the checks on the repository itself
and only asserts that they run.
"""

import re
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import module_graph as mg  # noqa: E402


def write_tree(root: Path, files: dict) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


class Fixture(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def crate(self, files, name="src"):
        return write_tree(self.tmp / name, files)

    def edges(self, src, **kw):
        """{(from, to): [line, ..]} of the crate under `src`."""
        out = {}
        for e in mg.analyse(src, **kw)[1]:
            key = (e.src.relative_to(src).as_posix(), e.dst.relative_to(src).as_posix())
            out.setdefault(key, []).append(e.line)
        return out


class Cycles(Fixture):
    def test_super_between_sibling_files(self):
        # datasets/src/synthetic: names.rs `use super::world::Kind`, world.rs
        # `use super::names::{Named, Namer}`; the tests module at the end uses both
        src = self.crate({
            "lib.rs": "pub mod synthetic;\n",
            "synthetic/mod.rs": """
                mod names;
                #[cfg(test)]
                mod pinned;
                mod world;
                pub use world::World;
            """,
            "synthetic/names.rs": """
                //! Names of a world's entities.
                use super::world::Kind;
                use crate::rng::SplitMix64;
                pub(crate) struct Namer;
                pub(crate) trait Named { fn kind(&self) -> Kind; }
            """,
            "synthetic/world.rs": """
                use super::names::{Named, Namer};
                pub struct World;
                pub enum Kind { A }
                #[cfg(test)]
                mod tests {
                    use super::*;
                }
            """,
            "synthetic/pinned.rs": "use super::*;\n",
        })
        self.assertEqual(mg.find_cycles(src), [["synthetic/names.rs", "synthetic/world.rs"]])
        e = self.edges(src)
        self.assertEqual(e[("synthetic/names.rs", "synthetic/world.rs")], [2])
        self.assertEqual(e[("synthetic/world.rs", "synthetic/names.rs")], [1, 1])
        # the parent's `pub use world::World` uses its own child: no edge; pinned.rs is test code
        self.assertNotIn(("synthetic/mod.rs", "synthetic/world.rs"), e)
        self.assertNotIn("synthetic/pinned.rs", {a for a, _ in e})

    def test_grouped_imports_around_a_struct(self):
        # harness/src/report/html: curves, matrix, pairs take `super::dataset::Job`; dataset.rs
        # takes them back through one group; groups.rs closes the circle through matrix.rs;
        # mod.rs builds the jobs (its children: no edge) and the children use its items
        src = self.crate({
            "lib.rs": "pub mod report;\npub mod store;\n",
            "store.rs": "pub struct CellSummary;\n",
            "report/mod.rs": "pub mod html;\n",
            "report/html/mod.rs": """
                mod curves;
                mod dataset;
                mod groups;
                mod matrix;
                mod pairs;
                pub struct ReportOptions;
                pub const MARKER: &str = "hopbench report";
                pub fn write_report(o: &ReportOptions) {
                    let jobs = vec![dataset::Job { n: 0 }];
                    let _ = matrix::page(o, &jobs);
                }
            """,
            "report/html/dataset.rs": """
                use super::matrix::{dataset_counts,
                    is_oracle};
                use super::{curves, groups, pairs, ReportOptions};
                pub struct Job { pub n: usize }
            """,
            "report/html/curves.rs": """
                use super::dataset::Job;
                use super::{ReportOptions};
                pub fn section(o: &ReportOptions, job: &Job) -> &'static str { super::MARKER }
            """,
            "report/html/matrix.rs": """
                use super::dataset::Job;
                use crate::store::CellSummary;
                pub fn page(o: &super::ReportOptions, jobs: &[Job]) {}
            """,
            "report/html/pairs.rs": """
                pub use super::dataset::{
                    Job,
                };
            """,
            "report/html/groups.rs": "use super::matrix::{self, is_oracle};\n",
        })
        html = ["report/html/" + n for n in
                ("curves.rs", "dataset.rs", "groups.rs", "matrix.rs", "pairs.rs")]
        self.assertEqual(mg.find_cycles(src), [html])
        e = self.edges(src)
        self.assertEqual(e[("report/html/dataset.rs", "report/html/matrix.rs")], [1, 2])
        self.assertEqual(e[("report/html/pairs.rs", "report/html/dataset.rs")], [2])
        self.assertIn(("report/html/curves.rs", "report/html/mod.rs"), e)  # child -> parent
        self.assertNotIn(("report/html/mod.rs", "report/html/dataset.rs"), e)
        # counting the parent's uses of its children too puts mod.rs in the circle
        self.assertEqual(mg.find_cycles(src, descendant_edges=True),
                         [sorted(html + ["report/html/mod.rs"])])

    def test_nested_and_multiline_groups(self):
        src = self.crate({
            "lib.rs": "pub mod p;\npub mod q;\npub mod r;\n",
            "p.rs": """
                use crate::{
                    r::R,
                    q::{
                        Q as Queue,
                        helper,
                    },
                };
                pub struct P;
            """,
            "q.rs": "pub use super::{p::P, r};\npub struct Q;\npub fn helper() {}\n",
            "r.rs": "pub struct R;\n",
        })
        self.assertEqual(mg.find_cycles(src), [["p.rs", "q.rs"]])
        e = self.edges(src)
        self.assertEqual(e[("p.rs", "q.rs")], [4, 5])
        self.assertEqual(e[("p.rs", "r.rs")], [2])
        self.assertEqual(sorted(e[("q.rs", "r.rs")]), [1])

    def test_circle_after_a_test_module(self):
        # the first version stopped reading at the first #[cfg(test)]
        src = self.crate({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": """
                #[cfg(test)]
                mod tests {
                    use super::*;
                    fn braces() {
                        let s = "}}}";
                        let r = r#"} "quoted" }"#;
                        let c = '}';
                        let q = '\\'';
                        /* } /* nested } */ } */
                        // }
                    }
                }

                #[cfg(test)]
                fn helper<'a>(x: &'a str) -> &'a str { x }

                use crate::b::B;
                pub struct A;
            """,
            "b.rs": "use crate::a::A;\npub struct B;\n",
        })
        self.assertEqual(mg.find_cycles(src), [["a.rs", "b.rs"]])
        self.assertEqual(self.edges(src)[("a.rs", "b.rs")], [17])

    def test_inline_crate_paths(self):
        src = self.crate({
            "lib.rs": "pub mod m;\npub mod n;\n",
            "m.rs": """
                pub struct T;
                pub fn f() -> u32 {
                    crate::n::g() + 1
                }
            """,
            "n.rs": """
                pub fn g() -> u32 { 0 }
                pub struct S(pub crate :: m :: T);
            """,
        })
        self.assertEqual(mg.find_cycles(src), [["m.rs", "n.rs"]])
        e = self.edges(src)
        self.assertEqual(e[("m.rs", "n.rs")], [3])
        self.assertEqual(e[("n.rs", "m.rs")], [2])

    def test_super_super_self_and_inline_modules(self):
        src = self.crate({
            "lib.rs": "pub mod a;\npub mod b;\n",
            "a/mod.rs": "pub mod deep;\n",
            "a/deep.rs": "pub fn d() { super::super::b::bb() }\n",
            "b.rs": """
                pub fn bb() {}
                mod inner {
                    fn i() {
                        self::helper();
                        super::super::a::deep::d();
                    }
                    fn helper() {}
                }
            """,
        })
        self.assertEqual(mg.find_cycles(src), [["a/deep.rs", "b.rs"]])
        e = self.edges(src)
        self.assertEqual(e[("b.rs", "a/deep.rs")], [5])
        self.assertEqual(e[("a/deep.rs", "b.rs")], [1])

    def test_non_mod_rs_children_and_path_attribute(self):
        src = self.crate({
            "lib.rs": "pub mod engine;\n#[path = \"odd/place.rs\"]\npub mod placed;\n",
            "engine.rs": "pub mod served;\npub struct Spec;\n",
            "engine/served.rs": "use crate::placed::P;\npub struct Served;\n",
            "odd/place.rs": "pub struct P;\nfn f() { let _ = crate::engine::served::Served; }\n",
        })
        self.assertEqual(mg.find_cycles(src), [["engine/served.rs", "odd/place.rs"]])
        files = {f.relative_to(src).as_posix() for f in mg.analyse(src)[0]}
        self.assertEqual(files, {"lib.rs", "engine.rs", "engine/served.rs", "odd/place.rs"})

    def test_files_declared_by_a_macro_are_read(self):
        # legs/src/kinds/mod.rs: `kinds! { dense::Dense, .. }` expands to `pub mod dense;`
        src = self.crate({
            "lib.rs": "pub mod kinds;\npub mod registry;\n",
            "kinds/mod.rs": """
                macro_rules! kinds { ($($m:ident :: $t:ident),*) => { $(pub mod $m;)* }; }
                kinds! { dense::Dense }
                #[cfg(test)]
                mod tests;
            """,
            "kinds/dense.rs": "use crate::registry::Spec;\npub struct Dense;\n",
            "kinds/tests.rs": "use crate::registry::Spec;\n",
            "registry.rs": "pub struct Spec;\nfn f() { let _ = crate::kinds::dense::Dense; }\n",
        })
        self.assertEqual(mg.find_cycles(src), [["kinds/dense.rs", "registry.rs"]])
        files = {f.relative_to(src).as_posix() for f in mg.analyse(src)[0]}
        self.assertNotIn("kinds/tests.rs", files)


class NoCycles(Fixture):
    def test_edges_only_in_tests_comments_and_literals(self):
        src = self.crate({
            "lib.rs": """
                pub mod a;
                pub mod b;
                pub mod c;
                #[cfg(test)]
                mod helpers;
                #[cfg(all(test, feature = "qdrant"))]
                mod qdrant_tests;
            """,
            "a.rs": """
                //! [`crate::b::B`] and `super::b` in a doc comment.
                // use crate::b::B;
                /* crate::b::f(); /* super::b::f() */ */
                /// See [`crate::b`].
                pub const S: &str = "crate::b::B super::b::f()";
                pub const R: &str = r#"use crate::b::B;"#;
                pub const BS: &[u8] = b"crate::b::B";
                pub const Q: char = '"';
                pub const E: char = '\\u{7B}';
                pub struct A<'a> {
                    pub x: &'a str,
                    #[cfg(test)]
                    pub(crate) seen: std::collections::HashMap<u8, crate::b::B>,
                    pub y: u8,
                }
                #[cfg(test)]
                use crate::b::B;
                #[cfg(test)]
                fn t() { crate::b::f(); }
                #[cfg(test)]
                impl A<'_> {
                    fn g() { super::b::f() }
                }
                #[cfg(test)]
                mod tests {
                    use crate::b::*;
                }
                #[cfg(any(test, feature = "x"))]
                use crate::c::C;
                pub fn after() { let _ = '{'; crate::c::h(); }
            """,
            "b.rs": "use crate::a::A;\npub struct B;\npub fn f() {}\n",
            "c.rs": "pub struct C;\npub fn h() {}\n",
            "helpers.rs": "use crate::a::A;\npub fn f() { crate::b::f() }\n",
            "qdrant_tests.rs": "use crate::a::A;\n",
        })
        self.assertEqual(mg.find_cycles(src), [])
        e = self.edges(src)
        self.assertEqual(e[("b.rs", "a.rs")], [1])  # the other direction exists
        self.assertNotIn(("a.rs", "b.rs"), e)
        # `cfg(any(test, ..))` is not test-only; code after every test item is read
        self.assertEqual(e[("a.rs", "c.rs")], [29, 30])
        files = {f.relative_to(src).as_posix() for f in mg.analyse(src)[0]}
        self.assertEqual(files, {"lib.rs", "a.rs", "b.rs", "c.rs"})

    def test_test_only_file_and_not_test(self):
        src = self.crate({
            "lib.rs": "pub mod a;\npub mod b;\npub mod t;\n",
            "a.rs": "#[cfg(not(test))]\nuse crate::b::B;\npub struct A;\n",
            "b.rs": "pub struct B;\n",
            "t.rs": "#![cfg(test)]\nuse crate::a::A;\n",
        })
        e = self.edges(src)
        self.assertEqual(e, {("a.rs", "b.rs"): [2]})
        self.assertEqual(mg.find_cycles(src), [])

    def test_parent_and_child(self):
        # a facade: the parent names its children, the children its items
        src = self.crate({
            "lib.rs": "pub mod export;\n",
            "export/mod.rs": """
                mod build;
                pub use build::build;
                pub struct Config;
                pub fn run() { self::build::build(); build::build(); }
            """,
            "export/build.rs": "use super::Config;\npub fn build() {}\n",
        })
        self.assertEqual(mg.find_cycles(src), [])
        self.assertEqual(mg.find_cycles(src, descendant_edges=True),
                         [["export/build.rs", "export/mod.rs"]])

    def test_paths_into_other_crates_and_the_root(self):
        src = self.crate({
            "lib.rs": "pub mod a;\npub mod b;\npub use a::A;\npub struct Root;\n",
            "a.rs": "use crate::Root;\nuse std::fmt;\nuse hopbench_datasets::b::B;\npub struct A;\n",
            "b.rs": "use crate::A;\nuse ::b::x;\n",
        })
        self.assertEqual(self.edges(src), {})


class Layers(Fixture):
    """Folder arrows against an order, top first."""

    def layered(self, b_uses_a=False, extra=None):
        # a/ over b/; lib.rs and util.rs (directly in src) are the root
        files = {
            "lib.rs": "pub mod a;\npub mod b;\npub mod util;\npub use a::x::X;\n",
            "util.rs": "use crate::a::x::X;\npub fn u() {}\n",
            "a/mod.rs": "pub mod x;\n",
            "a/x.rs": """
                use crate::b::y::Y;
                pub struct X(pub Y);
                pub fn f() { crate::util::u(); }
            """,
            "b/mod.rs": "pub mod y;\n",
            "b/y.rs": """
                pub struct Y;
                pub fn g() { crate::util::u(); }
                #[cfg(test)]
                fn t() { crate::a::x::f(); }
                #[cfg(test)]
                mod tests {
                    use crate::a::x::X;
                    use super::super::super::a::x::f;
                }
            """ + ("pub fn back() { crate::a::x::f(); }\n" if b_uses_a else ""),
        }
        files.update(extra or {})
        return self.crate(files)

    def test_arrows_down_pass(self):
        src = self.layered()
        check = mg.layer_violations(src, ["a", "b"])
        self.assertTrue(check.ok(), check.lines())
        self.assertEqual(check.arrows, {("a", "b")})
        self.assertEqual(check.lines(), [])

    def test_arrow_back_fails_and_names_the_line(self):
        src = self.layered(b_uses_a=True)
        check = mg.layer_violations(src, ["a", "b"])
        self.assertFalse(check.ok())
        self.assertEqual(check.arrows, {("a", "b"), ("b", "a")})
        self.assertEqual(list(check.back), [("b", "a")])
        self.assertEqual([(e.src.relative_to(src).as_posix(), e.line)
                          for e in check.back[("b", "a")]], [("b/y.rs", 10)])
        self.assertEqual(check.lines(), [
            f"arrow back in {src}: b -> a (1 path; LAYERS position 2 -> 1)",
            "    b/y.rs:10: crate::a::x::f -> a/x.rs",
        ])
        # the other order turns it around: a -> b is the arrow back then
        check = mg.layer_violations(src, ["b", "a"])
        self.assertEqual(list(check.back), [("a", "b")])

    def test_every_path_of_an_arrow_back_is_listed(self):
        src = self.layered(extra={
            "b/mod.rs": "pub mod y;\npub mod z;\n",
            "b/z.rs": "use crate::a::x::{X, f};\npub fn h(x: crate::a::x::X) { f(); }\n",
        })
        check = mg.layer_violations(src, ["a", "b"])
        self.assertEqual([(e.src.relative_to(src).as_posix(), e.line, e.text)
                          for e in check.back[("b", "a")]],
                         [("b/z.rs", 1, "crate::a::x::X"), ("b/z.rs", 1, "crate::a::x::f"),
                          ("b/z.rs", 2, "crate::a::x::X")])
        self.assertIn("(3 paths;", check.lines()[0])

    def test_skipping_layers_down_passes(self):
        src = self.layered(extra={
            "lib.rs": "pub mod a;\npub mod b;\npub mod c;\npub mod util;\n",
            "c/mod.rs": "pub struct C;\n",
            "a/x.rs": "use crate::b::y::Y;\nuse crate::c::C;\npub struct X(pub Y, C);\n"
                      "pub fn f() {}\n",
        })
        self.assertTrue(mg.layer_violations(src, ["a", "b", "c"]).ok())

    def test_folder_not_in_the_order_fails(self):
        src = self.layered(extra={
            "lib.rs": "pub mod a;\npub mod b;\npub mod c;\npub mod util;\n",
            "c/mod.rs": "pub struct C;\n",  # no arrow at all: still a folder to place
        })
        check = mg.layer_violations(src, ["a", "b"])
        self.assertFalse(check.ok())
        self.assertEqual(list(check.unplaced), ["c"])
        self.assertEqual(len(check.lines()), 1)
        self.assertIn(f"layers of {src}: folder c (1 file: c/mod.rs) is not placed in LAYERS",
                      check.lines()[0])

    def test_root_files_are_exempt(self):
        # util.rs (directly in src) is used by b/ and uses a/; lib.rs re-exports a/: no arrow
        src = self.layered()
        e = self.edges(src)
        self.assertIn(("b/y.rs", "util.rs"), e)
        self.assertIn(("util.rs", "a/x.rs"), e)
        check = mg.layer_violations(src, ["a", "b"])
        self.assertEqual(check.arrows, {("a", "b")})
        self.assertTrue(check.ok())

    def test_test_code_is_exempt(self):
        # b/y.rs reaches a/ from a #[cfg(test)] fn and a tests module only
        src = self.layered()
        self.assertNotIn(("b/y.rs", "a/x.rs"), self.edges(src))
        self.assertTrue(mg.layer_violations(src, ["a", "b"]).ok())

    def test_order_by_the_end_of_the_src_path(self):
        layers = {"harness/src": ["x"], "/legs/src/": ["y"]}
        self.assertEqual(mg.layer_order(self.tmp / "harness" / "src", layers), ["x"])
        self.assertEqual(mg.layer_order(self.tmp / "legs" / "src" / ".." / "src", layers), ["y"])
        self.assertIsNone(mg.layer_order(self.tmp / "other" / "src", layers))
        self.assertIsNone(mg.layer_order(self.tmp / "src", layers))
        self.assertEqual(mg.layer_order(REPO / "harness" / "src"), mg.LAYERS["harness/src"])
        self.assertIsNone(mg.layer_order(REPO / "datasets" / "src"))


def fn_text(name, lines, indent="", head=None):
    """A function of exactly `lines` lines (its `fn` line to its closing brace), at `indent`."""
    body = [f"{indent}    let _ = {k};" for k in range(lines - 2)]
    return "\n".join([indent + (head or f"pub fn {name}() {{")] + body + [indent + "}"]) + "\n"


class FunctionLengths(Fixture):
    def long(self, src, limit=mg.FN_LINES):
        return [(f.path.relative_to(src).as_posix(), f.line, f.name, f.lines)
                for f in mg.long_functions(src, limit)]

    def test_121_lines_fail_120_pass(self):
        src = self.crate({
            "lib.rs": "pub mod a;\n",
            "a.rs": "use std::fmt;\n" + fn_text("fits", 120) + fn_text("too_long", 121),
        })
        self.assertEqual(self.long(src), [("a.rs", 122, "too_long", 121)])
        self.assertEqual(mg.long_functions(src)[0].text(),
                         f"long function: {src.as_posix()}/a.rs:122: too_long is 121 lines"
                         " (at most 120)")
        self.assertEqual(self.long(src, limit=121), [])
        self.assertEqual([n for _, _, n, _ in self.long(src, limit=119)], ["fits", "too_long"])

    def test_methods_and_signatures(self):
        # a method, a signature with `fn` types and `Fn` bounds, a braced const generic argument
        impl = ("pub struct S;\nimpl S {\n"
                + fn_text("method", 121, "    ", "pub(crate) async fn method(&self) -> u8 {")
                + "}\n")
        src = self.crate({
            "lib.rs": "pub mod a;\n",
            "a.rs": impl
            + fn_text("apply", 121, head="fn apply(f: fn(u32) -> u32, g: impl Fn(u8) -> u8)"
                                         " -> u32 where u32: Copy {")
            + "pub struct Wrap<const N: usize>;\n"
            + fn_text("braced", 121, head="fn braced() -> Wrap<{ 1 + 1 }> {"),
        })
        self.assertEqual(self.long(src), [("a.rs", 3, "method", 121), ("a.rs", 125, "apply", 121),
                                          ("a.rs", 247, "braced", 121)])
        # the `fn(u32)` type and the `Fn(u8)` bound are no functions
        self.assertEqual([n for n, _, _ in mg.fn_spans(mg.clean_source((src / "a.rs").read_text()))],
                         ["method", "apply", "braced"])

    def test_test_code_is_not_read(self):
        src = self.crate({
            "lib.rs": "pub mod a;\n#[cfg(test)]\nmod tests;\n",
            "a.rs": "pub fn short() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n"
                    + fn_text("long_test", 130, "    ") + "}\n"
                    + "#[cfg(test)]\n" + fn_text("long_helper", 130),
            "tests.rs": fn_text("in_test_file", 130),
        })
        self.assertEqual(self.long(src), [])

    def test_declarations_without_body(self):
        # if `fn x(&self) -> [u8; 4];` were read up to the next `{`, it would reach the struct
        consts = "".join(f"pub const C{k}: u8 = {k};\n" for k in range(130))
        src = self.crate({
            "lib.rs": "pub mod a;\n",
            "a.rs": "pub trait T {\n    fn x(&self) -> [u8; 4];\n    fn y(&self) {}\n}\n"
                    'extern "C" {\n    fn c_side(n: u32);\n}\n'
                    + consts + "pub struct S {\n    pub a: u8,\n}\n",
        })
        self.assertEqual(self.long(src), [])
        self.assertEqual([n for n, _, _ in mg.fn_spans(mg.clean_source((src / "a.rs").read_text()))],
                         ["y"])

    def test_nested_function_counted_on_its_own(self):
        inner = fn_text("inner", 121, "    ", "fn inner() {")
        tail = "".join(f"    let _ = {k};\n" for k in range(7))
        outer = "pub fn outer() {\n" + inner + tail + "}\n"
        short = ("pub fn short_outer() {\n"
                 + fn_text("short_inner", 20, "    ", "fn short_inner() {")
                 + "    short_inner();\n}\n")
        src = self.crate({"lib.rs": "pub mod a;\n", "a.rs": short + outer})
        start = 1 + short.count("\n")
        self.assertEqual(self.long(src), [("a.rs", start, "outer", 130),
                                          ("a.rs", start + 1, "inner", 121)])

    def test_fn_in_literals_and_comments(self):
        long = fn_text("hidden", 130)
        src = self.crate({
            "lib.rs": "pub mod a;\n",
            "a.rs": "pub const SRC: &str = r#\"\n" + long + "\"#;\n"
                    + "pub const S: &str = \"\n" + long + "\";\n"
                    + "/*\n" + long + "*/\n"
                    + "".join("// " + l + "\n" for l in long.splitlines())
                    + "".join("/// " + l + "\n" for l in long.splitlines())
                    + "pub fn shown() {}\n",
        })
        self.assertEqual(self.long(src), [])
        self.assertEqual([n for n, _, _ in mg.fn_spans(mg.clean_source((src / "a.rs").read_text()))],
                         ["shown"])


class Pieces(unittest.TestCase):
    def test_blanking_keeps_offsets_and_lifetimes(self):
        src = "fn f<'a>(x: &'a str) -> char { let _ = \"//\"; 'x' } // crate::a\n/* a */ b'q'"
        out = mg.blank_comments_and_literals(src)
        self.assertEqual(len(out), len(src))
        self.assertIn("fn f<'a>(x: &'a str) -> char", out)
        self.assertNotIn("crate::a", out)
        self.assertNotIn("'x'", out)
        self.assertNotIn("q", out)

    def test_cfg_predicates(self):
        yes = ["test", "all(test, feature = \"x\")", "all(unix, test)", "any(test, all(test))"]
        no = ["not(test)", "any(test, feature = \"x\")", "feature = \"test\"", "unix", "all()"]
        for p in yes:
            self.assertTrue(mg.cfg_implies_test(p), p)
        for p in no:
            self.assertFalse(mg.cfg_implies_test(p), p)


class Cli(Fixture):
    def run_script(self, *args, cwd=None):
        return subprocess.run([sys.executable, str(HERE / "module_graph.py"), *map(str, args)],
                              capture_output=True, text=True, cwd=cwd or REPO)

    def test_exit_codes_and_lines(self):
        bad = self.crate({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::B;\npub struct A;\n",
            "b.rs": "use crate::a::A;\npub struct B;\n",
        }, name="bad")
        good = self.crate({"lib.rs": "mod a;\n", "a.rs": "pub struct A;\n"}, name="good")
        r = self.run_script(bad, good)
        self.assertEqual(r.returncode, 1, r.stderr)
        cycles = [l for l in r.stdout.splitlines() if l.startswith("cycle in ")]
        self.assertEqual(cycles, [f"cycle in {bad}: a.rs -> b.rs -> a.rs"])
        self.assertIn(f"{bad}: 3 files, 2 file imports, import cycles: 1", r.stdout)
        r = self.run_script("--edges", bad)
        self.assertIn("    a.rs:1: crate::b::B  -> b.rs", r.stdout)
        r = self.run_script(good)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"{good}: 2 files, 0 file imports, import cycles: 0, long functions: 0",
                      r.stdout)

    def test_layers_and_long_functions_fail_the_run(self):
        # a crate whose src path ends with harness/src gets LAYERS["harness/src"]
        files = {
            "lib.rs": "pub mod pipeline;\npub mod store;\n",
            "pipeline/mod.rs": "use crate::store::Cell;\npub struct Contract;\n",
            "store/mod.rs": "pub struct Cell;\n",
        }
        good = write_tree(self.tmp / "good" / "harness" / "src", files)
        r = self.run_script(good)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"{good}: 3 files, 1 file imports, import cycles: 0, folder arrows: 1, "
                      "arrows back: 0, unplaced folders: 0, long functions: 0", r.stdout)

        files["store/mod.rs"] = "pub struct Cell;\nfn f() -> crate::pipeline::Contract { todo!() }\n"
        back = write_tree(self.tmp / "back" / "harness" / "src", files)
        r = self.run_script(back)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f"arrow back in {back}: store -> pipeline (1 path; LAYERS position 7 -> 6)\n"
                      "    store/mod.rs:2: crate::pipeline::Contract -> pipeline/mod.rs\n", r.stdout)
        self.assertIn("folder arrows: 2, arrows back: 1", r.stdout)

        files["store/mod.rs"] = "pub struct Cell;\n"
        files["lib.rs"] += "pub mod loose;\n"
        files["loose/mod.rs"] = fn_text("run", 121)
        odd = write_tree(self.tmp / "odd" / "harness" / "src", files)
        r = self.run_script(odd)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f"layers of {odd}: folder loose (1 file: loose/mod.rs) is not placed in "
                      "LAYERS (", r.stdout)
        self.assertIn(f"long function: {odd}/loose/mod.rs:1: run is 121 lines (at most 120)\n",
                      r.stdout)

    def test_real_repository(self):
        r = self.run_script()
        self.assertIn(r.returncode, (0, 1), r.stderr)
        summary = r"^{}: \d+ files, \d+ file imports, import cycles: \d+{}, long functions: \d+$"
        layers = r", folder arrows: \d+, arrows back: \d+, unplaced folders: \d+"
        for crate in ("datasets/src", "legs/src", "harness/src"):
            self.assertRegex(r.stdout, re.compile(
                summary.format(re.escape(crate), layers if crate == "harness/src" else ""), re.M))
        problems = ("cycle in ", "arrow back in ", "layers of ", "long function: ")
        self.assertEqual(r.returncode == 1,
                         any(l.startswith(problems) for l in r.stdout.splitlines()))
        r = self.run_script("py/src")
        self.assertIn(r.returncode, (0, 1), r.stderr)
        self.assertRegex(r.stdout, re.compile(summary.format("py/src", ""), re.M))


if __name__ == "__main__":
    unittest.main()
