//! The five operations of request-transformer, compiled once per config: on headers, and on name → value
//! maps (the query string and JSON or form bodies).

use crate::builtin::transform::{self, template};
use http::header::HOST;
use http::{HeaderMap, HeaderName};
use serde_json::{Map, Value};

/// A configured value: rendered per request only when it is a template.
struct Val(String);

impl Val {
    fn render(&self, env: &template::Env<'_>) -> String {
        if template::is_template(&self.0) {
            template::render(&self.0, env)
        } else {
            self.0.clone()
        }
    }
}

/// Parsed `name:value` pairs (a missing value is empty, as Kong's iterator yields it).
fn parsed(list: &[String]) -> Vec<(String, Val)> {
    transform::pairs(list)
        .into_iter()
        .map(|(n, v)| (n, Val(v.unwrap_or_default())))
        .collect()
}

/// Operations on a name → value map, in Kong's order.
pub struct ParamOps {
    remove: Vec<String>,
    rename: Vec<(String, String)>,
    replace: Vec<(String, Val)>,
    add: Vec<(String, Val)>,
    append: Vec<(String, Val)>,
}

impl ParamOps {
    /// From the `remove, rename, replace, add, append` lists of one target.
    pub fn new([remove, rename, replace, add, append]: [&Vec<String>; 5]) -> ParamOps {
        ParamOps {
            remove: transform::pairs(remove).into_iter().map(|p| p.0).collect(),
            rename: transform::pairs(rename)
                .into_iter()
                .map(|(o, n)| (o, n.unwrap_or_default()))
                .collect(),
            replace: parsed(replace),
            add: parsed(add),
            append: parsed(append),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.remove.is_empty()
            && self.rename.is_empty()
            && self.replace.is_empty()
            && self.add.is_empty()
            && self.append.is_empty()
    }

    /// Applies the operations; `has_content` false (an empty body) skips remove/rename/replace, as Kong does.
    /// Returns whether anything was (or may have been) changed.
    pub fn apply(
        &self,
        params: &mut Map<String, Value>,
        has_content: bool,
        env: &template::Env<'_>,
    ) -> bool {
        let mut changed = false;
        if has_content {
            for name in &self.remove {
                params.shift_remove(name);
                changed = true;
            }
            for (old, new) in &self.rename {
                if old != new && transform::truthy(params.get(old)) {
                    if let Some(v) = params.shift_remove(old) {
                        params.insert(new.clone(), v);
                        changed = true;
                    }
                }
            }
            for (name, value) in &self.replace {
                if transform::truthy(params.get(name)) {
                    params.insert(name.clone(), Value::String(value.render(env)));
                    changed = true;
                }
            }
        }
        for (name, value) in &self.add {
            if !transform::truthy(params.get(name)) {
                params.insert(name.clone(), Value::String(value.render(env)));
                changed = true;
            }
        }
        for (name, value) in &self.append {
            let current = params.get_mut(name).map(Value::take);
            let v = Value::String(value.render(env));
            params.insert(name.clone(), transform::append_json(current, v));
            changed = true;
        }
        changed
    }
}

/// Operations on request headers, in Kong's order.
pub struct HeaderOps {
    remove: Vec<HeaderName>,
    rename: Vec<(HeaderName, HeaderName)>,
    replace: Vec<(HeaderName, Val)>,
    add: Vec<(HeaderName, Val)>,
    append: Vec<(HeaderName, Val)>,
}

fn named(list: &[String]) -> Vec<(HeaderName, Val)> {
    parsed(list)
        .into_iter()
        .filter_map(|(n, v)| Some((transform::header_name(&n)?, v)))
        .collect()
}

impl HeaderOps {
    pub fn new([remove, rename, replace, add, append]: [&Vec<String>; 5]) -> HeaderOps {
        HeaderOps {
            remove: named(remove).into_iter().map(|p| p.0).collect(),
            rename: transform::pairs(rename)
                .into_iter()
                .filter_map(|(o, n)| {
                    Some((
                        transform::header_name(&o)?,
                        transform::header_name(&n.unwrap_or_default())?,
                    ))
                })
                .collect(),
            replace: named(replace),
            add: named(add),
            append: named(append),
        }
    }

    /// Applies the operations to the headers sent upstream. `Host` may be replaced but not added.
    pub fn apply(&self, headers: &mut HeaderMap, env: &template::Env<'_>) {
        for name in &self.remove {
            headers.remove(name);
        }
        for (old, new) in &self.rename {
            transform::rename_header(headers, old, new);
        }
        for (name, value) in &self.replace {
            if headers.contains_key(name) || name == HOST {
                transform::set_header(headers, name, &value.render(env));
            }
        }
        for (name, value) in &self.add {
            if !headers.contains_key(name) && name != HOST {
                transform::set_header(headers, name, &value.render(env));
            }
        }
        for (name, value) in &self.append {
            transform::append_header(headers, name, &value.render(env));
        }
    }
}
