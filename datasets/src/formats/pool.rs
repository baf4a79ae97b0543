//! [`pool`]: several read datasets as one corpus, every id prefixed with its part's name.

use std::collections::HashSet;

use crate::model::RawDataset;

/// Union several datasets into one corpus: every passage id, question id and document of the
/// part named `name` becomes `"<name>:<id>"`, and gold, chain slots and decomposition gold are
/// rewritten to match, so the parts cannot collide and each question's gold stays its own.
/// Passages keep their order within a part, parts keep the given order; titles, texts,
/// headers, conversations and labels are unchanged, except that every question gets the label
/// `pool` = its part's name.
///
/// # Panics
///
/// If a name is empty, contains `:`, or appears twice: the prefixed ids would not be unique.
/// Callers that take names from configuration should check them first.
pub fn pool(parts: Vec<(String, RawDataset)>) -> RawDataset {
    let mut names = HashSet::new();
    for (name, _) in &parts {
        assert!(
            !name.is_empty() && !name.contains(':') && names.insert(name.clone()),
            "pool: part names must be non-empty, distinct and free of ':' (got {name:?})"
        );
    }
    let mut out = RawDataset::default();
    for (name, part) in parts {
        let p = |id: &str| format!("{name}:{id}");
        let ids = |list: Vec<String>| list.iter().map(|id| p(id)).collect::<Vec<_>>();
        for mut passage in part.passages {
            passage.id = p(&passage.id);
            passage.doc = passage.doc.map(|d| p(&d));
            out.passages.push(passage);
        }
        for mut q in part.questions {
            q.id = p(&q.id);
            q.gold = ids(q.gold);
            q.grades = std::mem::take(&mut q.grades)
                .into_iter()
                .map(|(id, g)| (p(&id), g))
                .collect();
            q.chain = q.chain.map(|chain| chain.into_iter().map(ids).collect());
            if let Some(dec) = &mut q.decomposition {
                for sub in dec.iter_mut() {
                    sub.gold = ids(std::mem::take(&mut sub.gold));
                }
            }
            q.labels.insert("pool".to_string(), name.clone());
            out.questions.push(q);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{hotpotqa, musique};
    use super::*;
    use crate::formats::testutil::real_data_dir;
    use crate::model::{Passage, Question, SubQuestion};

    fn part(tag: &str) -> RawDataset {
        let passage = |id: &str| Passage {
            id: id.to_string(),
            doc: Some(format!("doc-{id}")),
            title: format!("T{tag}"),
            text: format!("text {tag} {id}"),
            header: None,
        };
        let mut q = Question::new(
            "q1",
            format!("question {tag}"),
            vec!["a".into(), "b".into()],
        );
        q.chain = Some(vec![vec!["a".into()], vec!["b".into()]]);
        q.decomposition = Some(vec![SubQuestion {
            question: "h".into(),
            answer: "x".into(),
            gold: vec!["a".into()],
        }]);
        RawDataset {
            passages: vec![passage("a"), passage("b")],
            questions: vec![q],
        }
    }

    #[test]
    fn pool_prefixes_everything() {
        let d = pool(vec![
            ("m".to_string(), part("1")),
            ("h".to_string(), part("2")),
        ]);
        let ids: Vec<_> = d.passages.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["m:a", "m:b", "h:a", "h:b"]);
        assert_eq!(d.passages[2].doc.as_deref(), Some("h:doc-a"));
        assert_eq!(d.passages[2].text, "text 2 a");
        let q = &d.questions[1];
        assert_eq!(q.id, "h:q1");
        assert_eq!(q.text, "question 2");
        assert_eq!(q.gold, ["h:a", "h:b"]);
        assert_eq!(
            q.chain,
            Some(vec![vec!["h:a".to_string()], vec!["h:b".to_string()]])
        );
        assert_eq!(q.decomposition.as_ref().unwrap()[0].gold, ["h:a"]);
        assert_eq!(q.labels["pool"], "h");
        // ids stay unique and every gold id resolves
        let all: HashSet<_> = d.passages.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(all.len(), d.passages.len());
        assert!(d
            .questions
            .iter()
            .flat_map(|q| &q.gold)
            .all(|g| all.contains(g.as_str())));
        assert_eq!(pool(Vec::new()), RawDataset::default());
    }

    #[test]
    #[should_panic(expected = "distinct")]
    fn pool_rejects_repeated_names() {
        pool(vec![
            ("m".to_string(), part("1")),
            ("m".to_string(), part("2")),
        ]);
    }

    #[test]
    fn pool_real_sets() {
        let Some(root) = real_data_dir() else {
            return;
        };
        let m = root.join("musique-train100");
        let h = root.join("hotpotqa-train100");
        let parts = vec![
            (
                "musique".to_string(),
                musique::read(
                    &m.join("musique_train.json"),
                    Some(&m.join("musique_train_corpus.json")),
                )
                .unwrap(),
            ),
            (
                "hotpotqa".to_string(),
                hotpotqa::read(
                    &h.join("hotpotqa_train.json"),
                    Some(&h.join("hotpotqa_train_corpus.json")),
                )
                .unwrap(),
            ),
        ];
        let d = pool(parts);
        assert_eq!(d.passages.len(), 1890 + 994);
        assert_eq!(d.questions.len(), 200);
        let all: HashSet<_> = d.passages.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(all.len(), d.passages.len());
        for q in &d.questions {
            assert!(q.gold.iter().all(|g| all.contains(g.as_str())), "{}", q.id);
            assert!(
                q.chain
                    .iter()
                    .flatten()
                    .flatten()
                    .all(|g| all.contains(g.as_str())),
                "{}",
                q.id
            );
        }
    }
}
