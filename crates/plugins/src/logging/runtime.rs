//! The `sluice-log` thread: one `current_thread` tokio runtime, started on first use, that runs the drain
//! task of every logging queue. Proxy workers never run queue work; they only push records.

use std::sync::OnceLock;
use tokio::runtime::Handle;

static HANDLE: OnceLock<Result<Handle, String>> = OnceLock::new();

/// The runtime that drains logging queues, started on the first call (plugin factories call it while a
/// config is compiled). Lives until the process exits; it is one thread however many queues exist.
pub fn handle() -> Result<&'static Handle, String> {
    HANDLE
        .get_or_init(start)
        .as_ref()
        .map_err(|e| format!("cannot start the log thread: {e}"))
}

fn start() -> Result<Handle, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("sluice-log".into())
        .spawn(move || {
            match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .thread_name("sluice-log-io")
                .build()
            {
                Ok(rt) => {
                    let _ = tx.send(Ok(rt.handle().clone()));
                    rt.block_on(std::future::pending::<()>());
                }
                Err(e) => {
                    let _ = tx.send(Err(e.to_string()));
                }
            }
        })
        .map_err(|e| e.to_string())?;
    rx.recv().map_err(|e| e.to_string())?
}
