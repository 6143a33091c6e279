//! The HTTP bindings of the `proto`'s methods, read from their `google.api.http` options when the plugin
//! is built, and the lookup of a request's binding.
//!
//! As in Kong, a method's rule and its `additional_bindings` (one level deep; a binding's own
//! `additional_bindings` are ignored) each bind one of `get`, `post`, `put`, `patch`, `delete` (`custom`
//! is ignored) to a path template, with the rule's own `body`. A request takes the first binding, in the
//! file's order, whose method and template match; the call goes to `/<package>.<Service>/<Method>`.

use super::template::{Template, Vars};
use http::Method;
use prost_reflect::{
    DescriptorPool, DynamicMessage, FileDescriptor, MessageDescriptor, MethodDescriptor, Value,
};

/// One HTTP binding of a method.
#[derive(Debug)]
pub struct Endpoint {
    method: Method,
    template: Template,
    /// The gRPC path the call goes to.
    pub rewrite: String,
    pub input: MessageDescriptor,
    pub output: MessageDescriptor,
    /// The rule's `body`: `*`, a field's name, or None (then the query string fills the fields).
    pub body: Option<String>,
}

/// Every binding of a `.proto`, in the file's order.
#[derive(Debug)]
pub struct Endpoints(Vec<Endpoint>);

/// The HTTP methods a rule may bind, by the rule's field name.
const METHODS: [(&str, Method); 5] = [
    ("get", Method::GET),
    ("post", Method::POST),
    ("put", Method::PUT),
    ("patch", Method::PATCH),
    ("delete", Method::DELETE),
];

impl Endpoints {
    /// The bindings of the methods of `file` in `pool` and of the files it imports `public` (Kong's
    /// order: those first), not of its other imports; an invalid path template is an error.
    pub fn of(pool: &DescriptorPool, file: &str) -> Result<Endpoints, String> {
        let mut endpoints = Vec::new();
        let Some(http) = pool.get_extension_by_name("google.api.http") else {
            return Ok(Endpoints(endpoints));
        };
        let mut files = Vec::new();
        if let Some(file) = pool.get_file_by_name(file) {
            with_public_imports(file, &mut files);
        }
        let services = files.iter().flat_map(|f| f.services().collect::<Vec<_>>());
        let methods = services.flat_map(|s| s.methods().collect::<Vec<_>>());
        for method in methods {
            let options = method.options();
            if !options.has_extension(&http) {
                continue;
            }
            let Value::Message(rule) = &*options.get_extension(&http) else {
                continue;
            };
            endpoints.extend(binding(&method, rule)?);
            let additional = rule.get_field_by_name("additional_bindings");
            if let Some(Value::List(more)) = additional.as_deref() {
                for more in more.iter().filter_map(Value::as_message) {
                    endpoints.extend(binding(&method, more)?);
                }
            }
        }
        Ok(Endpoints(endpoints))
    }

    /// The binding of a request, with its path variables; or Kong's reason why there is none.
    pub fn find(&self, method: &Method, path: &str) -> Result<(&Endpoint, Vars), String> {
        let mut bound = self.0.iter().filter(|e| e.method == method).peekable();
        if bound.peek().is_none() {
            let name = method.as_str().to_ascii_lowercase();
            return Err(format!("Unknown method {name:?}"));
        }
        bound
            .find_map(|e| Some((e, e.template.matches(path)?)))
            .ok_or_else(|| format!("Unknown path {path:?}"))
    }
}

/// `file` after the files it imports `public`, theirs first.
fn with_public_imports(file: FileDescriptor, out: &mut Vec<FileDescriptor>) {
    for import in file.public_dependencies() {
        with_public_imports(import, out);
    }
    out.push(file);
}

/// The endpoint of one rule of `method`; None when the rule binds none of the five methods.
fn binding(method: &MethodDescriptor, rule: &DynamicMessage) -> Result<Option<Endpoint>, String> {
    let text = |field: &str| {
        let value = rule.get_field_by_name(field)?;
        let text = value.as_str()?;
        (!text.is_empty()).then(|| text.to_string())
    };
    let Some((template, verb)) = METHODS
        .iter()
        .find_map(|(field, verb)| Some((text(field)?, verb)))
    else {
        return Ok(None);
    };
    let service = method.parent_service();
    Ok(Some(Endpoint {
        method: verb.clone(),
        template: Template::compile(&template)?,
        rewrite: format!("/{}/{}", service.full_name(), method.name()),
        input: method.input(),
        output: method.output(),
        body: text("body"),
    }))
}
