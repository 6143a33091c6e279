//! The certificates of a config by SNI name, compiled into the snapshot for the `ssl` listeners' acceptor
//! (`crate::tls`).

use sluice_model::Config;
use sluice_tls::{CertPair, CertStore};

/// The certificates of a config by SNI name (each certificate under the `snis` that name it).
pub(crate) fn cert_store(config: &Config) -> Result<CertStore, Vec<String>> {
    let mut store = CertStore::default();
    let mut errors = Vec::new();
    for cert in &config.certificates {
        let names = config
            .snis
            .iter()
            .filter(|s| s.certificate.id == cert.id)
            .map(|s| s.name.as_str());
        match CertPair::new(
            &cert.cert,
            &cert.key,
            cert.cert_alt.as_deref(),
            cert.key_alt.as_deref(),
        ) {
            Ok(pair) => store.add(names, pair),
            Err(e) => errors.push(format!("certificate {}: {e}", cert.id)),
        }
    }
    if errors.is_empty() {
        Ok(store)
    } else {
        Err(errors)
    }
}
