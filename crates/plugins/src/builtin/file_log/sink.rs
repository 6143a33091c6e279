//! Appending `file-log` batches to the file, on the blocking pool of the `sluice-log` runtime.

use crate::logging::queue::Sink;
use crate::logging::reopen_files_generation;
use bytes::Bytes;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The open file and the reopen generation it was opened in.
type Slot = Option<(File, u64)>;

pub(super) struct FileSink {
    path: Arc<PathBuf>,
    reopen: bool,
    file: Arc<Mutex<Slot>>,
}

impl FileSink {
    pub fn new(path: PathBuf, reopen: bool) -> FileSink {
        FileSink {
            path: Arc::new(path),
            reopen,
            file: Arc::default(),
        }
    }
}

impl Sink for FileSink {
    async fn deliver(&self, batch: &[Bytes]) -> Result<(), String> {
        let mut lines = Vec::with_capacity(batch.iter().map(|r| r.len() + 1).sum());
        for record in batch {
            lines.extend_from_slice(record);
            lines.push(b'\n');
        }
        let (path, reopen, file) = (self.path.clone(), self.reopen, self.file.clone());
        tokio::task::spawn_blocking(move || append(&path, reopen, &file, &lines))
            .await
            .map_err(|e| format!("file-log writer failed: {e}"))?
    }
}

/// Writes `lines` to the open file, (re)opening it first when asked to or after [`reopen_log_files`].
///
/// [`reopen_log_files`]: crate::logging::reopen_log_files
fn append(path: &PathBuf, reopen: bool, file: &Mutex<Slot>, lines: &[u8]) -> Result<(), String> {
    let generation = reopen_files_generation();
    let mut slot = file.lock().unwrap_or_else(|p| p.into_inner());
    let stale = reopen || slot.as_ref().is_none_or(|(_, g)| *g != generation);
    if stale {
        *slot = None;
        let opened = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o644)
            .open(path)
            .map_err(|e| format!("failed to open the file {}: {e}", path.display()))?;
        *slot = Some((opened, generation));
    }
    let written = match slot.as_mut() {
        Some((f, _)) => f
            .write_all(lines)
            .map_err(|e| format!("failed to write to {}: {e}", path.display())),
        None => Ok(()),
    };
    if reopen || written.is_err() {
        *slot = None;
    }
    written
}
