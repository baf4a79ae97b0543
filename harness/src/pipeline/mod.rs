//! The run itself, in order: the campaign, the settings resolved once, the exports built
//! on demand, the matrix of legs x queries, the budget curves and the scores of each query.

pub mod campaign;
pub mod chunking;
pub mod contract;
pub mod curve;
pub mod data;
pub mod evaluate;
pub mod leg_build;
pub mod matrix;
pub mod progress;
pub mod protocol;
pub mod settings;
pub mod yaml;
