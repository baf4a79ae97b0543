//! A run split across processes and machines: Slurm job arrays and the status of every cell
//! (the shard plan itself is the pipeline's: [`crate::pipeline::shard`]).

pub mod slurm;
pub mod status;
