//! A connection handed over after a `101 Switching Protocols`: the socket and the bytes already read past
//! the request head ([`Handed`]). The upgrade driver takes it from the request's extensions
//! ([`OwnUpgrade`]); the connection task sends it once the 101 is written.

use crate::rewind::Rewind;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::oneshot;

/// Any client transport, boxed once it leaves HTTP.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// A connection that left HTTP/1.1, with what was read ahead first.
pub type Handed = Rewind<Box<dyn Io>>;

/// In a request's extensions when its head had `Upgrade`: where the connection arrives after a 101.
/// (Extensions must be `Clone`; only one taker ever gets the receiver.)
#[derive(Clone)]
pub struct OwnUpgrade(Arc<Mutex<Option<oneshot::Receiver<Handed>>>>);

impl OwnUpgrade {
    pub fn pair() -> (OwnUpgrade, oneshot::Sender<Handed>) {
        let (tx, rx) = oneshot::channel();
        (OwnUpgrade(Arc::new(Mutex::new(Some(rx)))), tx)
    }

    /// The receiver, for the one who takes the upgrade.
    pub fn take(&self) -> Option<oneshot::Receiver<Handed>> {
        self.0.lock().ok()?.take()
    }
}
