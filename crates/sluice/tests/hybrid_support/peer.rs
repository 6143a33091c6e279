//! Drives `peer.py`, a hybrid peer written from Kong's protocol: a data plane (Kong's, or one offering
//! Sluice's deltas) in front of a Sluice CP, or a control plane behind a Sluice DP. Its frames arrive as
//! JSON values; frames to send are given as bytes.

use base64::Engine;
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/hybrid_support/peer.py");

pub struct Peer {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Value>,
}

impl Peer {
    /// A data plane connecting to the CP at `cluster_port`; `deltas`: it offers Sluice's deltas.
    pub fn data_plane(cluster_port: u16, cert: &(String, String), deltas: bool) -> Peer {
        let address = format!("127.0.0.1:{cluster_port}");
        let mut args = vec!["dp", &address, &cert.0, &cert.1];
        if deltas {
            args.push("deltas");
        }
        Peer::spawn(&args)
    }

    /// A control plane; the port it listens on.
    pub fn control_plane(cert: &(String, String)) -> (Peer, u16) {
        let mut peer = Peer::spawn(&["cp", &cert.0, &cert.1]);
        let port = peer.next(Duration::from_secs(10))["port"].as_u64().unwrap();
        (peer, port as u16)
    }

    fn spawn(args: &[&str]) -> Peer {
        let mut child = Command::new("python3")
            .arg(SCRIPT)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                let value = serde_json::from_str(&line).unwrap_or(Value::String(line));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Peer {
            child,
            stdin,
            lines,
        }
    }

    /// The next line it printed; panics after `within`.
    pub fn next(&mut self, within: Duration) -> Value {
        match self.lines.recv_timeout(within) {
            Ok(v) => v,
            Err(RecvTimeoutError::Timeout) => panic!("the peer printed nothing for {within:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("the peer exited"),
        }
    }

    /// The next frame it received, skipping other lines; panics after `within`.
    pub fn frame(&mut self, within: Duration) -> (usize, Value) {
        let deadline = Instant::now() + within;
        loop {
            let line = self.next(deadline.saturating_duration_since(Instant::now()));
            if let Some(frame) = line.get("frame") {
                return (line["bytes"].as_u64().unwrap() as usize, frame.clone());
            }
        }
    }

    /// The frame that arrives within `within`, if one does.
    pub fn maybe_frame(&mut self, within: Duration) -> Option<Value> {
        let deadline = Instant::now() + within;
        while let Ok(line) = self
            .lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            if let Some(frame) = line.get("frame") {
                return Some(frame.clone());
            }
        }
        None
    }

    /// Sends a binary frame.
    pub fn send(&mut self, frame: &[u8]) {
        let line = base64::engine::general_purpose::STANDARD.encode(frame);
        writeln!(self.stdin, "send {line}").unwrap();
    }

    /// Asks the CP for the whole config (`sluice_resync`).
    pub fn resync(&mut self) {
        writeln!(self.stdin, "resync").unwrap();
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
