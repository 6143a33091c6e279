//! The SubjectPublicKeyInfo of a certificate, read from its DER by walking the TBSCertificate's fields
//! (RFC 5280 §4.1). rustls matches a key to its certificate with webpki, which refuses X.509 v1
//! certificates (no extensions, no version field); Kong accepts them (its own test certificates are v1),
//! so the key check falls back to comparing the SPKI found here with the key's.

/// One DER element at the front of `der`: its tag, its contents, and what follows it.
fn element(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = match first {
        n if n < 0x80 => (n as usize, rest),
        0x81..=0x84 => {
            let bytes = (first & 0x7f) as usize;
            let (len_bytes, rest) = rest.split_at_checked(bytes)?;
            let len = len_bytes.iter().fold(0usize, |n, b| (n << 8) | *b as usize);
            (len, rest)
        }
        _ => return None,
    };
    let (contents, after) = rest.split_at_checked(len)?;
    Some((tag, contents, after))
}

/// The whole SubjectPublicKeyInfo element (tag and length included) of a DER certificate.
pub(crate) fn subject_public_key_info(cert: &[u8]) -> Option<&[u8]> {
    const SEQUENCE: u8 = 0x30;
    const VERSION: u8 = 0xa0; // [0] EXPLICIT, absent in v1
    let (SEQUENCE, certificate, _) = element(cert)? else {
        return None;
    };
    let (SEQUENCE, mut tbs, _) = element(certificate)? else {
        return None;
    };
    if tbs.first() == Some(&VERSION) {
        tbs = element(tbs)?.2;
    }
    // serialNumber, signature, issuer, validity, subject.
    for _ in 0..5 {
        tbs = element(tbs)?.2;
    }
    let (SEQUENCE, _, after) = element(tbs)? else {
        return None;
    };
    Some(&tbs[..tbs.len() - after.len()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_found_in_v3_certificates_and_nothing_in_garbage() {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["a.test".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        assert_eq!(
            subject_public_key_info(cert.der()),
            Some(key.public_key_der().as_slice())
        );
        for garbage in [
            &b""[..],
            b"\x30",
            b"\x30\x85\x01\x02\x03\x04\x05",
            b"\x02\x01\x00",
        ] {
            assert_eq!(subject_public_key_info(garbage), None);
        }
        let der = cert.der().to_vec();
        for cut in [1, 10, der.len() / 2, der.len() - 1] {
            let _ = subject_public_key_info(&der[..cut]);
        }
    }
}
