//! The session plugin through the real binary, driven by an independent client with a real cookie jar:
//! Python's `requests` (a `Session`, whose `http.cookiejar` honours `Path`, `Secure`, `Max-Age` and
//! expiry), run with `python3 -c`. Login through key-auth or basic-auth and later requests with only the
//! cookie, tampered and foreign cookies, the idling, rolling and absolute timeouts, the `remember` cookie,
//! logout by query and body argument, cookie attributes, a session split over two cookies, the
//! `Session-*` headers, the upstream's own cookies, a reload and a deleted consumer, and the schema
//! (shorthands, the default secret, `storage: kong`).

use serde_json::{json, Value};
use sluice_testkit::{EchoUpstream, Gateway};

const BIN: &str = env!("CARGO_BIN_EXE_sluice");
const ALICE_KEY_ID: &str = "8f1c2a4e-0b6d-4c1e-9a3f-5d7e8b9c0a11";

/// Runs the steps (JSON objects) with one `requests.Session` and prints what each got. A step has `url`,
/// and optionally `method`, `headers`, `data` (a form or text body), `json`, `sleep` (seconds, before
/// it), `restore` (a saved jar to send with), `tamper` (`[cookie, index]`: one character of that cookie
/// in the jar is changed), `clear` (empty the jar first), `save_as` (keep the jar as it is after it),
/// `forge` (`[cookie, secret, JSON, age in seconds]`: send only this cookie, sealed by the Python
/// implementation of lua-resty-session 4's format below) and `unseal` (`[cookie, secret]`: open that
/// cookie of the jar with it, after the request).
const CLIENT: &str = r#"
import base64, hashlib, hmac, json, math, os, sys, time, requests, urllib3
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
urllib3.disable_warnings()
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
unb64 = lambda s: base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
le = lambda b: int.from_bytes(b, "little")
def kdf(secret, usage, sid, n):
    ikm = hashlib.sha256(secret.encode()).digest()
    return HKDF(algorithm=hashes.SHA256(), length=n, salt=None, info=usage + b":" + sid).derive(ikm)
def seal(secret, data, creation):
    sid, plain = os.urandom(32), data.encode()
    head = bytes([1, 0, 0]) + sid + creation.to_bytes(5, "little") + bytes(4)
    head += math.ceil(len(plain) * 4 / 3).to_bytes(3, "little")
    key = kdf(secret, b"encryption", sid, 44)
    sealed = AESGCM(key[:32]).encrypt(key[32:], plain, head)
    head += sealed[-16:] + bytes(3)
    head += hmac.new(kdf(secret, b"authentication", sid, 32), head, "sha256").digest()[:16]
    return b64(head) + b64(sealed[:-16])
def unseal(secret, cookie):
    head, payload = unb64(cookie[:110]), unb64(cookie[110:])
    sid = head[3:35]
    mac = hmac.new(kdf(secret, b"authentication", sid, 32), head[:66], "sha256").digest()[:16]
    if not hmac.compare_digest(mac, head[66:]):
        return {"error": "mac"}
    key = kdf(secret, b"encryption", sid, 44)
    plain = AESGCM(key[:32]).decrypt(key[32:], payload + head[47:63], head[:47])
    return {"type": head[0], "flags": le(head[1:3]), "creation": le(head[35:40]),
            "rolling_offset": le(head[40:44]), "data_size": le(head[44:47]),
            "idling_offset": le(head[63:66]), "now": int(time.time()), "data": json.loads(plain)}
s = requests.Session()
s.verify = False
s.trust_env = False
saved, out = {}, []
for st in json.loads(sys.argv[1]):
    time.sleep(st.get("sleep", 0))
    if "restore" in st:
        s.cookies = saved[st["restore"]].copy()
    if st.get("clear"):
        s.cookies.clear()
    if "tamper" in st:
        name, pos = st["tamper"]
        for c in s.cookies:
            if c.name == name:
                i = pos % len(c.value)
                c.value = c.value[:i] + ("A" if c.value[i] != "A" else "B") + c.value[i + 1:]
    if "forge" in st:
        name, secret, data, age = st["forge"]
        st.setdefault("headers", {})["cookie"] = name + "=" + seal(secret, data, int(time.time()) - age)
    r = s.request(st.get("method", "GET"), st["url"], headers=st.get("headers"),
                  data=st.get("data"), json=st.get("json"), allow_redirects=False)
    try:
        body = r.json()
    except Exception:
        body = r.text
    out.append({"status": r.status_code, "set_cookie": r.raw.headers.getlist("Set-Cookie"),
                "headers": {k.lower(): v for k, v in r.headers.items()}, "body": body,
                "jar": {c.name: c.value for c in s.cookies}})
    if "unseal" in st:
        name, secret = st["unseal"]
        out[-1]["unsealed"] = unseal(secret, out[-1]["jar"][name])
    if "save_as" in st:
        saved[st["save_as"]] = s.cookies.copy()
print(json.dumps(out))
"#;

fn run(steps: Value) -> Vec<Value> {
    let out = std::process::Command::new("python3")
        .args(["-c", CLIENT, &steps.to_string()])
        .output()
        .expect("python3 (with the pip packages requests and cryptography)");
    assert!(
        out.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Consumers `alice` (key `alice-key`) and `anon`; `routes` are `(path, session config, key-auth config)`.
fn gateway(up: &EchoUpstream, routes: &[(&str, Value, Value)], alice: &str) -> Gateway {
    let routes: Vec<Value> = routes
        .iter()
        .map(|(path, session, key_auth)| {
            json!({"name": path.trim_start_matches('/'), "paths": [path], "plugins": [
                {"name": "session", "config": session},
                {"name": "key-auth", "config": key_auth},
            ]})
        })
        .collect();
    let config = json!({
        "_format_version": "3.0",
        "consumers": [
            {"username": alice, "custom_id": "A1",
             "keyauth_credentials": [{"id": ALICE_KEY_ID, "key": "alice-key"}]},
            {"username": "anon"},
        ],
        "services": [{"name": "s", "url": up.url(), "routes": routes}],
    });
    Gateway::builder(BIN)
        .config_yaml(&config.to_string())
        .start()
}

fn https(gw: &Gateway, path: &str) -> String {
    format!("https://127.0.0.1:{}{path}", gw.proxy_tls_port())
}

/// The consumer the upstream saw (`anon` when the session did not authenticate), from the echo.
fn consumer(r: &Value) -> &str {
    assert_eq!(r["status"], 200, "{r}");
    r["body"]["headers"]["x-consumer-username"]
        .as_str()
        .unwrap_or("")
}

fn session_cookies(r: &Value, name: &str) -> Vec<String> {
    let prefix = format!("{name}=");
    r["set_cookie"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c.as_str().filter(|c| c.starts_with(&prefix)))
        .map(String::from)
        .collect()
}

#[test]
fn a_key_auth_login_makes_a_cookie_that_authenticates_alone() {
    let up = EchoUpstream::start();
    let anon = json!({"anonymous": "anon"});
    let session = json!({"response_headers": ["id", "audience", "subject", "timeout"],
                         "request_headers": ["subject"]});
    let gw = gateway(
        &up,
        &[
            ("/s", session, anon.clone()),
            ("/other", json!({"secret": "another secret"}), anon),
            ("/strict", json!({}), json!({})),
        ],
        "alice",
    );
    let url = |p: &str| https(&gw, p);
    let r = run(json!([
        {"url": url("/s")},
        {"url": url("/s?apikey=alice-key"), "save_as": "login"},
        {"url": url("/s")},
        {"url": url("/other")},
        {"url": url("/strict")},
        {"url": url("/s"), "tamper": ["session", -5]},
        {"url": url("/s"), "restore": "login", "tamper": ["session", 20]},
        {"url": url("/s"), "restore": "login", "tamper": ["session", 100]},
        {"url": url("/s"), "restore": "login"},
        {"url": url("/s"), "clear": true},
    ]));
    // Without a key or a cookie: the anonymous consumer, and no session for it.
    assert_eq!(consumer(&r[0]), "anon");
    assert!(r[0]["set_cookie"].as_array().unwrap().is_empty());
    assert!(r[0]["jar"].as_object().unwrap().is_empty());

    // The login: key-auth authenticates, the session plugin answers with the cookie.
    assert_eq!(consumer(&r[1]), "alice");
    let set = session_cookies(&r[1], "session");
    assert_eq!(set.len(), 1, "{:?}", r[1]["set_cookie"]);
    assert!(
        set[0].ends_with("; Path=/; SameSite=Strict; Secure; HttpOnly"),
        "{}",
        set[0]
    );
    let value = r[1]["jar"]["session"].as_str().unwrap();
    assert!(value.len() > 110 && !value.contains("alice"), "{value}");
    assert_eq!(r[1]["headers"]["session-audience"], "default");
    assert_eq!(r[1]["headers"]["session-subject"], "alice");
    assert_eq!(r[1]["headers"]["session-id"].as_str().unwrap().len(), 43);
    assert_eq!(r[1]["headers"]["session-timeout"], "900");

    // The cookie alone: the session authenticates alice with her credential, key-auth (with `anonymous`)
    // does nothing, and the consumer headers go upstream.
    let h = &r[2]["body"]["headers"];
    assert_eq!(consumer(&r[2]), "alice");
    assert_eq!(h["x-consumer-custom-id"], "A1");
    assert_eq!(h["x-credential-identifier"], ALICE_KEY_ID);
    assert!(h["x-consumer-id"].is_string() && h.get("x-anonymous-consumer").is_none());
    assert_eq!(h["session-subject"], "alice");
    assert!(h["cookie"].as_str().unwrap().starts_with("session="));
    assert!(
        session_cookies(&r[2], "session").is_empty(),
        "no renewal yet"
    );
    assert_eq!(r[2]["headers"]["session-id"], r[1]["headers"]["session-id"]);

    // Another secret cannot read it; key-auth without `anonymous` still wants its key (as in Kong).
    assert_eq!(consumer(&r[3]), "anon");
    assert_eq!(r[4]["status"], 401, "{}", r[4]);

    // One changed character in the payload, the session id or the MAC: refused, no new cookie.
    for (i, t) in r[5..8].iter().enumerate() {
        assert_eq!(consumer(t), "anon", "tamper {i}");
        assert!(session_cookies(t, "session").is_empty());
    }
    // The intact cookie still works; without any cookie the request is anonymous again.
    assert_eq!(consumer(&r[8]), "alice");
    assert_eq!(consumer(&r[9]), "anon");
}

#[test]
fn idling_rolling_and_absolute_timeouts() {
    let up = EchoUpstream::start();
    let anon = json!({"anonymous": "anon"});
    let gw = gateway(
        &up,
        &[
            (
                "/idle",
                json!({"cookie_name": "idle", "idling_timeout": 2}),
                anon.clone(),
            ),
            (
                "/roll",
                json!({"cookie_name": "roll", "idling_timeout": 0, "rolling_timeout": 4,
                       "absolute_timeout": 0}),
                anon.clone(),
            ),
            (
                "/abs",
                json!({"cookie_name": "abs", "idling_timeout": 0, "rolling_timeout": 4,
                       "absolute_timeout": 3}),
                anon,
            ),
        ],
        "alice",
    );
    let url = |p: &str| https(&gw, p);

    // Idle past 2 s: refused, though a request 1 s in was fine.
    let r = run(json!([
        {"url": url("/idle?apikey=alice-key")},
        {"url": url("/idle"), "sleep": 1},
        {"url": url("/idle"), "sleep": 3.2},
    ]));
    assert_eq!(consumer(&r[0]), "alice");
    assert_eq!(consumer(&r[1]), "alice");
    assert_eq!(consumer(&r[2]), "anon");

    // Rolling timeout 4 s: a request after 3/4 of it gets a renewed cookie, so a client that keeps coming
    // stays logged in for 7 s; the first cookie is refused once 4 s have passed.
    let mut steps = vec![json!({"url": url("/roll?apikey=alice-key"), "save_as": "first"})];
    for _ in 0..14 {
        steps.push(json!({"url": url("/roll"), "sleep": 0.5}));
    }
    steps.push(json!({"url": url("/roll"), "restore": "first"}));
    let r = run(Value::Array(steps));
    let renewals = r[1..15]
        .iter()
        .filter(|s| !session_cookies(s, "roll").is_empty())
        .count();
    for (i, s) in r[..15].iter().enumerate() {
        assert_eq!(consumer(s), "alice", "request {i}");
    }
    assert!(renewals >= 1, "the cookie was renewed");
    assert_eq!(consumer(&r[15]), "anon", "the first cookie expired");

    // Absolute timeout 3 s: renewals keep the creation time, so the session ends anyway.
    let mut steps = vec![json!({"url": url("/abs?apikey=alice-key")})];
    for _ in 0..10 {
        steps.push(json!({"url": url("/abs"), "sleep": 0.5}));
    }
    let r = run(Value::Array(steps));
    assert_eq!(consumer(&r[0]), "alice");
    assert_eq!(consumer(&r[3]), "alice", "1.5 s in");
    assert_eq!(consumer(&r[10]), "anon", "5 s in");
}

#[test]
fn logout_by_query_argument_or_body_argument() {
    let up = EchoUpstream::start();
    let anon = json!({"anonymous": "anon"});
    let gw = gateway(
        &up,
        &[
            ("/q", json!({}), anon.clone()),
            ("/b", json!({"read_body_for_logout": true}), anon.clone()),
            (
                "/g",
                json!({"logout_methods": ["GET"], "logout_query_arg": "bye"}),
                anon,
            ),
        ],
        "alice",
    );
    let url = |p: &str| https(&gw, p);
    let login = |p: &str| json!({"url": url(&format!("{p}?apikey=alice-key")), "clear": true});
    let form = "application/x-www-form-urlencoded";
    let r = run(json!([
        login("/q"),
        {"url": url("/q?session_logout")},
        {"url": url("/q"), "method": "POST", "data": "session_logout=1",
         "headers": {"content-type": form}},
        {"url": url("/q?session_logout"), "method": "DELETE"},
        {"url": url("/q")},
        login("/b"),
        {"url": url("/b"), "method": "POST", "data": "other=1", "headers": {"content-type": form}},
        {"url": url("/b"), "method": "POST", "data": "a=1&session_logout=yes",
         "headers": {"content-type": form}},
        login("/b"),
        {"url": url("/b"), "method": "DELETE", "json": {"session_logout": false}},
        {"url": url("/b"), "method": "DELETE", "json": {"session_logout": true}},
        login("/g"),
        {"url": url("/g?session_logout")},
        {"url": url("/g?bye=")},
        {"url": url("/g")},
    ]));
    assert_eq!(consumer(&r[0]), "alice");
    // GET is not a logout method; a body argument is not read unless `read_body_for_logout`.
    assert_eq!(consumer(&r[1]), "alice");
    assert_eq!(consumer(&r[2]), "alice");
    // DELETE with the query argument: 200 from the gateway, the cookie cleared, anonymous after.
    assert_eq!(r[3]["status"], 200);
    assert_eq!(r[3]["body"], "");
    let cleared = session_cookies(&r[3], "session");
    assert_eq!(
        cleared,
        ["session=; Path=/; SameSite=Strict; Secure; HttpOnly; Expires=Thu, 01 Jan 1970 00:00:01 GMT; Max-Age=0"]
    );
    assert!(r[3]["jar"].get("session").is_none());
    assert_eq!(consumer(&r[4]), "anon");

    assert_eq!(consumer(&r[6]), "alice");
    assert_eq!(
        (r[7]["status"].as_u64(), r[7]["jar"].get("session")),
        (Some(200), None)
    );
    assert_eq!(r[7]["body"], "");
    assert_eq!(consumer(&r[9]), "alice", "a false JSON argument");
    assert_eq!(r[10]["body"], "");
    assert!(r[10]["jar"].get("session").is_none());

    assert_eq!(consumer(&r[12]), "alice");
    assert_eq!(r[13]["body"], "", "an empty value still logs out");
    assert_eq!(consumer(&r[14]), "anon");
}

#[test]
fn cookie_attributes_remember_and_large_sessions() {
    let up = EchoUpstream::start();
    let anon = json!({"anonymous": "anon"});
    // Two audiences sharing one cookie, each with a 2000-character name: together over 4 KB.
    let audience = |a: &str| json!({"cookie_name": "big", "audience": a.repeat(2000)});
    let gw = gateway(
        &up,
        &[
            (
                "/attrs",
                json!({"cookie_name": "sid", "cookie_path": "/attrs", "cookie_domain": "example.test",
                       "cookie_same_site": "None", "cookie_secure": false, "cookie_http_only": false}),
                anon.clone(),
            ),
            (
                "/plain",
                json!({"cookie_name": "plain", "cookie_same_site": "Lax", "cookie_secure": false}),
                anon.clone(),
            ),
            (
                "/rem",
                json!({"cookie_name": "rem", "idling_timeout": 1, "remember": true,
                       "remember_cookie_name": "keep"}),
                anon.clone(),
            ),
            ("/aud-a", audience("a"), anon.clone()),
            ("/aud-b", audience("b"), anon),
        ],
        "alice",
    );
    let plain = |p: &str| gw.proxy_url(p);
    let url = |p: &str| https(&gw, p);
    let r = run(json!([
        {"url": plain("/attrs?apikey=alice-key")},
        {"url": plain("/plain?apikey=alice-key"),
         "headers": {"x-echo-set-header": "Set-Cookie: up=1; Path=/"}},
        {"url": plain("/plain")},
        {"url": url("/rem?apikey=alice-key"), "clear": true},
        {"url": url("/rem"), "sleep": 2.5},
        {"url": url("/rem")},
        {"url": url("/aud-a?apikey=alice-key"), "clear": true},
        {"url": url("/aud-b?apikey=alice-key")},
        {"url": url("/aud-a")},
        {"url": url("/aud-b")},
        {"url": url("/aud-b?session_logout"), "method": "POST"},
        {"url": url("/aud-a")},
        {"url": url("/aud-b")},
        {"url": url("/aud-a?session_logout"), "method": "DELETE"},
        {"url": url("/aud-a")},
    ]));
    // `SameSite=None` is always `Secure`; a Domain and a Path as configured; no HttpOnly when off.
    let attrs = session_cookies(&r[0], "sid");
    assert!(
        attrs[0].ends_with("; Domain=example.test; Path=/attrs; SameSite=None; Secure"),
        "{attrs:?}"
    );
    // The upstream's own cookie is kept beside the session's; an insecure cookie works over HTTP.
    let lines = r[1]["set_cookie"].as_array().unwrap();
    assert!(lines.contains(&json!("up=1; Path=/")), "{lines:?}");
    let set = session_cookies(&r[1], "plain");
    assert!(
        set[0].ends_with("; Path=/; SameSite=Lax; HttpOnly"),
        "{set:?}"
    );
    assert_eq!(consumer(&r[2]), "alice");

    // `remember`: a persistent cookie beside the session's; once the session idled out, it logs the
    // client in again with a new session cookie and a renewed persistent one.
    let keep = session_cookies(&r[3], "keep");
    assert_eq!(keep.len(), 1, "{:?}", r[3]["set_cookie"]);
    assert!(keep[0].contains("; Expires=") && keep[0].ends_with("; Max-Age=604800"));
    assert_eq!(consumer(&r[4]), "alice");
    assert_eq!(session_cookies(&r[4], "rem").len(), 1);
    assert_eq!(session_cookies(&r[4], "keep").len(), 1);
    assert_eq!(consumer(&r[5]), "alice");

    // The first audience's session fits one cookie; with the second one's it is split over `big` and
    // `big2`, and each audience finds its own entry in it.
    assert_eq!(session_cookies(&r[6], "big").len(), 1);
    assert_eq!(consumer(&r[7]), "alice");
    assert_eq!(session_cookies(&r[7], "big").len(), 1);
    assert_eq!(session_cookies(&r[7], "big2").len(), 1);
    for c in r[7]["jar"].as_object().unwrap().values() {
        assert!(c.as_str().unwrap().len() < 4096);
    }
    assert_eq!(consumer(&r[8]), "alice");
    assert_eq!(consumer(&r[9]), "alice");
    // Logging out of one audience keeps the other's session (back in one cookie, `big2` expired).
    assert_eq!(r[10]["body"], "");
    assert!(r[10]["jar"].get("big").is_some() && r[10]["jar"].get("big2").is_none());
    assert_eq!(consumer(&r[11]), "alice");
    assert_eq!(consumer(&r[12]), "anon");
    // The last audience's logout clears the cookie.
    assert_eq!(r[13]["body"], "");
    assert!(r[13]["jar"].get("big").is_none());
    assert_eq!(consumer(&r[14]), "anon");
}

#[test]
fn schema_shorthands_defaults_and_refused_storage() {
    let up = EchoUpstream::start();
    let gw = gateway(
        &up,
        &[(
            "/s",
            json!({"cookie_lifetime": 120, "cookie_idletime": null, "cookie_samesite": "off",
                   "cookie_renew": 30}),
            json!({}),
        )],
        "alice",
    );
    let admin = |p: &str| gw.admin_url(p);
    let kong_storage = json!({"_format_version": "3.0", "plugins": [
        {"name": "session", "config": {"storage": "kong"}}]});
    let r = run(json!([
        {"url": admin("/plugins")},
        {"url": admin("/")},
        {"url": admin("/config"), "method": "POST", "json": kong_storage},
    ]));
    let plugins = r[0]["body"]["data"].as_array().unwrap();
    let session = plugins.iter().find(|p| p["name"] == "session").unwrap();
    let c = &session["config"];
    assert_eq!(c["rolling_timeout"], 120);
    assert_eq!(c["idling_timeout"], 0);
    assert_eq!(c["cookie_same_site"], "Lax");
    assert_eq!(c["absolute_timeout"], 86400);
    assert_eq!(c["storage"], "cookie");
    for gone in [
        "cookie_lifetime",
        "cookie_idletime",
        "cookie_samesite",
        "cookie_renew",
    ] {
        assert!(c.get(gone).is_none(), "{gone}: {c}");
    }
    let secret = c["secret"].as_str().unwrap();
    assert!(
        secret.len() == 44 && secret.chars().all(|c| c.is_ascii_alphanumeric()),
        "{secret}"
    );
    let available = &r[1]["body"]["plugins"]["available_on_server"]["session"];
    assert_eq!(available["priority"], 1900, "{available}");
    assert_eq!(r[2]["status"], 400, "{}", r[2]);
    assert!(
        r[2]["body"].to_string().contains("storage 'kong'"),
        "{}",
        r[2]["body"]
    );
}

#[test]
fn a_reload_keeps_the_default_secret_and_a_deleted_consumer_ends_the_session() {
    let up = EchoUpstream::start();
    let anon = json!({"anonymous": "anon"});
    let gw = gateway(&up, &[("/s", json!({}), anon.clone())], "alice");
    let url = |p: &str| https(&gw, p);
    let route = json!({"name": "s", "paths": ["/s"], "plugins": [
        {"name": "session"}, {"name": "key-auth", "config": anon}]});
    let services = json!([{"name": "s", "url": up.url(), "routes": [route]}]);
    let same = json!({"_format_version": "3.0", "services": services, "consumers": [
        {"username": "alice", "keyauth_credentials": [{"id": ALICE_KEY_ID, "key": "alice-key"}]},
        {"username": "anon"}]});
    let without_alice = json!({"_format_version": "3.0", "services": services,
                               "consumers": [{"username": "anon"}]});
    let r = run(json!([
        {"url": url("/s?apikey=alice-key")},
        {"url": gw.admin_url("/config"), "method": "POST", "json": same},
        {"url": url("/s")},
        {"url": gw.admin_url("/config"), "method": "POST", "json": without_alice},
        {"url": url("/s")},
    ]));
    assert_eq!(consumer(&r[0]), "alice");
    assert!(r[1]["status"].as_u64().unwrap() < 300, "{}", r[1]);
    // The reloaded config drew no new default secret: the cookie still opens.
    assert_eq!(consumer(&r[2]), "alice");
    // Its consumer is gone: the session is cleared and the request goes on without it.
    assert!(r[3]["status"].as_u64().unwrap() < 300, "{}", r[3]);
    assert_eq!(consumer(&r[4]), "anon");
    let cleared = session_cookies(&r[4], "session");
    assert!(
        cleared.len() == 1 && cleared[0].ends_with("Max-Age=0"),
        "{cleared:?}"
    );
    assert!(r[4]["jar"].get("session").is_none());
}

#[test]
fn a_basic_auth_login_works_the_same() {
    use base64::Engine;
    let up = EchoUpstream::start();
    let cred = "0d2b4c6e-8a1f-4e3d-b5c7-9e1f2a3b4c5d";
    let config = json!({
        "_format_version": "3.0",
        "consumers": [
            {"username": "alice", "basicauth_credentials": [
                {"id": cred, "username": "alice-basic", "password": "pw"}]},
            {"username": "anon"},
        ],
        "services": [{"name": "s", "url": up.url(), "routes": [{"name": "b", "paths": ["/b"],
            "plugins": [{"name": "session"},
                        {"name": "basic-auth", "config": {"anonymous": "anon"}}]}]}],
    });
    let gw = Gateway::builder(BIN)
        .config_yaml(&config.to_string())
        .start();
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("alice-basic:pw")
    );
    let url = https(&gw, "/b");
    let r = run(json!([
        {"url": url, "headers": {"authorization": basic}},
        {"url": url},
    ]));
    assert_eq!(consumer(&r[0]), "alice");
    assert_eq!(
        r[0]["body"]["headers"]["x-credential-identifier"],
        "alice-basic"
    );
    assert_eq!(session_cookies(&r[0], "session").len(), 1);
    // With the cookie alone, Kong's session names the credential by its id.
    assert_eq!(consumer(&r[1]), "alice");
    assert_eq!(r[1]["body"]["headers"]["x-credential-identifier"], cred);
    assert!(r[1]["body"]["headers"].get("authorization").is_none());
}

#[test]
fn an_independent_implementation_of_the_cookie_format_agrees() {
    let up = EchoUpstream::start();
    let anon = json!({"anonymous": "anon"});
    let gw = gateway(&up, &[("/c", json!({"secret": "compat"}), anon)], "alice");
    let url = https(&gw, "/c");
    let r =
        run(json!([{"url": format!("{url}?apikey=alice-key"), "unseal": ["session", "compat"]}]));
    // The cookie Sluice made, opened by the Python implementation: lua-resty-session 4's header fields,
    // and Kong's data `[[consumer id, credential id], audience, subject]`.
    let alice = r[0]["body"]["headers"]["x-consumer-id"].as_str().unwrap();
    let u = &r[0]["unsealed"];
    assert_eq!(
        u["data"],
        json!([[[alice, ALICE_KEY_ID], "default", "alice"]]),
        "{u}"
    );
    assert_eq!(
        (u["type"].as_u64(), u["flags"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(
        (u["rolling_offset"].as_u64(), u["idling_offset"].as_u64()),
        (Some(0), Some(0))
    );
    let skew = u["now"].as_i64().unwrap() - u["creation"].as_i64().unwrap();
    assert!((0..=5).contains(&skew), "{u}");

    // Cookies the Python implementation sealed: accepted with the right secret while within the
    // timeouts, refused otherwise.
    let data = json!([[[alice, ALICE_KEY_ID], "default", "alice"]]).to_string();
    let other_audience = json!([[[alice, ALICE_KEY_ID], "elsewhere", "alice"]]).to_string();
    let forge = |secret: &str, data: &str, age: u64| json!({"url": url, "clear": true, "forge": ["session", secret, data, age]});
    let r = run(json!([
        forge("compat", &data, 0),
        forge("compat", &data, 600),
        forge("wrong", &data, 0),
        forge("compat", &data, 1000),
        forge("compat", &other_audience, 0),
    ]));
    assert_eq!(consumer(&r[0]), "alice");
    assert_eq!(
        r[0]["body"]["headers"]["x-credential-identifier"],
        ALICE_KEY_ID
    );
    assert_eq!(consumer(&r[1]), "alice", "10 minutes idle is within 900 s");
    assert_eq!(consumer(&r[2]), "anon", "another secret");
    assert_eq!(consumer(&r[3]), "anon", "idle past 900 s");
    assert_eq!(consumer(&r[4]), "anon", "no entry for this audience");
}
