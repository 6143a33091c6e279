//! A hand-written SVG chart: two panels of grouped bars (median RPS, then median p99 latency),
//! one group per (case, connections), one colour per target, with a legend.

use crate::results::Combined;
use std::fmt::Write as _;

const COLORS: [&str; 6] = [
    "#2b7bb9", "#e07b39", "#3aa655", "#9b59b6", "#c0392b", "#7f8c8d",
];
const BAR: f64 = 16.0;
const GROUP_GAP: f64 = 18.0;
const PANEL_H: f64 = 220.0;
const LEFT: f64 = 70.0;

/// A panel: its title and the value of a row it plots.
type Panel = (&'static str, fn(&Combined) -> f64);

/// Renders the chart for `rows`.
pub fn chart(rows: &[Combined]) -> String {
    let targets = unique(rows.iter().map(|r| r.target.clone()));
    let groups = unique(rows.iter().map(|r| (r.case.clone(), r.connections)));
    let group_w = targets.len().max(1) as f64 * BAR + GROUP_GAP;
    let width = LEFT + groups.len().max(1) as f64 * group_w + 20.0;
    let height = 40.0 + 2.0 * (PANEL_H + 90.0) + 20.0 * targets.len() as f64;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" font-family=\"sans-serif\" font-size=\"10\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    let panels: [Panel; 2] = [
        ("median RPS", |r| r.rps.median),
        ("median p99 latency (ms)", |r| r.latency.p99),
    ];
    for (p, (title, value)) in panels.iter().enumerate() {
        let top = 30.0 + p as f64 * (PANEL_H + 90.0);
        let max = rows
            .iter()
            .map(value)
            .fold(0.0, f64::max)
            .max(f64::MIN_POSITIVE);
        let _ = writeln!(
            out,
            "<text x=\"{LEFT}\" y=\"{:.0}\" font-size=\"13\">{title}</text>",
            top - 10.0
        );
        let base = top + PANEL_H;
        let _ = writeln!(
            out,
            "<line x1=\"{LEFT}\" y1=\"{base}\" x2=\"{:.0}\" y2=\"{base}\" stroke=\"#333\"/>",
            width - 10.0
        );
        let _ = writeln!(
            out,
            "<text x=\"4\" y=\"{:.0}\">{}</text>",
            top + 10.0,
            short(max)
        );
        for (g, (case, conns)) in groups.iter().enumerate() {
            let gx = LEFT + g as f64 * group_w;
            for (t, target) in targets.iter().enumerate() {
                let Some(r) = rows
                    .iter()
                    .find(|r| &r.case == case && r.connections == *conns && &r.target == target)
                else {
                    continue;
                };
                let v = value(r);
                let h = v / max * PANEL_H;
                let _ = writeln!(
                    out,
                    "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{BAR}\" height=\"{h:.1}\" fill=\"{}\"><title>{} {} c={}: {}</title></rect>",
                    gx + t as f64 * BAR,
                    base - h,
                    COLORS[t % COLORS.len()],
                    esc(case),
                    esc(target),
                    conns,
                    short(v)
                );
            }
            let _ = writeln!(
                out,
                "<text transform=\"translate({:.1},{:.1}) rotate(35)\">{} c{conns}</text>",
                gx,
                base + 12.0,
                esc(case)
            );
        }
    }
    let legend_top = 30.0 + 2.0 * (PANEL_H + 90.0);
    for (t, target) in targets.iter().enumerate() {
        let y = legend_top + t as f64 * 20.0;
        let _ = writeln!(
            out,
            "<rect x=\"{LEFT}\" y=\"{:.0}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{:.0}\" y=\"{:.0}\">{}</text>",
            y,
            COLORS[t % COLORS.len()],
            LEFT + 18.0,
            y + 10.0,
            esc(target)
        );
    }
    out.push_str("</svg>\n");
    out
}

fn unique<T: PartialEq>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

fn short(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{:.1}k", v / 1000.0)
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// Escapes text for SVG.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
