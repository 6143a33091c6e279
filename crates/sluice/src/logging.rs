//! Log setup: `tracing` with text (default) or JSON lines on stderr, at Kong's `log_level` names.

use crate::LogFormat;
use tracing_subscriber::EnvFilter;

/// Maps Kong's (nginx's) level names onto tracing's.
fn tracing_level(kong_level: &str) -> &'static str {
    match kong_level.to_ascii_lowercase().as_str() {
        "debug" => "debug",
        "info" | "notice" => "info",
        "warn" => "warn",
        "error" | "crit" | "alert" | "emerg" => "error",
        "trace" => "trace",
        _ => "info",
    }
}

/// Installs the global subscriber. `RUST_LOG`, when set, wins over `log_level`.
pub fn init(log_level: &str, format: LogFormat) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(tracing_level(log_level)));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.with_target(false).init(),
        LogFormat::Json => builder.json().init(),
    }
}
