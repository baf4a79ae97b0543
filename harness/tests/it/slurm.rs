//! `hopbench slurm` on a real Slurm: the default matrix as 4-task arrays, submitted and waited
//! for, gives the bytes of a local run. Needs a running cluster (`scripts/slurm-local start`,
//! then `eval "$(scripts/slurm-local env)"`); without `sbatch` and `SLURM_CONF` the test says so
//! and passes without running (`.ci/run` starts one, so CI always runs it).

use crate::util::{deterministic, Env};

fn slurm_available() -> bool {
    std::env::var_os("SLURM_CONF").is_some()
        && std::process::Command::new("sinfo")
            .arg("-h")
            .output()
            .is_ok_and(|o| o.status.success())
}

#[test]
fn the_default_matrix_as_a_slurm_array_gives_the_bytes_of_a_local_run() {
    if !slurm_available() {
        eprintln!(
            "SKIPPED: no Slurm cluster (SLURM_CONF unset or sinfo fails); \
             run scripts/slurm-local start and eval \"$(scripts/slurm-local env)\""
        );
        return;
    }
    let env = Env::new();
    env.ok(&[
        "run-matrix",
        "--threads",
        "1",
        "--quiet",
        "--results",
        "local",
    ]);
    let dry = env.ok(&["slurm", "--results", "cluster", "--array", "4", "--dry-run"]);
    assert!(dry.contains("#SBATCH --array=0-3"), "{dry}");
    let out = env.run(&[
        "slurm",
        "--results",
        "cluster",
        "--array",
        "4",
        "--cpus-per-task",
        "1",
        "--submit",
        "--wait",
    ]);
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let logs = env.results("cluster").join("slurm/logs");
    let mut all_logs = String::new();
    for e in std::fs::read_dir(&logs).into_iter().flatten().flatten() {
        all_logs += &format!("== {}\n", e.path().display());
        all_logs += &std::fs::read_to_string(e.path()).unwrap_or_default();
    }
    assert!(out.status.success(), "{text}\n{all_logs}");
    assert!(text.contains("succeeded"), "{text}");
    // every array task ran its part
    for i in 0..4 {
        assert!(
            all_logs.contains(&format!("part {i}/4")),
            "task {i}: {all_logs}"
        );
    }
    for leg in ["dense", "dense_content_only", "lexical", "bm25"] {
        assert_eq!(
            deterministic(env.summary("cluster", "synthetic", leg)),
            deterministic(env.summary("local", "synthetic", leg)),
            "{leg}"
        );
        let run = |r: &str| {
            std::fs::read(env.results(r).join(format!("runs/synthetic/{leg}.trec"))).unwrap()
        };
        assert_eq!(run("cluster"), run("local"), "{leg} run file");
    }
    assert!(env.results("cluster").join("matrix.md").exists());
    let st = env.ok(&["status", "--results", "cluster"]);
    assert!(st.contains("0 to run"), "{st}");
}
