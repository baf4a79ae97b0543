//! Each dataset's indexing protocol ([`hopbench_datasets::protocol`]), resolved from the
//! campaign: the `context_header` it gives, else its format's published protocol.
//!
//! | format | default `context_header` | indexed text |
//! |---|---|---|
//! | `musique`, `hotpotqa`, `twowiki` | `title` | `title + "\n" + text` (HippoRAG 2) |
//! | `beir` | `title` | `title + " " + text` (BEIR) |
//! | `mtrag` | `none` | the text (its passages have no title) |
//! | `documents` | `none` | each chunk as cut (no published baseline) |
//! | `synthetic` | `as_published` | its breadcrumb `+ "\n" +` text |
//! | `pool`, `dialogues` | `as_published` | what their members index |
//!
//! One export joins one way, so a pool (or dialogues dataset) whose members index differently
//! is an error at load unless it sets its own `context_header` (and then its members must still
//! share a joiner): its numbers would otherwise mix two protocols under one label.
//!
//! The campaign loads through this module, so it sees a dataset only as the campaign declares
//! it ([`Declared`], handed over by a lookup), not the campaign itself.

use hopbench_datasets::export::Export;
use hopbench_datasets::protocol::{Header, Joiner, Protocol};
use serde::{Deserialize, Serialize};

/// What goes before a passage's text in what is indexed and embedded (`context_header`).
/// Absent from the campaign, it is the format's published protocol, filled in when the
/// campaign loads; the other values are labelled ablations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeaderMode {
    /// What the dataset publishes: the generated world's breadcrumb; the text alone for the
    /// raw formats, which publish none; for a pool or a dialogues dataset, what its members
    /// index.
    AsPublished,
    /// The passage title, joined as the format's baselines join it.
    Title,
    /// Nothing: the text alone.
    None,
}

/// A dataset as the campaign declares it, as far as its protocol goes.
pub struct Declared<'a> {
    /// Its `context_header` (`None`: the default of its kind).
    pub header: Option<HeaderMode>,
    /// What it is made of.
    pub kind: DeclaredKind<'a>,
}

/// What a dataset is made of, as far as its protocol goes.
pub enum DeclaredKind<'a> {
    /// A raw format, with the protocol of its published baselines.
    Raw(Protocol),
    /// The generated world, which publishes its own headers.
    Synthetic,
    /// A pool or a dialogues dataset: made of these members' passages.
    Members(&'a [String]),
}

/// The `context_header` a dataset of `kind` has when the campaign gives none.
pub fn default_header(kind: &DeclaredKind<'_>) -> HeaderMode {
    match kind {
        DeclaredKind::Raw(p) => match p.header {
            Header::Title => HeaderMode::Title,
            Header::None => HeaderMode::None,
            Header::Published => HeaderMode::AsPublished,
        },
        DeclaredKind::Synthetic | DeclaredKind::Members(_) => HeaderMode::AsPublished,
    }
}

/// The protocol of `header` over passages joined with `joiner`, for a dataset that publishes
/// its own headers or not.
fn from_mode(header: HeaderMode, joiner: Joiner, publishes_headers: bool) -> Protocol {
    match header {
        HeaderMode::Title => Protocol {
            header: Header::Title,
            joiner,
        },
        HeaderMode::AsPublished if publishes_headers => Protocol::PUBLISHED,
        HeaderMode::AsPublished | HeaderMode::None => Protocol::TEXT,
    }
}

/// The protocol dataset `name` is indexed under, or why it has none (a pool of members that
/// index differently); `lookup` declares any dataset of the campaign by name (its references
/// are valid: checked before this is called).
pub fn of<'a>(name: &str, lookup: &dyn Fn(&str) -> Declared<'a>) -> Result<Protocol, String> {
    let declared = lookup(name);
    let header = declared
        .header
        .unwrap_or_else(|| default_header(&declared.kind));
    let members: &[String] = match declared.kind {
        DeclaredKind::Raw(p) => return Ok(from_mode(header, p.joiner, false)),
        DeclaredKind::Synthetic => return Ok(from_mode(header, Joiner::Newline, true)),
        DeclaredKind::Members(m) => m,
    };
    let resolved = members
        .iter()
        .map(|m| of(m, lookup).map(|p| (m.as_str(), p)))
        .collect::<Result<Vec<_>, String>>()?;
    let (first, p) = resolved[0];
    let differ = |same: &dyn Fn(&Protocol) -> bool, what: &str| {
        resolved.iter().find(|(_, q)| !same(q)).map(|(m, q)| {
            format!(
                "its members index differently: `{first}` {}, `{m}` {} ({what}); one export \
                 indexes one way, so set `context_header` on it or pool members of one protocol",
                p.describe(),
                q.describe()
            )
        })
    };
    if header == HeaderMode::AsPublished {
        return match differ(&|q| q == &p, "as_published keeps each member's") {
            Some(e) => Err(e),
            None => Ok(p),
        };
    }
    if header == HeaderMode::None {
        return Ok(Protocol::TEXT);
    }
    // members without a header do not join anything, so only the others must agree
    let joiners: Vec<Joiner> = resolved
        .iter()
        .filter(|(_, q)| q.header != Header::None)
        .map(|(_, q)| q.joiner)
        .collect();
    let joiner = joiners.first().copied().unwrap_or(Joiner::Newline);
    if let Some(e) = differ(
        &|q| q.header == Header::None || q.joiner == joiner,
        "they join a header differently",
    ) {
        return Err(e);
    }
    let publishes = resolved.iter().all(|(_, q)| q.header == Header::Published);
    Ok(from_mode(header, joiner, publishes))
}

/// The label a cell prints: its export's protocol (the text alone when no chunk got a header,
/// e.g. `context_header: title` over untitled passages), or, without an export, the one the
/// campaign declares (`declared`, empty where it has none).
pub fn label(declared: Result<Protocol, String>, export: Option<&Export>) -> String {
    match export {
        Some(e) if e.manifest.stats.chunks_with_header == 0 => Protocol::TEXT.label().into(),
        Some(e) => e.manifest.protocol.label().into(),
        None => declared.map_or_else(|_| String::new(), |p| p.label().into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::campaign::Campaign;

    fn campaign(datasets: &str) -> anyhow::Result<Campaign> {
        Campaign::parse(
            &format!("datasets:\n{datasets}legs: {{b: {{kind: bm25}}}}\n"),
            "test",
        )
    }

    #[test]
    fn every_format_defaults_to_its_published_protocol() {
        let c = campaign(
            "  m: {format: musique, files: {questions: q.json}}
  h: {format: hotpotqa, files: {questions: q.json}}
  w: {format: twowiki, files: {questions: q.json}}
  t: {format: mtrag, files: {reference: r.jsonl, qrels: [q.tsv]}}
  b: {format: beir, files: {corpus: c.jsonl, queries: q.jsonl, qrels: q.tsv}}
  s: {format: synthetic}
  p: {format: pool, pool: [m, h]}
  d: {format: dialogues, derive_from: m}
  sd: {format: dialogues, derive_from: s}
",
        )
        .unwrap();
        let got = |n: &str| c.protocol(n).unwrap();
        for n in ["m", "h", "w", "p", "d"] {
            assert_eq!(got(n), Protocol::TITLE_NEWLINE, "{n}");
        }
        assert_eq!(got("b"), Protocol::TITLE_SPACE);
        assert_eq!(got("t"), Protocol::TEXT);
        assert_eq!(got("s"), Protocol::PUBLISHED);
        assert_eq!(got("sd"), Protocol::PUBLISHED);
        // the defaults are written into the campaign (so --show-settings prints them)
        assert_eq!(c.datasets["m"].context_header, Some(HeaderMode::Title));
        assert_eq!(c.datasets["t"].context_header, Some(HeaderMode::None));
        assert_eq!(
            c.datasets["s"].context_header,
            Some(HeaderMode::AsPublished)
        );
        assert_eq!(
            c.datasets["p"].context_header,
            Some(HeaderMode::AsPublished)
        );
    }

    #[test]
    fn a_dataset_may_choose_another_protocol() {
        let c = campaign(
            "  m: {format: musique, files: {questions: q.json}, context_header: none}
  b: {format: beir, files: {corpus: c.jsonl, queries: q.jsonl, qrels: q.tsv}, context_header: as_published}
  t: {format: mtrag, files: {reference: r.jsonl, qrels: [q.tsv]}, context_header: title}
  s: {format: synthetic, context_header: title}
  s0: {format: synthetic, context_header: none}
",
        )
        .unwrap();
        assert_eq!(c.protocol("m").unwrap(), Protocol::TEXT);
        // the raw formats publish no header: as_published is the text alone
        assert_eq!(c.protocol("b").unwrap(), Protocol::TEXT);
        assert_eq!(c.protocol("t").unwrap(), Protocol::TITLE_NEWLINE);
        assert_eq!(c.protocol("s").unwrap(), Protocol::TITLE_NEWLINE);
        assert_eq!(c.protocol("s0").unwrap(), Protocol::TEXT);
    }

    #[test]
    fn pools_of_members_that_index_differently_are_refused_unless_they_choose() {
        let members = "  m: {format: musique, files: {questions: q.json}}
  t: {format: mtrag, files: {reference: r.jsonl, qrels: [q.tsv]}}
  b: {format: beir, files: {corpus: c.jsonl, queries: q.jsonl, qrels: q.tsv}}
";
        let e = format!(
            "{:#}",
            campaign(&format!("{members}  p: {{format: pool, pool: [m, t]}}\n")).unwrap_err()
        );
        assert!(
            e.contains("datasets.p: field `context_header`")
                && e.contains("`m` title+text (joined by a newline), `t` text"),
            "{e}"
        );
        // choosing one protocol for the pool resolves it
        let c = campaign(&format!(
            "{members}  p: {{format: pool, pool: [m, t], context_header: title}}\n  q: {{format: pool, pool: [m, b], context_header: none}}\n"
        ))
        .unwrap();
        assert_eq!(c.protocol("p").unwrap(), Protocol::TITLE_NEWLINE);
        assert_eq!(c.protocol("q").unwrap(), Protocol::TEXT);
        // ...unless the members join a title differently (one export joins one way)
        let e = format!(
            "{:#}",
            campaign(&format!(
                "{members}  p: {{format: pool, pool: [m, b], context_header: title}}\n"
            ))
            .unwrap_err()
        );
        assert!(e.contains("join a header differently"), "{e}");
    }
}
