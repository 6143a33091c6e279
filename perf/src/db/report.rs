//! The figures of `sluice-perf db`, each next to its goal: a Markdown table and `db.json`.

use serde::Serialize;

/// One figure of the report.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// What was measured.
    pub figure: String,
    /// The value, as printed (with its unit).
    pub measured: String,
    /// The number behind `measured` (ms, ratio, count...), for `db.json`.
    pub value: f64,
    /// The goal, as printed ("—" when the figure is context for another).
    pub goal: String,
    /// Whether the goal was met (None: no goal).
    pub pass: Option<bool>,
}

impl Row {
    /// A figure with a goal.
    pub fn goal(figure: &str, measured: String, value: f64, goal: &str, pass: bool) -> Row {
        Row {
            figure: figure.into(),
            measured,
            value,
            goal: goal.into(),
            pass: Some(pass),
        }
    }

    /// A figure given for context.
    pub fn info(figure: &str, measured: String, value: f64) -> Row {
        Row {
            figure: figure.into(),
            measured,
            value,
            goal: "—".into(),
            pass: None,
        }
    }
}

/// The table of rows.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from("| figure | measured | goal | result |\n|---|---|---|---|\n");
    for r in rows {
        let result = match r.pass {
            Some(true) => "pass",
            Some(false) => "**FAIL**",
            None => "",
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            r.figure, r.measured, r.goal, result
        ));
    }
    out
}

/// Nearest-rank percentile (`p` in 0..=100) of unsorted values; 0 when empty.
pub fn percentile(xs: &[f64], p: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v[rank.min(v.len()) - 1]
}

/// `p50 a ms, p99 b ms, max c ms`.
pub fn spread_ms(xs: &[f64]) -> String {
    format!(
        "p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        percentile(xs, 50.0),
        percentile(xs, 99.0),
        percentile(xs, 100.0)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let xs: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(percentile(&xs, 50.0), 50.0);
        assert_eq!(percentile(&xs, 99.0), 99.0);
        assert_eq!(percentile(&xs, 100.0), 100.0);
        assert_eq!(percentile(&[3.0], 99.0), 3.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }

    #[test]
    fn table_marks_failures() {
        let t = table(&[
            Row::goal("a", "1".into(), 1.0, "≤ 2", true),
            Row::goal("b", "3".into(), 3.0, "≤ 2", false),
            Row::info("c", "4".into(), 4.0),
        ]);
        assert!(t.contains("| a | 1 | ≤ 2 | pass |"), "{t}");
        assert!(t.contains("| b | 3 | ≤ 2 | **FAIL** |"), "{t}");
        assert!(t.contains("| c | 4 | — |  |"), "{t}");
    }
}
