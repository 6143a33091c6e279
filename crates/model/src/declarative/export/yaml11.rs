//! serde_yaml's output made safe for Kong's YAML reader. Kong reads declarative YAML with lyaml, which
//! resolves plain scalars by YAML 1.1: `on`/`off`/`yes`/`no` are booleans, and `1_000`, `10:30`
//! (base 60) and `+.inf` are numbers. serde_yaml writes YAML 1.2, where those are strings, so it leaves
//! them unquoted. Kong would then read a consumer named `on` as `true` and refuse the export ("expected a
//! string"), as `kong_validate` showed. Each such plain scalar, key or value, is quoted here, and
//! nothing else changes.

use crate::declarative::yaml::scalar;
use regex::RegexSet;
use serde_json::Value;
use std::sync::LazyLock;

/// `text` (serde_yaml's block-style output) with every plain scalar that YAML 1.2 reads as a string and
/// YAML 1.1 does not put in single quotes. Block scalars (`|`, `>`) are copied as they are.
pub(super) fn for_yaml11(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    // Inside a block scalar: its content is every line indented deeper than this column.
    let mut block: Option<usize> = None;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let indent = body.len() - body.trim_start_matches(' ').len();
        match block {
            Some(col) if body.trim().is_empty() || indent > col => {
                out.push_str(line);
                continue;
            }
            _ => block = None,
        }
        let mut col = indent;
        let mut rest = &body[indent..];
        while let Some(r) = rest.strip_prefix("- ") {
            col += 2;
            rest = r;
        }
        out.push_str(&body[..col]);
        let value = match split_key(rest) {
            Some((key, value)) => {
                out.push_str(&quoted(key));
                out.push(':');
                if !value.is_empty() {
                    out.push(' ');
                }
                value
            }
            None => {
                // A sequence item's own block scalar belongs to the `- ` before it.
                col = col.saturating_sub(2);
                rest
            }
        };
        if value.starts_with(['|', '>']) {
            block = Some(col);
        }
        out.push_str(&quoted(value));
        out.push_str(&line[body.len()..]);
    }
    out
}

/// `key: value` (or `key:` before a nested block) as (key, value); None for a lone value. A quoted key
/// ends at its closing quote; a plain one at the first `: ` (serde_yaml quotes any key holding one).
fn split_key(s: &str) -> Option<(&str, &str)> {
    let key_end = match s.as_bytes().first() {
        Some(b'\'') => closing_single_quote(s)?,
        Some(b'"') => closing_double_quote(s)?,
        _ => {
            if let Some(i) = s.find(": ") {
                return Some((&s[..i], &s[i + 2..]));
            }
            return s.strip_suffix(':').map(|k| (k, ""));
        }
    };
    let after = &s[key_end..];
    if let Some(v) = after.strip_prefix(": ") {
        Some((&s[..key_end], v))
    } else {
        (after == ":").then_some((&s[..key_end], ""))
    }
}

/// The byte after a `'...'` scalar's closing quote (`''` is an escaped quote).
fn closing_single_quote(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 1;
    while i < b.len() {
        if b[i] == b'\'' {
            if b.get(i + 1) == Some(&b'\'') {
                i += 2;
                continue;
            }
            return Some(i + 1);
        }
        i += 1;
    }
    None
}

/// The byte after a `"..."` scalar's closing quote (`\` escapes the next character).
fn closing_double_quote(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The scalar as written, or single-quoted when it is plain, a string to YAML 1.2 and not to YAML 1.1.
fn quoted(s: &str) -> String {
    let plain = !s.is_empty() && !s.starts_with(['\'', '"', '|', '>', '[', '{', '&', '*', '!']);
    // serde_yaml writes YAML 1.2, where yes/no/on/off are strings (Sluice's reader takes them as booleans).
    let string_to_1_2 = scalar::yaml_1_1_bool(s).is_some()
        || matches!(scalar::resolve(s, true, None), Ok(Value::String(_)));
    match plain && string_to_1_2 && not_a_string_to_1_1(s) {
        true => format!("'{s}'"),
        false => s.to_string(),
    }
}

/// lyaml's implicit resolvers (`lyaml/implicit.lua`, the lyaml 6.2.8 Kong 3.9 ships): booleans in three
/// cases, octal, decimal, hexadecimal and binary integers with `_`, base-60 numbers, infinities, NaN and
/// floats (what Lua's `tonumber` reads once `_` are dropped, with a `.`, `e` or `E`).
fn not_a_string_to_1_1(s: &str) -> bool {
    static PATTERNS: LazyLock<RegexSet> = LazyLock::new(|| {
        RegexSet::new([
            r"^(?:yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF)$",
            r"^[+-]?0_*[0-7][0-7_]*$",
            r"^[+-]?_*[0-9][0-9_]*$",
            r"^[+-]?0x_*[0-9a-fA-F][0-9a-fA-F_]*$",
            r"^[+-]?0b_*[01][01_]+$",
            r"^[+-]?[0-9]+:[0-5]?[0-9][:0-9]*(?:\.[0-9]+)?$",
            r"^[+-]?\.(?:inf|Inf|INF)$",
            r"^\.(?:nan|NaN|NAN)$",
        ])
        .expect("lyaml's patterns")
    });
    if PATTERNS.is_match(s) {
        return true;
    }
    let digits = s.replace('_', "");
    s.contains(['.', 'e', 'E'])
        && !digits.contains(|c: char| c.is_ascii_alphabetic() && !matches!(c, 'e' | 'E'))
        && digits.parse::<f64>().is_ok()
}

#[cfg(test)]
mod tests;
