//! Small hand-drawn SVG figures: a "forest" of means with 95% CI whiskers, one row per leg
//! (or per metric of a paired comparison). Black ink only; a leg that is not a system (an
//! oracle) is a hollow diamond, a system a filled circle, so the figure reads the same in
//! greyscale. Every figure starts with the report's marker comment.

use std::fmt::Write as _;

use super::page::esc;

/// One row of a forest figure.
pub(crate) struct Row {
    /// Row label (a leg, a metric).
    pub label: String,
    /// The mean (or difference).
    pub value: f64,
    /// Its 95% CI, if any.
    pub ci: Option<[f64; 2]>,
    /// Drawn hollow (an upper bound, not a system).
    pub hollow: bool,
    /// Text right of the plot (the value and CI as the tables print them).
    pub text: String,
}

const WIDTH: u32 = 1080;
const LEFT: f64 = 250.0;
const RIGHT: f64 = 780.0;
const TOP: f64 = 40.0;
const ROW: f64 = 24.0;
const FONT: &str = "system-ui, -apple-system, 'Segoe UI', Roboto, Arial, 'DejaVu Sans', sans-serif";

/// The figure's pixel size for `rows` rows.
pub(crate) fn size(rows: usize) -> (u32, u32) {
    (WIDTH, (TOP + ROW * rows as f64 + 52.0) as u32)
}

/// A forest figure over the x range `lo..hi` (ticks at `ticks`), with a reference line at
/// `zero` when given (a difference of 0), titled `title`, x axis labelled `axis`.
pub(crate) fn forest(
    title: &str,
    axis: &str,
    (lo, hi): (f64, f64),
    ticks: &[f64],
    zero: Option<f64>,
    rows: &[Row],
) -> String {
    let (w, h) = size(rows.len());
    let x = |v: f64| LEFT + (v.clamp(lo, hi) - lo) / (hi - lo) * (RIGHT - LEFT);
    let bottom = TOP + ROW * rows.len() as f64;
    let mut s = String::with_capacity(600 + rows.len() * 600);
    let _ = writeln!(s, "<!-- {} -->", super::MARKER);
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
         role=\"img\" font-family=\"{FONT}\" font-size=\"13\">"
    );
    let _ = writeln!(s, "<title>{}</title>", esc(title));
    let _ = writeln!(s, "<rect width=\"{w}\" height=\"{h}\" fill=\"#fff\"/>");
    let _ = writeln!(
        s,
        "<text x=\"12\" y=\"22\" font-size=\"15\" font-weight=\"600\">{}</text>",
        esc(title)
    );
    // grid and tick labels
    for &t in ticks {
        let tx = x(t);
        let _ = writeln!(
            s,
            "<line x1=\"{tx:.1}\" y1=\"{TOP}\" x2=\"{tx:.1}\" y2=\"{bottom}\" stroke=\"#d0d0d0\"/>\
             <text x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#333\">{}</text>",
            bottom + 16.0,
            tick_label(t, zero.is_some())
        );
    }
    if let Some(z) = zero {
        let zx = x(z);
        let _ = writeln!(
            s,
            "<line x1=\"{zx:.1}\" y1=\"{:.1}\" x2=\"{zx:.1}\" y2=\"{bottom}\" stroke=\"#000\" stroke-dasharray=\"4 3\"/>",
            TOP - 4.0
        );
    }
    let _ = writeln!(
        s,
        "<line x1=\"{LEFT}\" y1=\"{bottom}\" x2=\"{RIGHT}\" y2=\"{bottom}\" stroke=\"#000\"/>\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#333\">{}</text>",
        (LEFT + RIGHT) / 2.0,
        bottom + 36.0,
        esc(axis)
    );
    for (i, r) in rows.iter().enumerate() {
        let y = TOP + ROW * (i as f64 + 0.5);
        if i % 2 == 1 {
            let _ = writeln!(
                s,
                "<rect x=\"6\" y=\"{:.1}\" width=\"{}\" height=\"{ROW}\" fill=\"#f2f2f2\"/>",
                y - ROW / 2.0,
                w - 12
            );
        }
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT - 10.0,
            y + 4.5,
            esc(&r.label)
        );
        if let Some([clo, chi]) = r.ci {
            let (a, b) = (x(clo), x(chi));
            let _ = writeln!(
                s,
                "<path d=\"M{a:.1} {y:.1}H{b:.1}M{a:.1} {:.1}V{:.1}M{b:.1} {:.1}V{:.1}\" stroke=\"#000\" stroke-width=\"1.5\" fill=\"none\"/>",
                y - 5.0,
                y + 5.0,
                y - 5.0,
                y + 5.0
            );
        }
        let vx = x(r.value);
        if r.hollow {
            let _ = writeln!(
                s,
                "<path d=\"M{vx:.1} {:.1}L{:.1} {y:.1}L{vx:.1} {:.1}L{:.1} {y:.1}Z\" fill=\"#fff\" stroke=\"#000\" stroke-width=\"1.5\"/>",
                y - 6.5,
                vx + 6.5,
                y + 6.5,
                vx - 6.5
            );
        } else {
            let _ = writeln!(
                s,
                "<circle cx=\"{vx:.1}\" cy=\"{y:.1}\" r=\"5\" fill=\"#000\"/>"
            );
        }
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            RIGHT + 14.0,
            y + 4.5,
            esc(&r.text)
        );
    }
    s.push_str("</svg>\n");
    s
}

fn tick_label(t: f64, signed: bool) -> String {
    // 0.025 steps need three decimals; the others two
    let t = if t.abs() < 1e-12 { 0.0 } else { t };
    let digits = if ((t * 100.0).round() - t * 100.0).abs() > 1e-9 {
        3
    } else {
        2
    };
    if signed && t > 0.0 {
        format!("+{t:.digits$}")
    } else {
        format!("{t:.digits$}")
    }
}

/// Symmetric x range and ticks around 0 that hold every row's CI: ±2 steps of a round step
/// (0.01, 0.02, 0.025, 0.05, 0.1, 0.2, 0.25, 0.5).
pub(crate) fn symmetric_range(rows: &[Row]) -> ((f64, f64), Vec<f64>) {
    let m = rows
        .iter()
        .flat_map(|r| {
            let [lo, hi] = r.ci.unwrap_or([r.value, r.value]);
            [lo.abs(), hi.abs(), r.value.abs()]
        })
        .filter(|v| v.is_finite())
        .fold(0.0_f64, f64::max);
    let step = [0.01, 0.02, 0.025, 0.05, 0.1, 0.2, 0.25, 0.5]
        .into_iter()
        .find(|s| 2.0 * s >= m)
        .unwrap_or(0.5);
    (
        (-2.0 * step, 2.0 * step),
        vec![-2.0 * step, -step, 0.0, step, 2.0 * step],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forest_draws_a_whisker_per_ci_and_marks_oracles_hollow() {
        let rows = vec![
            Row {
                label: "bm25".into(),
                value: 0.5,
                ci: Some([0.4, 0.6]),
                hollow: false,
                text: "0.5000 [0.400, 0.600]".into(),
            },
            Row {
                label: "<oracle>".into(),
                value: 0.9,
                ci: Some([0.85, 0.95]),
                hollow: true,
                text: "0.9000 [0.850, 0.950]".into(),
            },
        ];
        let s = forest("R@10", "mean", (0.0, 1.0), &[0.0, 0.5, 1.0], None, &rows);
        assert!(s.starts_with("<!-- hopbench report -->\n<svg "));
        assert_eq!(s.matches("stroke-width=\"1.5\" fill=\"none\"").count(), 2);
        assert_eq!(s.matches("<circle").count(), 1);
        assert!(s.contains("&lt;oracle&gt;"));
        let ((lo, hi), ticks) = symmetric_range(&rows);
        assert_eq!((lo, hi), (-1.0, 1.0));
        assert_eq!(ticks, vec![-1.0, -0.5, 0.0, 0.5, 1.0]);
    }
}
