//! What a YAML scalar means, with the rules serde_yaml 0.9 applied when Sluice read documents through it
//! (so every document reads as before): the YAML 1.2 core schema for plain scalars (`null`/`~`/empty,
//! `true`/`false` in three cases, integers in decimal, `0x`, `0o`, `0b`, floats with `.inf`/`.nan`, and a
//! leading zero keeping digits a string), quoted and block scalars as strings, and the core tags
//! `!!bool`, `!!int`, `!!float`, `!!null` forcing their type. One rule is YAML 1.1's, because Kong reads
//! declarative files with lyaml (YAML 1.1): plain `yes`/`no`/`on`/`off` (in the same three cases) are
//! booleans, so a Kong file with `strip_path: off` loads unchanged (and a bare `on` is no string, as in Kong).

use serde::Deserialize;
use serde_json::Value;

/// The tags of the core schema that force a type.
const CORE: &str = "tag:yaml.org,2002:";

/// The value of a scalar with this text, whether it was plain (unquoted, not a block), and its full tag.
pub fn resolve(text: &str, plain: bool, tag: Option<&str>) -> Result<Value, String> {
    let Some(tag) = tag else {
        return match plain {
            true => untagged(text),
            false => Ok(Value::String(text.to_owned())),
        };
    };
    let expected = match tag.strip_prefix(CORE) {
        Some("bool") => bool(text).map(Value::Bool).ok_or("a boolean"),
        Some("int") => return int(text).unwrap_or_else(|| Err(invalid(text, "an integer"))),
        Some("float") => float(text).map(number).ok_or("a float"),
        Some("null") => null(text).then_some(Value::Null).ok_or("null"),
        // A local tag (`!thing`) is an enum variant to serde, which a document has no place for.
        _ if tag.starts_with('!') => {
            return Err("invalid type: enum, expected any valid JSON value".into())
        }
        _ => Ok(Value::String(text.to_owned())),
    };
    expected.map_err(|what| invalid(text, what))
}

fn invalid(text: &str, expected: &str) -> String {
    format!("invalid value: string {text:?}, expected {expected}")
}

fn untagged(text: &str) -> Result<Value, String> {
    if text.is_empty() || null(text) {
        return Ok(Value::Null);
    }
    if let Some(b) = bool(text) {
        return Ok(Value::Bool(b));
    }
    if let Some(int) = int(text) {
        return int;
    }
    Ok(match float(text) {
        Some(f) if !leading_zero_digits(text) => number(f),
        _ => Value::String(text.to_owned()),
    })
}

fn null(text: &str) -> bool {
    matches!(text, "null" | "Null" | "NULL" | "~")
}

fn bool(text: &str) -> Option<bool> {
    match text {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => yaml_1_1_bool(text),
    }
}

/// YAML 1.1's booleans that YAML 1.2 reads as strings (a YAML 1.2 writer leaves them bare).
pub fn yaml_1_1_bool(text: &str) -> Option<bool> {
    match text {
        "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Some(true),
        "no" | "No" | "NO" | "off" | "Off" | "OFF" => Some(false),
        _ => None,
    }
}

/// `Number::from_f64`'s rule: NaN and infinities are null in a JSON document.
fn number(f: f64) -> Value {
    serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
}

/// An integer as serde_yaml read it: u64, else negative i64, else u128 or negative i128 (which
/// `serde_json` keeps when they fit its numbers, and refuses otherwise). None: not an integer.
fn int(text: &str) -> Option<Result<Value, String>> {
    use serde::de::value::{I128Deserializer, U128Deserializer};
    if let Some(n) = unsigned(text, u64::from_str_radix) {
        return Some(Ok(n.into()));
    }
    if let Some(n) = negative(text, i64::from_str_radix) {
        return Some(Ok(n.into()));
    }
    let wide = match unsigned(text, u128::from_str_radix) {
        Some(n) => Value::deserialize(U128Deserializer::<serde_json::Error>::new(n)),
        None => Value::deserialize(I128Deserializer::new(negative(text, i128::from_str_radix)?)),
    };
    Some(wide.map_err(|e| e.to_string()))
}

type Radix<T> = fn(&str, u32) -> Result<T, std::num::ParseIntError>;

const PREFIXES: [(&str, u32); 3] = [("0x", 16), ("0o", 8), ("0b", 2)];

/// A non-negative integer: an optional `+`, then a prefixed or a decimal number.
fn unsigned<T>(text: &str, parse: Radix<T>) -> Option<T> {
    let digits = text.strip_prefix('+').unwrap_or(text);
    for (prefix, radix) in PREFIXES {
        if let Some(rest) = digits.strip_prefix(prefix) {
            if rest.starts_with(['+', '-']) {
                return None;
            }
            if let Ok(n) = parse(rest, radix) {
                return Some(n);
            }
        }
    }
    if digits.starts_with(['+', '-']) || leading_zero_digits(text) {
        return None;
    }
    parse(digits, 10).ok()
}

/// A negative integer: `-` then a prefixed or a decimal number.
fn negative<T>(text: &str, parse: Radix<T>) -> Option<T> {
    for (prefix, radix) in PREFIXES {
        if let Some(rest) = text.strip_prefix('-').and_then(|t| t.strip_prefix(prefix)) {
            if let Ok(n) = parse(&format!("-{rest}"), radix) {
                return Some(n);
            }
        }
    }
    if leading_zero_digits(text) {
        return None;
    }
    parse(text, 10).ok()
}

fn float(text: &str) -> Option<f64> {
    let unsigned = match text.strip_prefix('+') {
        Some(rest) if rest.starts_with(['+', '-']) => return None,
        Some(rest) => rest,
        None => text,
    };
    match (unsigned, text) {
        (".inf" | ".Inf" | ".INF", _) => Some(f64::INFINITY),
        (_, "-.inf" | "-.Inf" | "-.INF") => Some(f64::NEG_INFINITY),
        (_, ".nan" | ".NaN" | ".NAN") => Some(f64::NAN),
        _ => unsigned.parse::<f64>().ok().filter(|f| f.is_finite()),
    }
}

/// Digits after a leading zero (`0123`, `-007`) are a string in YAML 1.2, not an octal number.
fn leading_zero_digits(text: &str) -> bool {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    digits.len() > 1 && digits.starts_with('0') && digits[1..].bytes().all(|b| b.is_ascii_digit())
}
