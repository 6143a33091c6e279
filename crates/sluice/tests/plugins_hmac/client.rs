//! Signing with Python's `hmac`/`hashlib` (independent of Sluice's implementation) and sending requests,
//! for the hmac-auth tests.

use serde_json::Value;
use sluice_testkit::client;
use std::io::Write;
use std::process::{Command, Stdio};

/// Runs a Python snippet with `args`, feeding `stdin`; its trimmed output.
fn python(code: &str, args: &[&str], stdin: &[u8]) -> String {
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(code)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "python failed");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// base64 of the HMAC (`alg`: sha1, sha256, ...) of `data` with `secret`, by Python.
pub fn sign(alg: &str, secret: &str, data: &str) -> String {
    python(
        "import sys, hmac, hashlib, base64\n\
         mac = hmac.new(sys.argv[2].encode(), sys.stdin.buffer.read(), getattr(hashlib, sys.argv[1]))\n\
         print(base64.b64encode(mac.digest()).decode())",
        &[alg, secret],
        data.as_bytes(),
    )
}

/// An HTTP date `offset` seconds from now, by Python.
pub fn http_date(offset: i64) -> String {
    python(
        "import sys, time, email.utils\n\
         print(email.utils.formatdate(time.time() + int(sys.argv[1]), usegmt=True))",
        &[&offset.to_string()],
        b"",
    )
}

/// `Digest: SHA-256=...` of `body`, by Python.
pub fn digest(body: &str) -> String {
    python(
        "import sys, hashlib, base64\n\
         print('SHA-256=' + base64.b64encode(hashlib.sha256(sys.stdin.buffer.read()).digest()).decode())",
        &[],
        body.as_bytes(),
    )
}

/// Kong's `Authorization` value.
pub fn params(user: &str, alg: &str, headers: &str, signature: &str) -> String {
    format!(
        r#"hmac username="{user}", algorithm="hmac-{alg}", headers="{headers}", signature="{signature}""#
    )
}

/// A request: the status, the response headers and the JSON body (the echo, or Kong's message).
pub async fn send(
    method: &str,
    url: String,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut req = client().request(method, url).body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.unwrap();
    let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
    (status, headers, resp.json().await.unwrap_or(Value::Null))
}

/// A request's status and Kong's `message`.
pub async fn message(
    method: &str,
    url: String,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let (status, _, v) = send(method, url, headers, body).await;
    (status, v["message"].as_str().unwrap_or("").to_string())
}
