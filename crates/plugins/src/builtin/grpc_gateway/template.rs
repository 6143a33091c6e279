//! The path templates of `google.api.http` rules, matched as Kong matches them: a template compiles once
//! (when the plugin is built) into an anchored regex with one capture per variable, and a request path
//! that matches it names the variables' values.
//!
//! Grammar, as far as Kong reads it: `{name}` and `{name=*}` take one path segment, `{name=pattern}`
//! takes what `pattern` matches (`*` one segment, `**` any number, other characters themselves), and
//! `name` may be a dotted field path (`{book.id}`). Everything else, `:verb` suffixes included, is
//! literal text; unlike Kong, whose regex keeps a literal `.` as "any character", it is matched as
//! written.

use regex::Regex;

/// One compiled template.
#[derive(Debug, Clone)]
pub struct Template {
    regex: Regex,
    /// The variables' field paths, in capture order.
    vars: Vec<String>,
}

/// A variable's value, by its field path.
pub type Vars = Vec<(String, String)>;

impl Template {
    /// Compiles `template` (e.g. `/v1/{name=shelves/*}/books/{book.id}`).
    pub fn compile(template: &str) -> Result<Template, String> {
        let mut pattern = String::from("^");
        let mut vars = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            pattern.push_str(&regex::escape(&rest[..open]));
            let after = &rest[open..];
            let variable = after
                .find('}')
                .and_then(|close| Some((variable(&after[1..close])?, close)));
            match variable {
                Some(((name, capture), close)) => {
                    vars.push(name.to_string());
                    pattern.push_str(&capture);
                    rest = &after[close + 1..];
                }
                None => {
                    pattern.push_str(&regex::escape("{"));
                    rest = &after[1..];
                }
            }
        }
        pattern.push_str(&regex::escape(rest));
        pattern.push('$');
        let regex = Regex::new(&pattern).map_err(|e| format!("path template {template:?}: {e}"))?;
        Ok(Template { regex, vars })
    }

    /// The variables' values when `path` matches.
    pub fn matches(&self, path: &str) -> Option<Vars> {
        let captures = self.regex.captures(path)?;
        let values = captures.iter().skip(1);
        let pairs = self.vars.iter().zip(values);
        Some(
            pairs
                .map(|(name, value)| (name.clone(), value.map_or("", |v| v.as_str()).into()))
                .collect(),
        )
    }
}

/// The characters Kong allows in a variable's name and in its pattern's literals.
fn literal(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~')
}

/// The inside of `{...}` as (field path, capture group); None when Kong would not read it as a variable
/// (it stays literal text then).
fn variable(inside: &str) -> Option<(&str, String)> {
    let (name, segments) = match inside.split_once('=') {
        Some((name, segments)) => (name, Some(segments)),
        None => (inside, None),
    };
    if name.is_empty() || !name.chars().all(literal) {
        return None;
    }
    let segments = match segments {
        None | Some("") | Some("*") => return Some((name, "([^/]+)".into())),
        Some(segments) => segments,
    };
    if !segments.chars().all(|c| literal(c) || c == '*' || c == '/') {
        return None;
    }
    let mut group = String::from("(");
    let mut chars = segments.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
                group.push_str(".+");
            }
            '*' => group.push_str("[^/]+"),
            c => group.push_str(&regex::escape(&c.to_string())),
        }
    }
    group.push(')');
    Some((name, group))
}
