//! A run split across processes and machines: shards, Slurm job arrays and the status of
//! every cell.

pub mod shard;
pub mod slurm;
pub mod status;
