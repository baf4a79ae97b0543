//! Every `hopbench ...` command line in the README and the book is parsed by the real command
//! line, so the docs cannot name a command or a flag that does not exist.

use std::path::{Path, PathBuf};

/// The Markdown files of the docs: the README, CONTRIBUTING and every chapter of the book.
fn doc_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = vec![root.join("README.md"), root.join("CONTRIBUTING.md")];
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(root.join("docs/src"))
        .expect("docs/src is in the repository")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    files.extend(chapters);
    files
}

/// The command lines of the shell blocks of one Markdown text: `(line number, arguments after
/// hopbench)`. A line is a command when, after a `$ ` prompt and `VAR=value` assignments, it
/// starts with `hopbench` or is `cargo run ... -- ARGS`; `\`-continued lines are joined, and
/// the command ends at a comment, a pipe, a redirection or a `&&`/`;`.
fn command_lines(text: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let mut in_shell = false;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            in_shell = !in_shell && matches!(info.trim(), "sh" | "bash" | "console" | "shell");
            continue;
        }
        if !in_shell {
            continue;
        }
        let (start, joined) = match pending.take() {
            Some((start, mut acc)) => {
                acc.push(' ');
                acc.push_str(trimmed);
                (start, acc)
            }
            None => (i + 1, trimmed.to_string()),
        };
        if let Some(head) = joined.strip_suffix('\\') {
            pending = Some((start, head.to_string()));
            continue;
        }
        for part in joined.split("&&").flat_map(|p| p.split(';')) {
            if let Some(args) = hopbench_args(part) {
                out.push((start, args));
            }
        }
    }
    out
}

/// The arguments of one shell command if it runs hopbench.
fn hopbench_args(command: &str) -> Option<Vec<String>> {
    let command = command.split(" #").next().unwrap_or("");
    let command = command.split(['|', '>', '<']).next().unwrap_or("");
    let words = shell_words(command.trim().trim_start_matches("$ "));
    let mut words = words
        .into_iter()
        .skip_while(|w| is_assignment(w))
        .peekable();
    let first = words.next()?;
    let args: Vec<String> = if first == "hopbench" || first.ends_with("/hopbench") {
        words.collect()
    } else if first == "cargo" && words.peek().is_some_and(|w| w == "run") {
        words.skip_while(|w| w != "--").skip(1).collect()
    } else {
        return None;
    };
    Some(args)
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
    })
}

/// Splits on blanks outside single and double quotes (the quotes are removed).
fn shell_words(s: &str) -> Vec<String> {
    let (mut words, mut word, mut quote, mut any) = (Vec::new(), String::new(), None, false);
    for c in s.chars() {
        match (quote, c) {
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any {
                    words.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            (_, c) => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(word);
    }
    words
}

#[test]
fn every_command_line_in_the_docs_parses() {
    let mut checked = 0;
    let mut bad = Vec::new();
    for file in doc_files() {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue; // CONTRIBUTING.md is optional
        };
        for (line, args) in command_lines(&text) {
            let argv = std::iter::once("hopbench".to_string()).chain(args.iter().cloned());
            checked += 1;
            if let Err(e) = hopbench::commands::cli().try_get_matches_from(argv) {
                use clap::error::ErrorKind;
                // `--help`/`--version` lines parse: clap answers them with text
                if !matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                    let first = e.to_string().lines().next().unwrap_or("").to_string();
                    bad.push(format!(
                        "{}:{line}: hopbench {}: {first}",
                        file.display(),
                        args.join(" ")
                    ));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {checked} command lines do not parse:\n{}",
        bad.len(),
        bad.join("\n")
    );
    assert!(
        checked >= 20,
        "only {checked} command lines found: is the extraction broken?"
    );
}

#[test]
fn the_extraction_sees_continuations_env_prefixes_cargo_run_and_ignores_prose() {
    let text = "prose hopbench run-matrix --nope\n```sh\n$ RAYON_NUM_THREADS=2 hopbench run-matrix \\\n    --threads 2 | head\nscripts/setup && cargo run --release -- legs --campaign 'a b.yaml'\nhopbench status   # done / stale\necho hopbench\n```\n```text\nhopbench not-a-command\n```\n";
    let got = command_lines(text);
    assert_eq!(
        got,
        vec![
            (
                3,
                vec!["run-matrix".to_string(), "--threads".into(), "2".into()]
            ),
            (
                5,
                vec!["legs".to_string(), "--campaign".into(), "a b.yaml".into()]
            ),
            (6, vec!["status".to_string()]),
        ]
    );
    // and a flag that does not exist is caught
    let argv = ["hopbench", "run-matrix", "--no-such-flag"];
    assert!(hopbench::commands::cli()
        .try_get_matches_from(argv)
        .is_err());
}
