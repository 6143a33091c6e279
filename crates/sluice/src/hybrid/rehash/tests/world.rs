//! Varied configs for the rehash tests: a flat declarative document of every hashed group and a few kinds
//! of the rest (consumers, key-auth credentials, certificates, SNIs), changed at random the ways a CP's
//! config changes: an entity edited, one added at the end of its list, one deleted with what Kong's
//! foreign keys cascade to, a whole kind emptied.

use serde_json::{json, Map, Value};

/// A small deterministic generator (xorshift64), so a failure can be replayed from its round.
pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

/// The kinds, parents first; each entity's parent keys.
const KINDS: [(&str, &[&str]); 9] = [
    ("services", &[]),
    ("routes", &["service"]),
    ("plugins", &["route"]),
    ("upstreams", &[]),
    ("targets", &["upstream"]),
    ("consumers", &[]),
    ("keyauth_credentials", &["consumer"]),
    ("certificates", &[]),
    ("snis", &["certificate"]),
];

const PLUGINS: [&str; 3] = ["request-termination", "cors", "correlation-id"];

/// The document: entities by kind, in order.
pub struct World {
    lists: Map<String, Value>,
    next: u64,
    cert: sluice_testkit::TestCert,
}

impl World {
    /// A few entities of every kind.
    pub fn new(rng: &mut Rng) -> World {
        let mut world = World {
            lists: KINDS
                .iter()
                .map(|(k, _)| (k.to_string(), json!([])))
                .collect(),
            next: 0,
            cert: sluice_testkit::self_signed(&["rehash.test"]),
        };
        for _ in 0..4 {
            for (kind, _) in KINDS {
                world.add(rng, kind);
            }
        }
        world
    }

    pub fn doc(&self) -> Value {
        let mut doc = self.lists.clone();
        doc.insert("_format_version".into(), json!("3.0"));
        Value::Object(doc)
    }

    fn list(&mut self, kind: &str) -> &mut Vec<Value> {
        match self.lists.get_mut(kind) {
            Some(Value::Array(items)) => items,
            _ => unreachable!("every kind has a list"),
        }
    }

    fn ids(&mut self, kind: &str) -> Vec<String> {
        let ids = self
            .list(kind)
            .iter()
            .map(|e| e["id"].as_str().unwrap_or_default().to_owned());
        ids.collect()
    }

    /// One random change (some leave the document as it was: a kind that is already empty).
    pub fn change(&mut self, rng: &mut Rng) {
        let (kind, _) = KINDS[rng.below(KINDS.len())];
        match rng.below(7) {
            0 | 1 => {
                let n = self.list(kind).len();
                if let Some(e) = self.list(kind).get_mut(rng.below(n)) {
                    e["tags"] = json!([format!("t{}", rng.below(1000))]);
                }
            }
            2 | 3 => self.add(rng, kind),
            4 | 5 => {
                let ids = self.ids(kind);
                if !ids.is_empty() {
                    self.delete(kind, &ids[rng.below(ids.len())]);
                }
            }
            _ => {
                for id in self.ids(kind) {
                    self.delete(kind, &id);
                }
            }
        }
    }

    /// Appends an entity of `kind` (under a random parent; none when there is no parent to have).
    fn add(&mut self, rng: &mut Rng, kind: &str) {
        self.next += 1;
        let n = self.next;
        let id = format!("00000000-0000-4000-8000-{n:012x}");
        let mut e = json!({"id": id, "created_at": 1, "updated_at": 1});
        for parent in KINDS
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(&[][..], |k| k.1)
        {
            let ids = self.ids(&format!("{parent}s"));
            let Some(pid) = ids.get(rng.below(ids.len())) else {
                return;
            };
            e[*parent] = json!({ "id": pid });
        }
        let fields = match kind {
            "services" => json!({"name": format!("s{n}"), "host": "127.0.0.1", "port": 9000 + n}),
            "routes" => json!({"name": format!("r{n}"), "paths": [format!("/p{n}")]}),
            "plugins" => {
                let name = PLUGINS[rng.below(PLUGINS.len())];
                let taken = self
                    .list("plugins")
                    .iter()
                    .any(|p| p["name"] == name && p["route"] == e["route"]);
                if taken {
                    return;
                }
                json!({"name": name})
            }
            "upstreams" => json!({"name": format!("u{n}")}),
            "targets" => {
                json!({"target": format!("127.0.0.1:{}", 1000 + n), "weight": 1 + rng.below(100)})
            }
            "consumers" => json!({"username": format!("c{n}")}),
            "keyauth_credentials" => json!({"key": format!("k{n}"), "updated_at": null}),
            "certificates" => json!({"cert": self.cert.cert_pem, "key": self.cert.key_pem}),
            _ => json!({"name": format!("h{n}.rehash.test")}),
        };
        for (k, v) in fields.as_object().into_iter().flatten() {
            e[k] = v.clone();
        }
        if let Some(m) = e.as_object_mut() {
            m.retain(|_, v| !v.is_null());
        }
        self.list(kind).push(e);
    }

    /// Deletes an entity and what references it (Kong's cascades: a service's routes, a route's plugins,
    /// an upstream's targets, a consumer's credentials, a certificate's SNIs).
    fn delete(&mut self, kind: &str, id: &str) {
        self.list(kind).retain(|e| e["id"] != id);
        let singular = kind.trim_end_matches('s');
        for (child, parents) in KINDS {
            if parents.contains(&singular) {
                let refs: Vec<String> = self
                    .list(child)
                    .iter()
                    .filter(|e| e[singular]["id"] == id)
                    .map(|e| e["id"].as_str().unwrap_or_default().to_owned())
                    .collect();
                refs.iter().for_each(|r| self.delete(child, r));
            }
        }
    }
}
