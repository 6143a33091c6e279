//! A private `redis-server` on a port of the test's own, for tests that stop or kill it.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A private redis-server on `port`, killed on drop.
pub struct PrivateRedis(pub Child);

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

impl PrivateRedis {
    pub fn start(port: u16) -> PrivateRedis {
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (apt-get install -y redis-server; scripts/test.sh does)");
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        PrivateRedis(child)
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
