//! Numbers as the text reports print them: means with 4 decimals and CIs with 3
//! (`matrix.md`, [`crate::report::markdown`]), signed differences as `compare-legs` prints them
//! ([`crate::analysis::compare::table`]), tokens as integers, latency with 3 decimals. A page shows
//! exactly these strings, so a number in the report is the number in `matrix.md`.

use std::collections::BTreeMap;

/// "—": undefined, or no number.
pub(crate) const NONE: &str = "—";

/// A mean, `0.3194`.
pub(crate) fn mean(v: f64) -> String {
    format!("{v:.4}")
}

/// A mean's CI, `[0.264, 0.381]`.
pub(crate) fn ci([lo, hi]: [f64; 2]) -> String {
    format!("[{lo:.3}, {hi:.3}]")
}

/// A metric as `matrix.md` prints it (`0.3194 [0.264, 0.381]` with `with_ci`, else `0.3194`;
/// "—" where undefined).
pub(crate) fn metric(
    metrics: &BTreeMap<String, Option<f64>>,
    cis: &BTreeMap<String, [f64; 2]>,
    name: &str,
    with_ci: bool,
) -> String {
    match metrics.get(name).copied().flatten() {
        None => NONE.into(),
        Some(v) => match (with_ci, cis.get(name)) {
            (true, Some(&c)) => format!("{} {}", mean(v), ci(c)),
            _ => mean(v),
        },
    }
}

/// A signed difference, `+0.0123`.
pub(crate) fn delta(d: f64) -> String {
    format!("{d:+.4}")
}

/// A difference's CI, `[-0.010, +0.030]`.
pub(crate) fn delta_ci([lo, hi]: [f64; 2]) -> String {
    format!("[{lo:+.3}, {hi:+.3}]")
}

/// A p-value, `0.0312`.
pub(crate) fn p(p: f64) -> String {
    format!("{p:.4}")
}

/// Mean tokens, `634`.
pub(crate) fn tokens(t: f64) -> String {
    format!("{t:.0}")
}

/// Milliseconds, `0.305`.
pub(crate) fn ms(v: f64) -> String {
    format!("{v:.3}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_the_text_reports_print_them() {
        let m: BTreeMap<String, Option<f64>> =
            [("r".to_string(), Some(0.31944)), ("c".to_string(), None)].into();
        let c: BTreeMap<String, [f64; 2]> = [("r".to_string(), [0.2455, 0.4625])].into();
        assert_eq!(metric(&m, &c, "r", true), "0.3194 [0.245, 0.463]");
        assert_eq!(metric(&m, &c, "r", false), "0.3194");
        assert_eq!(metric(&m, &c, "c", true), "—");
        assert_eq!(delta(0.05), "+0.0500");
        assert_eq!(delta_ci([-0.01, 0.03]), "[-0.010, +0.030]");
        assert_eq!(tokens(633.6), "634");
    }
}
