//! The control plane keeps the whole-config frame for Sluice data planes ready, so that a DP that
//! connects (a fresh one, or one after a `sluice_resync`) gets it at once instead of waiting for the CP to
//! export, serialize and gzip the config (hundreds of milliseconds at 10,000 routes). The frame is made
//! once the config has been quiet for [`QUIET`]: while changes stream in, deltas carry them and no whole
//! frame is made per change. Runs for the life of `cluster_listen` ([`super::cp::serve`]).

use super::push::Pushes;
use crate::loader::Loader;
use std::sync::Arc;
use std::time::Duration;

/// How long the config must stay unchanged before its whole frame is made.
pub const QUIET: Duration = Duration::from_millis(500);

/// Makes the push and the Sluice full frame of each config that stays live for [`QUIET`].
pub async fn keep_full_frame_ready(loader: Arc<Loader>, pushes: Arc<Pushes>) {
    let mut changes = loader.subscribe();
    loop {
        match tokio::time::timeout(QUIET, changes.changed()).await {
            // A change: wait for quiet again.
            Ok(Ok(())) => continue,
            // The loader is gone: so is the CP.
            Ok(Err(_)) => return,
            Err(_quiet) => {}
        }
        if loader.is_ready() {
            let (pushes, loader) = (pushes.clone(), loader.clone());
            let made = tokio::task::spawn_blocking(move || {
                drop(pushes.current(&loader).sluice_frame());
            });
            if let Err(e) = made.await {
                tracing::warn!(error = %e, "making the whole-config frame ahead failed");
            }
        }
        if changes.changed().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests;
