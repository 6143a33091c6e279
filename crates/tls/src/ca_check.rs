//! Kong's checks of a CA certificate (`ca_certificates`' entity check): one certificate per entity, not
//! expired, and a CA by its basic constraints. Read with x509-parser, which takes v1 certificates too (a v1
//! certificate has no extensions, so it is not a CA, as OpenSSL's `get_basic_constraints` says for Kong).

/// Kong's message for the first check `pem` fails, at `now` (seconds since the epoch); Ok for a certificate
/// Kong takes. A PEM that does not parse is left to the PEM field checks (Ok here).
pub fn check_ca_certificate(pem: &str, now: i64) -> Result<(), String> {
    const TAG: &str = "-----BEGIN CERTIFICATE-----";
    if pem.matches(TAG).count() > 1 {
        return Err("please submit only one certificate at a time".into());
    }
    let Ok((_, block)) = x509_parser::pem::parse_x509_pem(pem.as_bytes()) else {
        return Ok(());
    };
    let Ok(cert) = block.parse_x509() else {
        return Ok(());
    };
    if cert.validity().not_after.timestamp() < now {
        return Err("certificate expired, \"Not After\" time is in the past".into());
    }
    let is_ca = matches!(cert.basic_constraints(), Ok(Some(bc)) if bc.value.ca);
    if !is_ca {
        return Err(
            "certificate does not appear to be a CA because it is missing the \"CA\" basic constraint"
                .into(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_ca_certificate;
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};

    fn cert(ca: bool, not_after_year: i32) -> String {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec!["ca.test".into()]).unwrap();
        if ca {
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        }
        params.not_after = rcgen::date_time_ymd(not_after_year, 1, 1);
        params.self_signed(&key).unwrap().pem()
    }

    #[test]
    fn a_ca_passes_and_each_refusal_has_kongs_message() {
        let now = 1_800_000_000; // 2027
        assert_eq!(check_ca_certificate(&cert(true, 2100), now), Ok(()));
        let leaf = check_ca_certificate(&cert(false, 2100), now).unwrap_err();
        assert!(
            leaf.contains("missing the \"CA\" basic constraint"),
            "{leaf}"
        );
        let expired = check_ca_certificate(&cert(true, 2020), now).unwrap_err();
        assert!(expired.starts_with("certificate expired"), "{expired}");
        let two = cert(true, 2100) + &cert(true, 2100);
        assert_eq!(
            check_ca_certificate(&two, now).unwrap_err(),
            "please submit only one certificate at a time"
        );
    }

    #[test]
    fn a_v1_certificate_is_not_a_ca() {
        let v1 = sluice_v1_cert();
        let e = check_ca_certificate(&v1, 0).unwrap_err();
        assert!(e.contains("basic constraint"), "{e}");
    }

    /// The v1 certificate of the testkit's fixtures (no extensions at all).
    fn sluice_v1_cert() -> String {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../testkit/fixtures/x509-v1.crt"
        );
        std::fs::read_to_string(path).expect("the testkit's v1 certificate")
    }
}
