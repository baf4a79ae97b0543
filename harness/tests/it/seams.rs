//! The seams stay seams: the harness asks a registered leg kind or engine what it is (its role,
//! its parameters, its cache inputs, whether it is built) instead of naming it, and Qdrant's
//! build feature is named only in the Qdrant engine's own files. Both are read from the source
//! tree, outside test code, so a change that breaks either fails here with the line to mend.

use std::path::{Path, PathBuf};

use hopbench_legs::engine::ENGINES;
use hopbench_legs::kinds::KINDS;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The `.rs` files below `dir` (relative to the workspace), sorted.
fn rust_files(dir: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root().join(dir)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.expect("a directory entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// A source file split into its code and its string literals: `code` is the text with every
/// comment and every string literal blanked (newlines kept, so line numbers hold), `literals`
/// each string literal's contents with the line it starts on. Character literals are blanked
/// too; a `'` that starts a lifetime or a label is kept.
struct Scanned {
    code: String,
    literals: Vec<(usize, String)>,
}

/// Copies `text[from..to]` into `code` as blanks, newlines kept and counted.
fn blank(text: &str, code: &mut String, line: &mut usize, from: usize, to: usize) {
    for c in text[from..to].chars() {
        if c == '\n' {
            *line += 1;
            code.push('\n');
        } else {
            code.push(' ');
        }
    }
}

/// The contents of the ordinary string literal opening at `open` (a `"`) and the offset after
/// its closing quote: escapes read, a line continuation dropping the newline and the next
/// line's indentation.
fn string_at(text: &str, open: usize) -> (String, usize) {
    let b = text.as_bytes();
    let mut j = open + 1;
    let mut s = String::new();
    while j < b.len() && b[j] != b'"' {
        if b[j] == b'\\' && j + 1 < b.len() {
            if b[j + 1] == b'\n' {
                j += 2;
                while j < b.len() && b[j].is_ascii_whitespace() {
                    j += 1;
                }
                continue;
            }
            s.push(b[j + 1] as char);
            j += 2;
            continue;
        }
        let c = text[j..].chars().next().expect("inside the text");
        s.push(c);
        j += c.len_utf8();
    }
    (s, (j + 1).min(b.len()))
}

/// Where the character literal opening at `open` (a `'`) closes, or `None`: a lifetime or a
/// label (`'a`) has no closing quote.
fn char_end(text: &str, open: usize) -> Option<usize> {
    let rest = &text[open..];
    if rest.as_bytes().get(1) == Some(&b'\\') {
        return rest[2..].find('\'').map(|n| open + 2 + n);
    }
    let c = rest[1..].chars().next()?;
    rest[1 + c.len_utf8()..]
        .starts_with('\'')
        .then(|| open + 1 + c.len_utf8())
}

fn scan(text: &str) -> Scanned {
    let b = text.as_bytes();
    let mut code = String::with_capacity(text.len());
    let mut literals = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let ident_before = |i: usize| i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
    while i < b.len() {
        let rest = &text[i..];
        let raw_hashes = rest
            .strip_prefix('r')
            .filter(|_| !ident_before(i))
            .and_then(|r| {
                let h = r.bytes().take_while(|&c| c == b'#').count();
                (r.as_bytes().get(h) == Some(&b'"')).then_some(h)
            });
        let stop = if rest.starts_with("//") {
            rest.find('\n').map_or(b.len(), |n| i + n)
        } else if rest.starts_with("/*") {
            let (mut depth, mut j) = (1, i + 2);
            while j < b.len() && depth > 0 {
                if text[j..].starts_with("/*") {
                    (depth, j) = (depth + 1, j + 2);
                } else if text[j..].starts_with("*/") {
                    (depth, j) = (depth - 1, j + 2);
                } else {
                    j += 1;
                }
            }
            j
        } else if let Some(hashes) = raw_hashes {
            let open = i + 2 + hashes;
            let close = format!("\"{}", "#".repeat(hashes));
            let end = text[open..].find(&close).map_or(b.len(), |n| open + n);
            literals.push((line, text[open..end].to_string()));
            (end + close.len()).min(b.len())
        } else if b[i] == b'"' {
            let (s, stop) = string_at(text, i);
            literals.push((line, s));
            stop
        } else if let Some(end) = (b[i] == b'\'').then(|| char_end(text, i)).flatten() {
            end + 1
        } else {
            let c = rest.chars().next().expect("inside the text");
            line += usize::from(c == '\n');
            code.push(c);
            i += c.len_utf8();
            continue;
        };
        blank(text, &mut code, &mut line, i, stop);
        i = stop;
    }
    Scanned { code, literals }
}

/// The lines (numbered) of a file's code that are not test code, comments and string
/// literals blanked, and its string literals outside test code (with their line): a
/// `#[cfg(test)]` or `#[cfg(all(test, ...))]` item (a module or a function) is skipped to its
/// closing brace, and a file under a `tests` folder or named `tests.rs` is all test code.
/// Numbered lines (or literals) of a file.
type Numbered = Vec<(usize, String)>;

fn code_and_literals(path: &Path) -> (Numbered, Numbered) {
    if path.components().any(|c| c.as_os_str() == "tests")
        || path.file_name().is_some_and(|n| n == "tests.rs")
    {
        return (Vec::new(), Vec::new());
    }
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let scanned = scan(&text);
    let mut lines = Vec::new();
    let mut test_lines = std::collections::BTreeSet::new();
    let mut skipping = false;
    let mut depth = 0i64;
    let mut opened = false;
    for (i, code) in scanned.code.lines().enumerate() {
        let code = code.trim();
        if !skipping && (code.starts_with("#[cfg(test)]") || code.starts_with("#[cfg(all(test")) {
            (skipping, depth, opened) = (true, 0, false);
            test_lines.insert(i + 1);
            continue;
        }
        if skipping {
            test_lines.insert(i + 1);
            depth += code.matches('{').count() as i64 - code.matches('}').count() as i64;
            opened |= code.contains('{');
            if (opened && depth <= 0) || (!opened && code.ends_with(';')) {
                skipping = false;
            }
            continue;
        }
        if !code.is_empty() {
            lines.push((i + 1, code.to_string()));
        }
    }
    let literals = (scanned.literals.into_iter())
        .filter(|(n, _)| !test_lines.contains(n))
        .collect();
    (lines, literals)
}

/// The original text of line `n` of `path`, trimmed (for messages).
fn source_line(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().nth(n - 1).unwrap_or("").trim().to_string()
}

/// The Rust type of every registered leg kind and engine, and every engine's searcher: the
/// `module::Type` entries of the `kinds!` and `engines!` lists, and each `impl Engine for T`
/// in the engines' files.
fn kind_and_engine_types() -> Vec<String> {
    let read = |p: &str| std::fs::read_to_string(root().join(p)).unwrap();
    let mut out = Vec::new();
    for (file, list) in [
        ("legs/src/kinds/mod.rs", "kinds! {"),
        ("legs/src/engine/mod.rs", "engines! {"),
    ] {
        let text = read(file);
        let start = text
            .find(list)
            .unwrap_or_else(|| panic!("{file}: no `{list}`"))
            + list.len();
        let body = &text[start..start + text[start..].find('}').unwrap()];
        for entry in body.split(',') {
            if let Some((_, ty)) = entry.trim().split_once("::") {
                out.push(ty.trim().to_string());
            }
        }
    }
    for path in rust_files("legs/src/engine") {
        let text = std::fs::read_to_string(&path).unwrap();
        for part in text.split("impl Engine for ").skip(1) {
            let ty: String = part
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push(ty);
        }
    }
    out.sort();
    out.dedup();
    assert!(
        out.len() > 20 && out.iter().any(|t| t == "QdrantDense"),
        "the registries' types were not found: {out:?}"
    );
    out
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `code` names type `ty` as a type: the whole word, not as an enum's variant
/// (`Task::Run`, `SideKind::Dense`: a variant follows a capitalised segment).
fn names_type(code: &str, ty: &str) -> bool {
    let mut from = 0;
    while let Some(at) = code[from..].find(ty).map(|n| from + n) {
        from = at + ty.len();
        let before = &code[..at];
        if before.chars().next_back().is_some_and(is_word)
            || code[from..].chars().next().is_some_and(is_word)
        {
            continue;
        }
        let variant = before.strip_suffix("::").is_some_and(|p| {
            let seg: String = p.chars().rev().take_while(|&c| is_word(c)).collect();
            seg.chars().last().is_some_and(char::is_uppercase)
        });
        if !variant {
            return true;
        }
    }
    false
}

/// The kind or engine names a string literal holds: the whole literal (`"qdrant"`), or a
/// value after `kind:` or `engine:` in YAML or JSON text inside it.
fn names_in_literal<'a>(lit: &str, names: &[&'a str]) -> Vec<&'a str> {
    let mut out: Vec<&str> = names.iter().copied().filter(|n| lit == *n).collect();
    for key in ["kind", "engine"] {
        let mut rest = lit;
        while let Some(at) = rest.find(key) {
            let word_before = rest[..at].chars().next_back().is_some_and(is_word);
            rest = &rest[at + key.len()..];
            let Some(value) = rest.trim_start_matches(['"', '\'']).strip_prefix(':') else {
                continue;
            };
            let word: String = value
                .trim_start_matches(|c: char| c.is_whitespace() || c == '"' || c == '\'')
                .chars()
                .take_while(|&c| is_word(c))
                .collect();
            if !word_before {
                out.extend(names.iter().copied().filter(|n| *n == word));
            }
        }
    }
    out
}

#[test]
fn the_harness_names_no_leg_kind_and_no_engine() {
    let names: Vec<&str> = KINDS
        .iter()
        .map(|k| k.name)
        .chain(ENGINES.iter().map(|e| e.name))
        .collect();
    let types = kind_and_engine_types();
    // A command's default campaign *leg* (a name in campaign.yaml, which the user can change),
    // not a kind; and the run file's own name in a message about a run file.
    let allowed = [
        (
            "commands/bench/assembly.rs",
            "default_value = \"multi_horizon\"",
        ),
        (
            "commands/serving_parity.rs",
            "default_value = \"graph_rescue\"",
        ),
        ("analysis/eval.rs", "DataError::malformed(run, \"run\""),
    ];
    // A harness enum's own variant of the same name as a kind's type, declared.
    let allowed_types = [("commands/mod.rs", "Run,")];
    let mut found = Vec::new();
    for path in rust_files("harness/src") {
        let rel = path.strip_prefix(root().join("harness/src")).unwrap();
        let rel = rel.to_string_lossy().replace('\\', "/");
        let (lines, literals) = code_and_literals(&path);
        for (n, code) in &lines {
            if allowed_types.iter().any(|(f, s)| rel == *f && code == s) {
                continue;
            }
            for ty in types.iter().filter(|ty| names_type(code, ty)) {
                found.push(format!("harness/src/{rel}:{n}: type `{ty}`: {code}"));
            }
        }
        for (n, lit) in &literals {
            let named = names_in_literal(lit, &names);
            let line = source_line(&path, *n);
            if named.is_empty() || allowed.iter().any(|(f, s)| rel == *f && line.contains(s)) {
                continue;
            }
            found.push(format!("harness/src/{rel}:{n}: {named:?} in \"{lit}\""));
        }
    }
    assert!(
        found.is_empty(),
        "the harness names a leg kind or an engine; ask the registered item instead \
         (hopbench_legs::kinds::KINDS, hopbench_legs::engine::ENGINES):\n{}",
        found.join("\n")
    );
}

#[test]
fn only_the_qdrant_engines_files_name_its_build_feature() {
    // the shard (datasets) and the engine (legs); Cargo.toml files are not Rust
    let owners = ["datasets/src/hnsw/", "legs/src/engine/qdrant"];
    let mut found = Vec::new();
    for crate_dir in ["datasets/src", "legs/src", "harness/src"] {
        for path in rust_files(crate_dir) {
            let rel = path
                .strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if owners.iter().any(|o| rel.starts_with(o)) {
                continue;
            }
            let (lines, literals) = code_and_literals(&path);
            for (n, code) in &lines {
                let feature = code.contains("feature =")
                    && (literals.iter()).any(|(m, l)| m == n && l == "qdrant");
                if feature {
                    found.push(format!("{rel}:{n}: {}", source_line(&path, *n)));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "the `qdrant` feature is named outside the Qdrant engine's files; ask \
         hopbench_datasets::hnsw::BUILT or the engine's EngineKind::BUILT instead:\n{}",
        found.join("\n")
    );
}

/// The scanner itself: test items are skipped, code after them is read, literals are read
/// whole (over lines, raw, escaped) and comments are not code.
#[test]
fn the_scanner_skips_test_items_and_reads_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("x.rs");
    std::fs::write(
        &f,
        "fn a() { let k = \"dense\"; }\n#[cfg(test)]\nmod tests {\n    fn b() { \"qdrant\" }\n}\n\
         #[cfg(all(test, feature = \"qdrant\"))]\n#[test]\nfn c() {\n}\nfn d() { \"bm25\" } // \"run\"\n\
         fn e<'a>(x: &'a str) -> char { let _ = r#\"{kind: \"cdr\"}\"#; '\"' }\n\
         const Y: &str = \"a \\\n    b\"; /* QdrantSpec */ type Z = ExactDense;\n",
    )
    .unwrap();
    let (lines, literals) = code_and_literals(&f);
    assert_eq!(
        literals,
        vec![
            (1, "dense".to_string()),
            (10, "bm25".to_string()),
            (11, "{kind: \"cdr\"}".to_string()),
            (12, "a b".to_string()),
        ],
        "{lines:?}"
    );
    let code: Vec<usize> = lines.iter().map(|(n, _)| *n).collect();
    assert_eq!(code, [1, 10, 11, 12, 13]);
    assert!(
        !lines.iter().any(|(_, c)| c.contains("QdrantSpec")),
        "{lines:?}"
    );
    assert!(names_type(&lines[4].1, "ExactDense"), "{lines:?}");
}

/// What counts as naming: a type as a type (not an enum's variant of the same name), a kind
/// or engine as a whole literal or a `kind:` / `engine:` value inside YAML or JSON text.
#[test]
fn naming_is_told_from_mere_words() {
    assert!(names_type(
        "use hopbench_legs::engine::{ExactDense, Side};",
        "ExactDense"
    ));
    assert!(names_type("let q = QdrantSpec { hnsw_ef };", "QdrantSpec"));
    assert!(!names_type("const TASK: Task = Task::Run;", "Run"));
    assert!(!names_type("SideKind::Dense.key()", "Dense"));
    assert!(!names_type("struct RunFlags;", "Run"));
    let names = ["dense", "qdrant", "cdr"];
    assert_eq!(names_in_literal("qdrant", &names), ["qdrant"]);
    assert_eq!(
        names_in_literal("{engine: qdrant, m: 4}", &names),
        ["qdrant"]
    );
    assert_eq!(names_in_literal("{\"kind\": \"cdr\"}", &names), ["cdr"]);
    assert_eq!(
        names_in_literal("the dense side of the leg", &names),
        Vec::<&str>::new()
    );
    assert_eq!(names_in_literal("mykind: cdr", &names), Vec::<&str>::new());
}
