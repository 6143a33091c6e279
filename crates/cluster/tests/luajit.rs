//! Compares Sluice's config hash with Kong's own `kong/clustering/config_helper.lua` run under LuaJIT
//! (tests/kong_hash.lua stubs what OpenResty provides), over the golden vectors in tests/common/vectors.rs,
//! and checks that the committed goldens still are what Kong computes; and compares number printing with
//! LuaJIT's `tostring` over many doubles.
//!
//! Needs `luajit`, `lua-cjson` (Debian: `apt-get install luajit lua-cjson`), libcrypto, and Kong's
//! config_helper.lua: `KONG_CONFIG_HELPER=/path/to/config_helper.lua`, or `KONG_SOURCE=/path/to/kong`
//! (a checkout), or the mirror at /work/.mirror/Kong+kong/repo (read at tag 3.9.3). The number test runs
//! in CI (which installs luajit); the hash test needs Kong's source, which CI does not have, so it is
//! ignored unless asked for: `KONG_SOURCE=/path/to/kong cargo test -p sluice-cluster --test luajit --
//! --ignored` (the goldens it produced are checked by the unit tests everywhere).

#[path = "common/vectors.rs"]
mod vectors;

use std::path::{Path, PathBuf};
use std::process::Command;

const MIRROR: &str = "/work/.mirror/Kong+kong/repo";
const KONG_TAG: &str = "3.9.3";

/// Kong's config_helper.lua, written into `dir` when it comes from the git mirror.
fn config_helper(dir: &Path) -> Option<PathBuf> {
    if let Ok(p) = std::env::var("KONG_CONFIG_HELPER") {
        return Some(PathBuf::from(p));
    }
    if let Ok(src) = std::env::var("KONG_SOURCE") {
        return Some(Path::new(&src).join("kong/clustering/config_helper.lua"));
    }
    let out = Command::new("git")
        .args([
            "-C",
            MIRROR,
            "show",
            &format!("{KONG_TAG}:kong/clustering/config_helper.lua"),
        ])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let path = dir.join("config_helper.lua");
    std::fs::write(&path, out.stdout).ok()?;
    Some(path)
}

/// Fails with how to install them when `luajit` or `lua-cjson` is missing.
fn require_luajit() {
    let out = Command::new("luajit")
        .args(["-e", "require('cjson')"])
        .output();
    assert!(
        matches!(out, Ok(ref o) if o.status.success()),
        "`luajit` with `lua-cjson` is needed (apt-get install luajit lua-cjson)"
    );
}

#[test]
#[ignore = "needs Kong's source: KONG_SOURCE=/path/to/kong cargo test -p sluice-cluster --test luajit -- --ignored"]
fn sluice_hashes_equal_kongs_under_luajit() {
    require_luajit();
    let dir = tempfile::tempdir().unwrap();
    let helper = config_helper(dir.path())
        .expect("Kong's config_helper.lua not found (set KONG_CONFIG_HELPER or KONG_SOURCE)");
    let vectors = vectors::vectors();
    let configs: Vec<&serde_json::Value> = vectors.iter().map(|v| &v.config).collect();
    let input = dir.path().join("configs.json");
    std::fs::write(&input, serde_json::to_vec(&configs).unwrap()).unwrap();
    let harness = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kong_hash.lua");
    let out = Command::new("luajit")
        .arg(&harness)
        .arg(&helper)
        .arg(&input)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "luajit failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), vectors.len());
    let mut stale = Vec::new();
    for (v, line) in vectors.iter().zip(&lines) {
        let kong: Vec<&str> = line.split(' ').collect();
        let h = sluice_cluster::config_hashes(&v.config);
        let ours = [
            &h.config,
            &h.routes,
            &h.services,
            &h.plugins,
            &h.upstreams,
            &h.targets,
        ];
        for (i, (k, o)) in kong.iter().zip(ours).enumerate() {
            // Kong leaves group hashes out for a non-table config; DPs fill them with zeros.
            let k = if *k == "-" {
                sluice_cluster::EMPTY_CONFIG_HASH
            } else {
                k
            };
            assert_eq!(
                k, o,
                "{}: hash #{i} (config, routes, services, plugins, upstreams, targets)",
                v.name
            );
        }
        if kong != v.kong {
            stale.push(format!("{:?}: {:?}", v.name, kong));
        }
    }
    assert!(
        stale.is_empty(),
        "golden vectors differ from Kong's:\n{}",
        stale.join("\n")
    );
}

/// Doubles of every shape: small and huge integers, short decimals, exact ties at the 15th digit, and
/// arbitrary bit patterns (a fixed xorshift sequence, so a failure is reproducible).
fn sample_doubles() -> Vec<f64> {
    let mut out = vec![0.5, 2.5, 1e14, 1e15, 1e-4, 1e-5, 123456789012345.0];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..4000 {
        let r = next();
        let bits = f64::from_bits(r);
        if bits.is_finite() {
            out.push(bits);
        }
        out.push((r % 100_000_000_000_000_000) as f64);
        out.push((r % 1_000_000) as f64 / 1000.0);
        out.push((r % 10_000_000_000_000) as f64 + 0.5);
        out.push(-((r % 1000) as f64) / 8.0);
    }
    out
}

#[test]
fn numbers_print_as_luajit_tostring() {
    require_luajit();
    let numbers = sample_doubles();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("numbers.json");
    std::fs::write(&input, serde_json::to_vec(&numbers).unwrap()).unwrap();
    let script = "local c = require('cjson'); local f = io.open(os.getenv('NUMBERS'), 'rb'); \
                  for _, x in ipairs(c.decode(f:read('*a'))) do io.write(tostring(x), '\\n') end";
    let out = Command::new("luajit")
        .args(["-e", script])
        .env("NUMBERS", &input)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "luajit failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let mut checked = 0;
    for (x, want) in numbers.iter().zip(stdout.lines()) {
        let mut got = Vec::new();
        sluice_cluster::lua_number::push_lua_number(&mut got, *x);
        assert_eq!(String::from_utf8(got).unwrap(), want, "{x:e}");
        checked += 1;
    }
    assert_eq!(checked, numbers.len());
}
