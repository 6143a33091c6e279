//! The whole frame is made once a config has been quiet, and not while changes keep coming.

use super::*;
use crate::hybrid::testing::{loader, serve};

#[tokio::test]
async fn the_full_frame_is_made_after_quiet_and_not_during_a_stream_of_changes() {
    let dir = tempfile::tempdir().unwrap();
    let loader = loader(dir.path(), &["/a"]);
    let pushes = Arc::new(Pushes::default());
    let warmer = tokio::spawn(keep_full_frame_ready(loader.clone(), pushes.clone()));
    tokio::time::sleep(QUIET * 3).await;
    assert!(
        pushes.current(&loader).sluice_frame_made(),
        "made after quiet"
    );

    // Changes faster than QUIET: no frame for any of them.
    let mut streamed = Vec::new();
    for paths in [
        &["/a", "/b"][..],
        &["/a", "/b", "/c"],
        &["/a", "/c"],
        &["/c"],
    ] {
        serve(&loader, paths);
        tokio::time::sleep(QUIET / 5).await;
        streamed.push(pushes.current(&loader));
    }
    for (i, push) in streamed.iter().enumerate() {
        assert!(
            !push.sluice_frame_made(),
            "change {i}: none during the stream"
        );
    }
    tokio::time::sleep(QUIET * 3).await;
    assert!(
        pushes.current(&loader).sluice_frame_made(),
        "made once quiet again"
    );
    warmer.abort();
}
