//! `lexical_content_only`: BM25 over each chunk's text alone, without the header its protocol
//! puts before it (`missing-inputs` where no chunk has one): with `dense_content_only`, the
//! text-alone ablation of a title + text protocol.

use super::{Role, Build, LegKind};
use crate::engine::Bm25;
use crate::first_stage::{Pool, Single};
use crate::flat_params;
use crate::leg::{Leg, LegError, Ranked};

flat_params! {
    /// `lexical_content_only`'s parameters.
    pub struct LexicalContentOnly {
        /// Candidates returned.
        pub pool: Pool,
    }
}

impl LegKind for LexicalContentOnly {
    const NAME: &'static str = "lexical_content_only";
    const ABOUT: &'static str = "BM25 over the text alone, without the header (ablation)";
    const READS_VECTORS: bool = false;
    const ROLE: Role = Role::Ablation;

    fn build(&self, b: &Build<'_>) -> Result<Box<dyn Leg>, LegError> {
        let engine = Bm25::content_only(b.export.clone())?;
        Ok(Ranked::leg(b.export, Single::new(Box::new(engine), self.pool.pool_k)))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use hopbench_datasets::export::Export;
    use hopbench_datasets::protocol::Protocol;
    use hopbench_datasets::{Passage, Question, RawDataset};

    use crate::leg::{LegError, QueryInput};
    use crate::registry::LegSpec;
    use crate::rescue::fixtures::export_under;

    /// Titled passages whose titles carry words their texts lack, so the title moves BM25 and
    /// the vectors.
    fn raw() -> RawDataset {
        let p = |id: &str, title: &str, text: &str| Passage {
            id: id.into(),
            doc: Some(title.into()),
            title: title.into(),
            text: text.into(),
            header: None,
        };
        RawDataset {
            passages: vec![
                p("a", "Lovelace", "she wrote the first program for the engine"),
                p("b", "Babbage", "he designed the analytical engine in london"),
                p("c", "Menabrea", "an italian engineer wrote notes on the engine"),
                p("d", "Turin", "a city where the engine was first described"),
            ],
            questions: vec![
                Question::new("q1", "who wrote about the engine", vec!["a".into()]),
                Question::new("q2", "Babbage engine london", vec!["b".into()]),
                Question::new("q3", "Turin Menabrea notes", vec!["c".into()]),
            ],
        }
    }

    fn exports() -> (Arc<Export>, Arc<Export>) {
        (
            Arc::new(export_under(|| Ok(raw()), 16, Protocol::TITLE_NEWLINE)),
            Arc::new(export_under(|| Ok(raw()), 16, Protocol::TEXT)),
        )
    }

    /// Every query's ranked (chunk, score bits) under `kind` over `export`.
    fn rankings(kind: &str, export: &Arc<Export>) -> Result<Vec<Vec<(u32, u32)>>, LegError> {
        let spec: LegSpec = serde_json::from_str(&format!(r#"{{"kind":"{kind}"}}"#)).unwrap();
        let leg = spec.build(kind, export.clone())?;
        (0..export.queries.len())
            .map(|q| {
                Ok(leg
                    .retrieve(&QueryInput::from_export(export, q))?
                    .ranked
                    .iter()
                    .map(|c| (c.chunk, c.score.to_bits()))
                    .collect())
            })
            .collect()
    }

    #[test]
    fn the_content_only_legs_are_the_text_alone_runs() {
        let (titled, text) = exports();
        for (ablation, full) in [
            ("lexical_content_only", "lexical"),
            ("dense_content_only", "dense"),
        ] {
            // bit for bit what the leg gave when the text alone was indexed
            assert_eq!(
                rankings(ablation, &titled).unwrap(),
                rankings(full, &text).unwrap(),
                "{ablation}"
            );
            // and not what the title + text index gives (the titles carry query words)
            assert_ne!(
                rankings(full, &titled).unwrap(),
                rankings(full, &text).unwrap(),
                "{full}"
            );
            // where the text alone is what is indexed, the ablation has nothing to ablate
            match rankings(ablation, &text) {
                Err(LegError::MissingInputs(why)) => {
                    assert!(why.contains("text alone"), "{why}")
                }
                other => panic!("{ablation} on a text-only export: {other:?}"),
            }
        }
    }
}
