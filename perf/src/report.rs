//! Reports: `results.json` (everything), `results.md` (tables with ratios) and `chart.svg`
//! (grouped bars of RPS and p99). `sluice-perf report <dir>` re-renders them from the JSON.

mod markdown;
pub mod svg;
#[cfg(test)]
mod tests;

pub use markdown::markdown;

use crate::results::{combine, Combined, Results};
use anyhow::{Context, Result};
use std::path::Path;

/// Writes `results.json`, `results.md` and `chart.svg` into `dir`.
pub fn write(dir: &Path, results: &Results) -> Result<()> {
    std::fs::write(
        dir.join("results.json"),
        serde_json::to_string_pretty(results)?,
    )?;
    std::fs::write(dir.join("results.md"), markdown(results))?;
    std::fs::write(dir.join("chart.svg"), svg::chart(&results.combined))?;
    crate::progress(format!(
        "wrote results.json, results.md and chart.svg in {}",
        dir.display()
    ));
    Ok(())
}

/// Reads `<dir>/results.json` (or a results file given directly), recombines the samples with
/// the current statistics, and re-renders the Markdown and SVG.
pub fn rerender(path: &Path) -> Result<Results> {
    let (dir, file) = if path.is_dir() {
        (path, path.join("results.json"))
    } else {
        (path.parent().unwrap_or(Path::new(".")), path.to_path_buf())
    };
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    let mut results: Results =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", file.display()))?;
    if !results.samples.is_empty() {
        results.combined = combine(&results.samples);
    }
    std::fs::write(dir.join("results.md"), markdown(&results))?;
    std::fs::write(dir.join("chart.svg"), svg::chart(&results.combined))?;
    crate::progress(format!(
        "re-rendered results.md and chart.svg in {}",
        dir.display()
    ));
    Ok(results)
}

/// The nginx row a row is compared with: same connections, and the same case for the protocol cases
/// (`ws-echo`, `grpc-unary`); otherwise the no-plugins case with the same routes, or with one route when
/// that was not run.
pub fn nginx_baseline<'a>(all: &'a [Combined], row: &Combined) -> Option<&'a Combined> {
    let case = crate::cases::Case::parse(&row.case).ok()?;
    let find = |case: String| {
        all.iter()
            .find(|x| x.target == "nginx" && x.connections == row.connections && x.case == case)
    };
    if case.kind.protocol() != crate::cases::Protocol::Http {
        return find(case.peer_case().to_string());
    }
    find(case.peer_case().to_string()).or_else(|| find("no-plugins@1".into()))
}

/// The same target's no-plugins row (same connections; same routes, or one route when that was
/// not run) a plugin case is compared with; `None` for no-plugins rows and the protocol cases.
pub fn plugin_baseline<'a>(all: &'a [Combined], row: &Combined) -> Option<&'a Combined> {
    let case = crate::cases::Case::parse(&row.case).ok()?;
    if case.kind == crate::cases::CaseKind::NoPlugins
        || case.kind.protocol() != crate::cases::Protocol::Http
    {
        return None;
    }
    let find = |case: String| {
        all.iter()
            .find(|x| x.target == row.target && x.connections == row.connections && x.case == case)
    };
    find(case.baseline().to_string()).or_else(|| find("no-plugins@1".into()))
}
