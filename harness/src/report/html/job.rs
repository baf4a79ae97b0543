//! What one dataset's share of the report is: its cells, its leg pairs and the file names it
//! claimed. Its own file because the dataset page, the matrix, the curves and the pairs all read it
//! and none of them should depend on another to get it.

use anyhow::Result;

use super::{slug, Names};
use crate::store::collect::LeftOut;
use crate::store::summary::CellSummary;

/// The file names of one pair's drill-down page and difference figure.
pub(crate) struct PairFiles {
    /// `q-<dataset>-<a>-vs-<b>.html`.
    pub drill: String,
    /// `img/<dataset>.<a>-vs-<b>.delta.svg`.
    pub delta: String,
}

/// The file names of one dataset's page and figures, relative to the report directory.
pub(crate) struct Files {
    /// `d-<dataset>.html`.
    pub page: String,
    /// `img/<dataset>.recall.svg`.
    pub recall: String,
    /// `img/<dataset>.curves.svg`.
    pub curves: String,
    /// `q-<dataset>.html`: the per-query drill-down of every leg.
    pub drill: String,
    /// Per pair, in pair order.
    pub pairs: Vec<PairFiles>,
}

impl Files {
    /// Claims the file names of `dataset` and its `pairs`.
    pub(crate) fn new(
        names: &mut Names,
        dataset: &str,
        pairs: &[(String, String)],
    ) -> Result<Files> {
        let d = slug(dataset);
        Ok(Files {
            page: names.claim(format!("d-{d}.html"))?,
            recall: names.claim(format!("img/{d}.recall.svg"))?,
            curves: names.claim(format!("img/{d}.curves.svg"))?,
            drill: names.claim(format!("q-{d}.html"))?,
            pairs: pairs
                .iter()
                .map(|(a, b)| {
                    let (a, b) = (slug(a), slug(b));
                    Ok(PairFiles {
                        drill: names.claim(format!("q-{d}-{a}-vs-{b}.html"))?,
                        delta: names.claim(format!("img/{d}.{a}-vs-{b}.delta.svg"))?,
                    })
                })
                .collect::<Result<_>>()?,
        })
    }
}

/// One dataset's share of the report.
pub(crate) struct Job<'a> {
    /// Dataset name.
    pub dataset: &'a str,
    /// Its cells, sorted by leg.
    pub cells: &'a [&'a CellSummary],
    /// Its cells left out (not trusted), sorted by leg: named where the others are shown.
    pub left_out: Vec<&'a LeftOut>,
    /// The leg pairs `(a, b)` compared on it.
    pub pairs: Vec<(String, String)>,
    /// Its files.
    pub files: Files,
}
