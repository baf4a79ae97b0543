//! The indexing protocol: what text of a passage the BM25 index and the embedder see.
//!
//! A passage has a title and a body; published baselines differ in whether the title is
//! indexed with the body, and in how the two are joined. Indexing `title + text` instead of the
//! text alone moves recall by several points on the multi-hop sets, so numbers are comparable
//! with a published table only under that table's protocol. Each raw format declares the
//! protocol of its published baselines ([`Format::protocol`](crate::formats::Format)); a
//! campaign may choose another per dataset, as a labelled ablation.
//!
//! A protocol is two choices:
//!
//! * [`Header`]: what goes before the body: the title ([`Header::Title`]), the context header
//!   the dataset itself publishes ([`Header::Published`], the generated world's breadcrumb), or
//!   nothing ([`Header::None`]). A passage whose title (or published header) is empty gets no
//!   header, as BEIR's `(title + " " + text).strip()` gives the text alone.
//! * [`Joiner`]: how a header joins the body: `"\n"` (HippoRAG 2: `f"{title}\n{text}"`) or
//!   `" "` (BEIR and Anserini's BEIR "flat" indexes: `title + " " + text`). The BM25 analyser
//!   and the BERT tokenizer treat both as whitespace, so the joiner changes no token here; it
//!   is kept so that the indexed text is byte for byte the published one (and for tokenizers
//!   that do not).
//!
//! The protocol is applied when the export is built ([`Protocol::apply`]), recorded in its
//! manifest and hashed into its input key: a change of protocol rebuilds the export. The text
//! alone stays in the export beside it (`text`, and the content-only vectors wherever a header
//! exists), so the text-only ablation legs run on the same export.

use serde::{Deserialize, Serialize};

use crate::model::Passage;

/// What goes before a passage's body in the indexed text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Header {
    /// The passage title.
    Title,
    /// The context header the dataset publishes (none of the raw formats does; the generated
    /// world does).
    Published,
    /// Nothing: the text alone.
    None,
}

/// The separator between a header and the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Joiner {
    /// `"\n"`.
    Newline,
    /// `" "`.
    Space,
}

impl Joiner {
    /// The separator itself.
    pub fn as_str(self) -> &'static str {
        match self {
            Joiner::Newline => "\n",
            Joiner::Space => " ",
        }
    }

    /// Its name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Joiner::Newline => "newline",
            Joiner::Space => "space",
        }
    }
}

/// What a passage is indexed and embedded as: `header + joiner + text`, or the text alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Protocol {
    /// What goes before the body.
    pub header: Header,
    /// How it is joined to the body.
    pub joiner: Joiner,
}

impl Protocol {
    /// HippoRAG 2's multi-hop protocol: `f"{title}\n{text}"` (its `main.py` builds the corpus so,
    /// and its gold passages the same way).
    pub const TITLE_NEWLINE: Protocol = Protocol::of(Header::Title, Joiner::Newline);
    /// BEIR's protocol: `(title + " " + text).strip()` (its sentence-transformers corpus encoder;
    /// Anserini's BEIR "flat" indexes concatenate the same way).
    pub const TITLE_SPACE: Protocol = Protocol::of(Header::Title, Joiner::Space);
    /// The text alone.
    pub const TEXT: Protocol = Protocol::of(Header::None, Joiner::Newline);
    /// The dataset's own context header, then a newline, then the text.
    pub const PUBLISHED: Protocol = Protocol::of(Header::Published, Joiner::Newline);

    /// The protocol of these two choices: the named protocols above read as one line each.
    const fn of(header: Header, joiner: Joiner) -> Protocol {
        Protocol { header, joiner }
    }

    /// The short label printed in cells and matrix headers: `title+text`, `header+text` or
    /// `text`.
    pub fn label(&self) -> &'static str {
        match self.header {
            Header::Title => "title+text",
            Header::Published => "header+text",
            Header::None => "text",
        }
    }

    /// A longer description for reports: the label and, where there is a header, the joiner.
    pub fn describe(&self) -> String {
        match self.header {
            Header::None => self.label().to_string(),
            _ => format!("{} (joined by a {})", self.label(), self.joiner.name()),
        }
    }

    /// Sets each passage's header as the protocol says: its title, what the dataset published,
    /// or none; an empty title or header becomes no header (the text alone).
    pub fn apply(&self, passages: &mut [Passage]) {
        for p in passages {
            let header = match self.header {
                Header::Title => Some(p.title.clone()),
                Header::Published => p.header.take(),
                Header::None => None,
            };
            p.header = header.filter(|h| !h.trim().is_empty());
        }
    }

    /// The indexed text of a body with `header`.
    pub fn join(&self, header: Option<&str>, text: &str) -> String {
        match header {
            Some(h) => format!("{h}{}{text}", self.joiner.as_str()),
            None => text.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passage(title: &str, header: Option<&str>) -> Passage {
        Passage {
            id: "p".into(),
            doc: None,
            title: title.into(),
            text: "Body.".into(),
            header: header.map(str::to_string),
        }
    }

    fn indexed(p: Protocol, title: &str, header: Option<&str>) -> String {
        let mut v = vec![passage(title, header)];
        p.apply(&mut v);
        p.join(v[0].header.as_deref(), &v[0].text)
    }

    #[test]
    fn each_protocol_indexes_what_it_says() {
        assert_eq!(indexed(Protocol::TITLE_NEWLINE, "Ada", None), "Ada\nBody.");
        assert_eq!(indexed(Protocol::TITLE_SPACE, "Ada", None), "Ada Body.");
        assert_eq!(indexed(Protocol::TEXT, "Ada", Some("W > Ada")), "Body.");
        assert_eq!(
            indexed(Protocol::PUBLISHED, "Ada", Some("W > Ada")),
            "W > Ada\nBody."
        );
        // a published header is replaced by the title under a title protocol
        assert_eq!(
            indexed(Protocol::TITLE_NEWLINE, "Ada", Some("W > Ada")),
            "Ada\nBody."
        );
        // an empty title (or header) is no header, as BEIR's strip() gives the text alone
        assert_eq!(indexed(Protocol::TITLE_SPACE, "", None), "Body.");
        assert_eq!(indexed(Protocol::TITLE_NEWLINE, "  ", None), "Body.");
        assert_eq!(indexed(Protocol::PUBLISHED, "Ada", None), "Body.");
    }

    #[test]
    fn labels_and_serialisation_are_stable() {
        // the serialised form is hashed into export input keys
        assert_eq!(
            serde_json::to_string(&Protocol::TITLE_SPACE).unwrap(),
            r#"{"header":"title","joiner":"space"}"#
        );
        assert_eq!(Protocol::TITLE_NEWLINE.label(), "title+text");
        assert_eq!(Protocol::PUBLISHED.label(), "header+text");
        assert_eq!(Protocol::TEXT.label(), "text");
        assert_eq!(Protocol::TEXT.describe(), "text");
        assert_eq!(
            Protocol::TITLE_SPACE.describe(),
            "title+text (joined by a space)"
        );
    }
}
