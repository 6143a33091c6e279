//! A linear pre-scan that bounds how deeply YAML flow collections (`{...}`, `[...]`) nest, before the YAML
//! parser sees the text.
//!
//! libyaml (behind serde_yaml) handles deep flow nesting in quadratic time: 80 KB of `{a: ` took 6.6 s, and
//! 400 KB never finished while the client that sent it was long gone. The document builder refuses
//! anything deeper than its limit ([`MAX_FLOW_DEPTH`]) anyway, but only after that work; this scan
//! refuses it first, in one pass.
//!
//! Only brackets where a flow collection can start are counted: after `:`, `-`, `?`, `,`, `[`, `{` or at the
//! start of a line, and at the start of a token. So a bracket inside a plain scalar (`path: /a[b`) or a quoted
//! one (`"x{y"`) is not, and comments are skipped.

/// The deepest flow nesting accepted: the document's own limit, so deeper text never reaches libyaml.
pub const MAX_FLOW_DEPTH: usize = super::bounded::MAX_DEPTH;

/// Refuses `text` when its flow collections nest deeper than [`MAX_FLOW_DEPTH`], naming the line.
pub fn check_flow_depth(text: &str) -> Result<(), String> {
    let (mut depth, mut line) = (0usize, 1usize);
    let (mut single, mut double, mut comment, mut escaped) = (false, false, false, false);
    // The byte before this one, and the last byte on this line that was not white space.
    let (mut prev, mut significant): (u8, Option<u8>) = (b'\n', None);
    for &b in text.as_bytes() {
        if b == b'\n' {
            line += 1;
            comment = false;
            significant = None;
            prev = b;
            continue;
        }
        if comment {
            continue;
        }
        if double {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => double = false,
                _ => {}
            }
            prev = b;
            continue;
        }
        if single {
            single = b != b'\'';
            prev = b;
            continue;
        }
        let token_start = prev.is_ascii_whitespace() || matches!(prev, b'[' | b'{' | b',');
        let node_start = matches!(
            significant,
            None | Some(b':' | b'-' | b'?' | b',' | b'[' | b'{')
        );
        match b {
            b'#' if prev.is_ascii_whitespace() => comment = true,
            b'"' if token_start => double = true,
            b'\'' if token_start => single = true,
            b'[' | b'{' if (token_start && node_start) || depth > 0 => {
                depth += 1;
                if depth > MAX_FLOW_DEPTH {
                    return Err(format!(
                        "failed parsing declarative configuration: line {line}: flow collections nested deeper than {MAX_FLOW_DEPTH}"
                    ));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if !b.is_ascii_whitespace() {
            significant = Some(b);
        }
        prev = b;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
