//! The certificate served when no configured certificate matches: Kong's `ssl_cert`/`ssl_cert_key` settings,
//! else a self-signed ECDSA P-256 certificate generated on first start and kept under the prefix, so every
//! restart (and every client that pinned it) sees the same one.

use crate::store::CertPair;
use std::path::Path;

/// File names of the generated default certificate under `<prefix>/ssl/`.
pub const DEFAULT_CERT_FILE: &str = "sluice-default-ecdsa.crt";
pub const DEFAULT_KEY_FILE: &str = "sluice-default-ecdsa.key";

/// Loads a certificate and key from files (`ssl_cert`, `admin_ssl_cert`, ...). Each setting may list two
/// comma-separated files (an RSA and an ECDSA pair), as Kong allows.
pub fn load_pair_files(certs: &str, keys: &str) -> Result<CertPair, String> {
    let read = |p: &str| {
        std::fs::read_to_string(p.trim()).map_err(|e| format!("cannot read {}: {e}", p.trim()))
    };
    let certs: Vec<&str> = certs.split(',').filter(|s| !s.trim().is_empty()).collect();
    let keys: Vec<&str> = keys.split(',').filter(|s| !s.trim().is_empty()).collect();
    if certs.is_empty() || certs.len() != keys.len() || certs.len() > 2 {
        return Err("give one or two certificates and as many keys".into());
    }
    let main = (read(certs[0])?, read(keys[0])?);
    let alt = match (certs.get(1), keys.get(1)) {
        (Some(c), Some(k)) => Some((read(c)?, read(k)?)),
        _ => None,
    };
    CertPair::new(
        &main.0,
        &main.1,
        alt.as_ref().map(|a| a.0.as_str()),
        alt.as_ref().map(|a| a.1.as_str()),
    )
    .map_err(|e| format!("{}: {e}", certs[0].trim()))
}

/// The generated default certificate in `dir` (created if missing; the key file is written mode 0600).
pub fn default_pair(dir: &Path) -> Result<CertPair, String> {
    let (cert_path, key_path) = (dir.join(DEFAULT_CERT_FILE), dir.join(DEFAULT_KEY_FILE));
    if cert_path.exists() && key_path.exists() {
        return load_pair_files(&cert_path.to_string_lossy(), &key_path.to_string_lossy());
    }
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
        .map_err(|e| format!("generating the default key: {e}"))?;
    let mut params =
        rcgen::CertificateParams::new(vec!["localhost".to_string()]).map_err(|e| e.to_string())?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "localhost");
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "Sluice");
    let cert = params
        .self_signed(&key)
        .map_err(|e| format!("generating the default certificate: {e}"))?;
    let (cert_pem, key_pem) = (cert.pem(), key.serialize_pem());
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    write_private(&key_path, &key_pem)?;
    std::fs::write(&cert_path, &cert_pem)
        .map_err(|e| format!("cannot write {}: {e}", cert_path.display()))?;
    tracing::info!(path = %cert_path.display(), "generated the default TLS certificate");
    CertPair::new(&cert_pem, &key_pem, None, None)
}

fn write_private(path: &Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    file.write_all(text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}
