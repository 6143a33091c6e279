use super::*;
use crate::hybrid::testing::{loader, serve};
use sluice_cluster::frames::cp::CpMessage;

fn decode(frame: &Bytes) -> CpMessage {
    CpMessage::decode(frame, 16 << 20).unwrap()
}

#[test]
fn each_config_is_made_once_and_deltas_chain_from_any_kept_version() {
    let dir = tempfile::tempdir().unwrap();
    let loader = loader(dir.path(), &["/a"]);
    let pushes = Pushes::default();
    let first = pushes.current(&loader);
    assert!(Arc::ptr_eq(&first, &pushes.current(&loader)), "made once");
    match decode(&first.kong_frame()) {
        CpMessage::Reconfigure(r) => assert_eq!(
            (r.sluice, r.config_hash),
            (None, first.hashes.config.clone())
        ),
        _ => panic!("not a reconfigure"),
    }
    match decode(&first.sluice_frame()) {
        CpMessage::Reconfigure(r) => assert_eq!(
            r.sluice,
            Some(SluiceFull {
                version: first.version
            })
        ),
        _ => panic!("not a reconfigure"),
    }

    serve(&loader, &["/a", "/b"]);
    let second = pushes.current(&loader);
    serve(&loader, &["/a", "/b", "/c"]);
    let third = pushes.current(&loader);
    assert_eq!(third.version, first.version + 2);
    let chain = pushes.deltas_from(first.version, &third).unwrap();
    let deltas: Vec<Delta> = chain
        .iter()
        .map(|f| match decode(f) {
            CpMessage::Delta(d) => d,
            _ => panic!("not a delta"),
        })
        .collect();
    assert_eq!(deltas.len(), 2);
    assert_eq!(
        (deltas[0].base_version, deltas[0].version),
        (first.version, second.version)
    );
    assert_eq!(deltas[1].config_hash, third.hashes.config);
    assert_eq!(deltas[1].changes.len(), 1);
    assert_eq!(
        pushes.deltas_from(second.version, &third).map(|c| c.len()),
        Some(1)
    );

    // Reordered routes cannot be a delta: nothing chains past them.
    serve(&loader, &["/c", "/b", "/a"]);
    let fourth = pushes.current(&loader);
    assert_eq!(pushes.deltas_from(third.version, &fourth), None);
    assert_eq!(pushes.deltas_from(first.version, &fourth), None);
}
