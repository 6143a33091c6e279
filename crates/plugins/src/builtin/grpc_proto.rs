//! What the plugins that transcode gRPC (`grpc-web`, `grpc-gateway`) share: the config's `.proto` compiled
//! when the plugin is built, gRPC's length-prefixed message frames, the path a call goes to, and Kong's
//! answer to their CORS preflights.
//!
//! The file is compiled with protox (a Rust protobuf compiler) into a prost-reflect pool, whose dynamic
//! messages the plugins translate to and from JSON. Imports resolve, first match wins, from the file's
//! folder (as Kong adds it to its include paths), then the `google/api` files built in here (Kong's
//! package does not ship them, so there they must sit next to the `.proto`; here a file that imports
//! `google/api/annotations.proto` compiles either way), then Google's well-known types, which Kong ships
//! in `/usr/local/kong/include`.

use crate::response::PluginResponse;
use bytes::{BufMut, Bytes, BytesMut};
use http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    CONTENT_TYPE,
};
use http::{HeaderMap, HeaderValue, StatusCode, Uri};
use prost_reflect::DescriptorPool;
use protox::file::{
    ChainFileResolver, File, FileResolver, GoogleFileResolver, IncludeFileResolver,
};
use std::path::Path;

/// The `google/api` files a transcoded `.proto` may import, by import name.
const GOOGLE_API: [(&str, &str); 3] = [
    (
        "google/api/annotations.proto",
        include_str!("grpc_proto/google/api/annotations.proto"),
    ),
    (
        "google/api/http.proto",
        include_str!("grpc_proto/google/api/http.proto"),
    ),
    (
        "google/api/httpbody.proto",
        include_str!("grpc_proto/google/api/httpbody.proto"),
    ),
];

/// Resolves the built-in `google/api` files.
struct GoogleApi;

impl FileResolver for GoogleApi {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        match GOOGLE_API.iter().find(|(known, _)| *known == name) {
            Some((_, source)) => File::from_source(name, source),
            None => Err(protox::Error::file_not_found(name)),
        }
    }
}

/// Compiles the `.proto` at `file` with what it imports; the error names the file and says why.
pub fn compile(file: &str) -> Result<DescriptorPool, String> {
    let path = Path::new(file);
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let mut resolver = ChainFileResolver::new();
    resolver.add(IncludeFileResolver::new(
        dir.unwrap_or(Path::new(".")).to_path_buf(),
    ));
    resolver.add(GoogleApi);
    resolver.add(GoogleFileResolver::new());
    let mut compiler = protox::Compiler::with_file_resolver(resolver);
    compiler
        .include_imports(true)
        .open_file(path)
        .map(|c| c.descriptor_pool())
        .map_err(|e| format!("proto '{file}': {e}"))
}

/// A gRPC frame: flag, big-endian length, bytes.
pub fn frame(flag: u8, bytes: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(5 + bytes.len());
    out.put_u8(flag);
    out.put_u32(bytes.len() as u32);
    out.put_slice(bytes);
    out.freeze()
}

/// The length of the gRPC frame at the start of `bytes`, header included, when it is whole.
pub fn whole_frame(bytes: &[u8]) -> Option<usize> {
    let len = u32::from_be_bytes(bytes.get(1..5)?.try_into().ok()?) as usize;
    (bytes.len() >= 5 + len).then_some(5 + len)
}

/// `uri` with its path and query replaced by `target` (`/path` or `/path?query`): the call's gRPC path.
pub fn with_target(uri: &Uri, target: &str) -> Uri {
    let mut parts = uri.clone().into_parts();
    match target.parse() {
        Ok(pq) => parts.path_and_query = Some(pq),
        Err(_) => return uri.clone(),
    }
    Uri::from_parts(parts).unwrap_or_else(|_| uri.clone())
}

/// Kong's answer to an `OPTIONS` on a transcoding plugin's route: `200 OK` with fixed CORS headers.
pub fn preflight(
    content_type: &'static str,
    origin: HeaderValue,
    methods: &'static str,
    headers: &'static str,
) -> PluginResponse {
    let mut answer = HeaderMap::new();
    answer.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    answer.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    let methods = HeaderValue::from_static(methods);
    answer.insert(ACCESS_CONTROL_ALLOW_METHODS, methods);
    let headers = HeaderValue::from_static(headers);
    answer.insert(ACCESS_CONTROL_ALLOW_HEADERS, headers);
    PluginResponse {
        status: StatusCode::OK,
        headers: answer,
        body: Bytes::from_static(b"OK"),
    }
}
