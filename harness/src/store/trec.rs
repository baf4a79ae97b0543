//! TREC run and qrels files, so trec_eval, pytrec_eval or ranx can recompute our numbers.
//!
//! trec_eval re-sorts a run by score (descending) and breaks ties by document id in its own way,
//! so the score column is not the leg's score but `n - rank` for a list of length `n`: strictly
//! decreasing integers, which make any evaluator see exactly our order. TREC ids cannot contain
//! white space, so chunk and query ids are percent-encoded (`%` and white space only).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use hopbench_datasets::export::Export;

use crate::store::fsx;

/// Percent-encodes `%` and white space so the id is one TREC token.
pub fn encode_id(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for c in id.chars() {
        if c == '%' || c.is_whitespace() {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                let _ = write!(out, "%{b:02X}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Writes the run file of `ranked` (each query's id with its chunk indices in rank order) to
/// `path` atomically, a line at a time: `qid Q0 docno rank score tag` per selected chunk. The
/// lines go straight to the file: a run of 100,000 queries is never held as one string.
pub fn write_run<'a>(
    path: &Path,
    export: &Export,
    ranked: impl IntoIterator<Item = (&'a str, &'a [u32])>,
    tag: &str,
) -> Result<()> {
    fsx::write_with(path, |tmp| {
        let file = std::fs::File::create(tmp)
            .with_context(|| format!("{}: cannot create", tmp.display()))?;
        let mut out = std::io::BufWriter::new(file);
        run_lines(&mut out, export, ranked, tag)
            .and_then(|()| std::io::Write::flush(&mut out))
            .with_context(|| format!("{}: cannot write", tmp.display()))
    })
}

/// The lines of [`write_run`], to `out`.
fn run_lines<'a>(
    out: &mut impl std::io::Write,
    export: &Export,
    ranked: impl IntoIterator<Item = (&'a str, &'a [u32])>,
    tag: &str,
) -> std::io::Result<()> {
    for (qid, list) in ranked {
        let qid = encode_id(qid);
        let n = list.len();
        for (rank, &c) in list.iter().enumerate() {
            writeln!(
                out,
                "{qid} Q0 {} {} {} {tag}",
                encode_id(&export.chunks[c as usize].id),
                rank + 1,
                n - rank
            )?;
        }
    }
    Ok(())
}

/// The qrels text: `qid 0 docno grade` per gold chunk of each of `query_indices` (positions in
/// `queries`, each a query id with its gold chunk ids); the grade is the chunk's in `grades`
/// (the same positions, each in gold order), 1 where the gold is binary (`None`).
pub fn qrels_text(
    queries: &[(&str, Vec<&str>)],
    grades: &[Option<&[u32]>],
    query_indices: &[usize],
) -> String {
    let mut out = String::new();
    for &q in query_indices {
        let (id, gold) = &queries[q];
        let qid = encode_id(id);
        for (i, g) in gold.iter().enumerate() {
            let grade = grades.get(q).copied().flatten().map_or(1, |gr| gr[i]);
            let _ = writeln!(out, "{qid} 0 {} {grade}", encode_id(g));
        }
    }
    out
}

/// The header line of [`chunks_text`].
pub const CHUNKS_HEADER: &str = "chunk_id\tdoc_id\tchar_start\tchar_end";

/// `runs/<dataset>/chunks.tsv`: where each chunk cut from a longer document lies, so every
/// docno of the dataset's run files cites a source span: a header line, then one
/// `chunk_id<TAB>doc_id<TAB>char_start<TAB>char_end` line per chunk with a span, in chunk id
/// order. Ids are encoded as in the run files ([`encode_id`]), so a docno is looked up as it
/// is; `[char_start, char_end)` counts Unicode code points of the document's text (Python's
/// `text[char_start:char_end]`). `None` when no chunk has a span (passages as published).
pub fn chunks_text(export: &Export) -> Option<String> {
    let mut out = String::new();
    for c in &export.chunks {
        let (Some(span), Some(doc)) = (c.span, c.doc) else {
            continue;
        };
        let _ = writeln!(
            out,
            "{}\t{}\t{}\t{}",
            encode_id(&c.id),
            encode_id(&export.docs[doc as usize]),
            span.start,
            span.end
        );
    }
    (!out.is_empty()).then(|| format!("{CHUNKS_HEADER}\n{out}"))
}

/// Writes `text` atomically.
pub fn write(path: &Path, text: &str) -> Result<()> {
    fsx::write_atomic(path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::{encode_id, qrels_text};

    #[test]
    fn ids_become_single_tokens() {
        assert_eq!(encode_id("Lilu (mythology)"), "Lilu%20(mythology)");
        assert_eq!(encode_id("50%\tx"), "50%25%09x");
        assert_eq!(encode_id("abc<::>3"), "abc<::>3");
    }

    #[test]
    fn qrels_carry_the_grades_of_graded_gold_and_1_for_binary_gold() {
        let queries = [("q1", vec!["a", "b c"]), ("q2", vec!["d"]), ("q3", vec![])];
        assert_eq!(
            qrels_text(&queries, &[None, None, None], &[0, 1, 2]),
            "q1 0 a 1\nq1 0 b%20c 1\nq2 0 d 1\n"
        );
        let (g1, g2): (&[u32], &[u32]) = (&[3, 1], &[2]);
        assert_eq!(
            qrels_text(&queries, &[Some(g1), Some(g2), Some(&[])], &[1, 0]),
            "q2 0 d 2\nq1 0 a 3\nq1 0 b%20c 1\n"
        );
    }
}
