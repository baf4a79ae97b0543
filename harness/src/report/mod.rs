//! How results are shown: the markdown matrix, the static HTML report and the plots.

pub mod html;
pub mod markdown;
pub mod plot;
