//! [`Corked`] on a stream that records its writes: small writes wait for the second flush and leave as
//! one, large ones go straight on in order; and through hyper's client, a call's HEADERS and its one
//! DATA frame with END_STREAM leave in the same write.

use super::*;
use crate::h2::{start, Local};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Wake, Waker};

/// The writes that reached the stream, each as it was made.
type Writes = Arc<Mutex<Vec<Vec<u8>>>>;

/// A stream that records its writes (and reads from `inner`, when there is one).
struct Recorder<IO> {
    inner: IO,
    writes: Writes,
}

impl<IO: AsyncRead + Unpin> AsyncRead for Recorder<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Recorder<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let n = ready!(Pin::new(&mut self.inner).poll_write(cx, data))?;
        self.writes.lock().unwrap().push(data[..n].to_vec());
        Poll::Ready(Ok(n))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A waker that counts its wakes.
#[derive(Default)]
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn corked() -> (Corked<Recorder<tokio::io::Sink>>, Writes) {
    let writes = Writes::default();
    let inner = tokio::io::sink();
    let recorder = Recorder {
        inner,
        writes: writes.clone(),
    };
    (Corked::new(recorder), writes)
}

#[test]
fn small_writes_leave_together_at_the_second_flush() {
    let (mut corked, writes) = corked();
    let count = Arc::new(Count::default());
    let waker = Waker::from(count.clone());
    let cx = &mut Context::from_waker(&waker);
    let mut c = Pin::new(&mut corked);
    assert!(matches!(
        c.as_mut().poll_write(cx, b"head"),
        Poll::Ready(Ok(4))
    ));
    assert!(
        c.as_mut().poll_flush(cx).is_pending(),
        "the first flush waits a turn"
    );
    assert_eq!(
        count.0.load(Ordering::SeqCst),
        1,
        "and wakes its task for it"
    );
    assert!(writes.lock().unwrap().is_empty());
    let bufs = [IoSlice::new(b"da"), IoSlice::new(b"ta")];
    assert!(matches!(
        c.as_mut().poll_write_vectored(cx, &bufs),
        Poll::Ready(Ok(4))
    ));
    assert!(matches!(c.as_mut().poll_flush(cx), Poll::Ready(Ok(()))));
    assert_eq!(*writes.lock().unwrap(), vec![b"headdata".to_vec()]);
    // Nothing buffered: a flush has nothing to wait for.
    assert!(matches!(c.as_mut().poll_flush(cx), Poll::Ready(Ok(()))));
}

#[test]
fn a_large_write_goes_straight_on_after_what_is_buffered() {
    let (mut corked, writes) = corked();
    let waker = Waker::from(Arc::new(Count::default()));
    let cx = &mut Context::from_waker(&waker);
    let mut c = Pin::new(&mut corked);
    let large = vec![7u8; LARGE];
    assert!(matches!(
        c.as_mut().poll_write(cx, b"small"),
        Poll::Ready(Ok(5))
    ));
    assert!(matches!(c.as_mut().poll_write(cx, &large), Poll::Ready(Ok(n)) if n == LARGE));
    assert_eq!(*writes.lock().unwrap(), vec![b"small".to_vec(), large]);
}

/// The frames in `bytes` (whole ones, after the connection's preface): (type, flags, stream id).
fn frames(mut bytes: &[u8]) -> Vec<(u8, u8, u32)> {
    bytes = bytes
        .strip_prefix(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .unwrap_or(bytes);
    let mut out = Vec::new();
    while bytes.len() >= 9 {
        let len = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]) as usize;
        let id = u32::from_be_bytes([bytes[5], bytes[6], bytes[7], bytes[8]]) & 0x7fff_ffff;
        out.push((bytes[3], bytes[4], id));
        bytes = &bytes[(9 + len).min(bytes.len())..];
    }
    out
}

const DATA: u8 = 0;
const HEADERS: u8 = 1;
const END_STREAM: u8 = 1;

#[tokio::test]
async fn a_calls_headers_and_its_whole_body_leave_in_one_write() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let service =
            hyper::service::service_fn(|req: http::Request<hyper::body::Incoming>| async {
                let body = req.into_body().collect().await.unwrap().to_bytes();
                Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(body)))
            });
        let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
            .serve_connection(TokioIo::new(stream), service)
            .await;
    });
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let writes = Writes::default();
    let io = Recorder {
        inner: tcp,
        writes: writes.clone(),
    };
    let local = Local::new();
    let builder = hyper::client::conn::http2::Builder::new(local.clone());
    let (mut sender, _) = start(&builder, local, io, None).await.unwrap();
    // The first call's frames may leave with the connection's preface and settings; the second's
    // (stream 3) are on their own.
    for _ in 0..2 {
        let req = http::Request::post(format!("http://{addr}/echo"))
            .body(crate::body::full(Bytes::from_static(b"hello")))
            .unwrap();
        sender.ready().await.unwrap();
        let resp = sender.send_request(req).await.unwrap();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body, "hello");
    }
    let writes = writes.lock().unwrap();
    let with_headers = writes
        .iter()
        .map(|w| frames(w))
        .find(|f| f.iter().any(|&(t, _, id)| t == HEADERS && id == 3))
        .expect("a write with the second call's HEADERS");
    assert!(
        with_headers.contains(&(DATA, END_STREAM, 3)),
        "HEADERS and DATA went in separate writes: {writes:?}"
    );
}
