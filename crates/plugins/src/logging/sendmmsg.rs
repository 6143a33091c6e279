//! Sends many datagrams on a connected UDP socket in few system calls (`sendmmsg(2)`), each still its own
//! datagram, in order. Runs on the `sluice-log` thread, in the metric plugins' sink: Kong's `statsd` sends
//! 13 lines per request, one datagram each, and one `send` per line cost a system call entry and exit
//! each on the gateway's CPU.
//!
//! The `unsafe` of this crate is here only, in [`send_some`]: one call into the C library.

#[cfg(test)]
mod tests;

use std::io;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;

/// Datagrams handed to one `sendmmsg` call: its headers live on the stack (80 bytes each).
const CHUNK: usize = 64;

/// Sends each of `datagrams` as one datagram, in order, on a connected (non-blocking) socket. A datagram
/// the kernel refuses is skipped and the rest are still sent, as a loop of `send` calls would; the first
/// error is returned.
pub fn send_each(socket: &UdpSocket, datagrams: &[&[u8]]) -> Option<io::Error> {
    let mut first_error = None;
    let mut rest = datagrams;
    while !rest.is_empty() {
        match send_some(socket, &rest[..rest.len().min(CHUNK)]) {
            Ok(sent) => rest = &rest[sent..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                // The error is about the first datagram of the call: it was not sent.
                first_error.get_or_insert(e);
                rest = &rest[1..];
            }
        }
    }
    first_error
}

/// One `sendmmsg` of up to [`CHUNK`] datagrams: how many were sent (at least one), or the error of the
/// first.
fn send_some(socket: &UdpSocket, datagrams: &[&[u8]]) -> io::Result<usize> {
    let count = datagrams.len().min(CHUNK);
    let empty = libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    };
    let mut iovecs = [empty; CHUNK];
    for (iov, datagram) in iovecs.iter_mut().zip(datagrams) {
        iov.iov_base = datagram.as_ptr() as *mut libc::c_void;
        iov.iov_len = datagram.len();
    }
    let iov_base = iovecs.as_mut_ptr();
    let mut headers: [libc::mmsghdr; CHUNK] = std::array::from_fn(|i| libc::mmsghdr {
        msg_hdr: libc::msghdr {
            msg_name: std::ptr::null_mut(),
            msg_namelen: 0,
            msg_iov: iov_base.wrapping_add(i),
            msg_iovlen: 1,
            msg_control: std::ptr::null_mut(),
            msg_controllen: 0,
            msg_flags: 0,
        },
        msg_len: 0,
    });
    #[allow(unsafe_code)]
    // SAFETY: `headers[..count]` are initialized `mmsghdr`s, each pointing at one `iovec` of `iovecs`,
    // which points at a datagram borrowed for this call; all of them outlive the call, which only reads
    // them (and writes `msg_len` into the headers). No address: the socket is connected.
    let sent = unsafe {
        libc::sendmmsg(
            socket.as_raw_fd(),
            headers.as_mut_ptr(),
            count as libc::c_uint,
            libc::MSG_DONTWAIT,
        )
    };
    match sent {
        n if n > 0 => Ok(n as usize),
        0 => Err(io::Error::new(io::ErrorKind::WriteZero, "no datagram sent")),
        _ => Err(io::Error::last_os_error()),
    }
}
