//! The reader skeleton HotpotQA and 2WikiMultihopQA share: both publish question records
//! `{_id, question, context, supporting_facts, ...}` with `context = [[title, [sentence, ...]],
//! ...]` and `supporting_facts = [[title, sentence_index], ...]`, keyed passages by title, and
//! come either with a separate corpus file or as released (the corpus is then the union of the
//! questions' contexts). They differ only in how the corpus file is laid out, how sentences are
//! joined, and what a question's chain and labels are: a [`Layout`] holds exactly those (with
//! the format's name and protocol).
//!
//! Reading order, which decides which error a broken file reports first: the questions file is
//! parsed whole; then the corpus (the corpus file, or every question's `context` in file order);
//! then each question's `_id` (unique), `question` and `supporting_facts` (each title must be a
//! passage), and last the layout's own fields.

use std::path::Path;

use super::common::{push_unique, read_records, CorpusBuilder, Ctx, Record, SeenIds, Val};
use super::{Files, Format, Role};
use crate::error::Result;
use crate::model::{Passage, Question, RawDataset};
use crate::protocol::Protocol;

/// What one HotpotQA-style format does its own way; everything else, its [`Format`]
/// ([`format`]) and its reader ([`read`]) included, is this module's.
pub(super) trait Layout {
    /// The format's name in campaign files ([`Format::name`]).
    const NAME: &'static str;
    /// What the format's published baselines index ([`Format::protocol`]).
    const PROTOCOL: Protocol;
    /// Joins a `context` entry's sentences into the passage text (release layout).
    const SENTENCE_JOINER: &'static str;
    /// Reads the corpus file into the corpus (with [`titled_passage`]).
    fn corpus_file(path: &Path, builder: &mut CorpusBuilder) -> Result<()>;
    /// Completes a question (id, text and gold already set) from its record: chain and labels.
    fn finish(root: &Val<'_>, q: Question) -> Result<Question>;
}

/// The `files:` roles of every HotpotQA-style format: the `questions` file, and the `corpus`
/// file when there is one.
const ROLES: &[Role] = &[Role::one("questions"), Role::optional("corpus")];

/// The format of layout `L`.
pub(super) const fn format<L: Layout>() -> Format {
    Format {
        name: L::NAME,
        roles: ROLES,
        read: read_files::<L>,
        protocol: L::PROTOCOL,
    }
}

/// [`read`] from the role files of [`format`].
fn read_files<L: Layout>(files: &Files) -> Result<RawDataset> {
    read::<L>(files.one("questions"), files.optional("corpus"))
}

/// Reads `questions` (JSON list or JSONL), with the corpus file when given, else with the corpus
/// made of the questions' contexts.
pub(super) fn read<L: Layout>(questions: &Path, corpus: Option<&Path>) -> Result<RawDataset> {
    let records = read_records(questions)?;
    let mut builder = CorpusBuilder::default();
    match corpus {
        Some(path) => {
            L::corpus_file(path, &mut builder)?;
            builder.require_some(path)?;
        }
        None => {
            for record in &records {
                let ctx = record_ctx(questions, record)?;
                merge_context(
                    &ctx.root(&record.value).get("context")?,
                    L::SENTENCE_JOINER,
                    &mut builder,
                )?;
            }
            if !records.is_empty() {
                builder.require_some(questions)?;
            }
        }
    }
    let mut seen = SeenIds::default();
    let mut out = Vec::with_capacity(records.len());
    for record in &records {
        let ctx = record_ctx(questions, record)?;
        let root = ctx.root(&record.value);
        let id = root.get("_id")?.string()?;
        seen.check(&ctx, "_id", &id)?;
        let text = root.get("question")?.question()?;
        let gold = supporting_titles(&root.get("supporting_facts")?, &|t| builder.contains(t))?;
        out.push(L::finish(&root, Question::new(id, text, gold))?);
    }
    Ok(RawDataset {
        passages: builder.finish(),
        questions: out,
    })
}

/// The passage of a title-keyed corpus: id = document = title.
pub(super) fn titled_passage(title: String, text: String) -> Passage {
    Passage {
        id: title.clone(),
        doc: Some(title.clone()),
        title,
        text,
        header: None,
    }
}

/// Joins a `[sentence, ...]` list with `sep`.
pub(super) fn join_sentences(v: &Val<'_>, sep: &str) -> Result<String> {
    Ok(v.strings()?.join(sep))
}

/// The error context of a question record, named by its `_id` when it has one.
fn record_ctx<'a>(path: &'a Path, record: &Record) -> Result<Ctx<'a>> {
    let mut ctx = Ctx::new(path, record.loc);
    let id = ctx.root(&record.value).get("_id")?.string()?;
    ctx.set_id(&id);
    Ok(ctx)
}

/// The passages of `context`, merged into `corpus` with the sentences joined with `sep`: a
/// title seen again with the same text is the same passage, with another text an error.
fn merge_context(context: &Val<'_>, sep: &str, corpus: &mut CorpusBuilder) -> Result<()> {
    for entry in context.items()? {
        let parts = entry.tuple(2)?;
        let title = parts[0].string()?;
        let text = join_sentences(&parts[1], sep)?;
        corpus.merge(context.path(), titled_passage(title, text))?;
    }
    Ok(())
}

/// The distinct titles of `supporting_facts`, in first-seen order; each must name a passage for
/// which `corpus` says yes, else [`GoldNotInCorpus`](crate::Error::GoldNotInCorpus).
fn supporting_titles(facts: &Val<'_>, corpus: &dyn Fn(&str) -> bool) -> Result<Vec<String>> {
    let mut titles = Vec::new();
    for fact in facts.items()? {
        let parts = fact.tuple(2)?;
        let title = parts[0].string()?;
        parts[1].usize()?;
        if !corpus(&title) {
            return Err(parts[0].gold_missing(format!("{title:?}")));
        }
        push_unique(&mut titles, title);
    }
    Ok(titles)
}
