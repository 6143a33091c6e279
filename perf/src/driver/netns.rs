//! Network namespaces for the `netns` driver: the gateway and the upstream each get a namespace of their
//! own, joined by veth pairs, so traffic crosses network devices as between separate hosts:
//!
//! ```text
//! this namespace (load generator) ── veth ── gateway namespace ── veth ── upstream namespace
//!        10.201.N.1/30                 10.201.N.2 | 10.202.N.1                  10.202.N.2/30
//! ```
//!
//! `N` comes from the process id, so concurrent runs do not collide. Routes let this namespace reach the
//! upstream through the gateway namespace (for readiness probes). Everything is removed on drop; the
//! namespaces are fresh, so any port in them is free.

use anyhow::{bail, Context, Result};
use std::net::IpAddr;
use std::process::Command;

/// The namespaces of one run and the addresses in them.
pub struct Namespaces {
    pub gateway_ns: String,
    pub upstream_ns: String,
    pub gateway_ip: IpAddr,
    pub upstream_ip: IpAddr,
    /// The veth end in this namespace (deleting it deletes its peer).
    root_link: String,
    /// Deletes the namespaces if the run is interrupted.
    _held: crate::interrupt::Held,
}

fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .context("cannot run `ip` (apt-get install -y iproute2)")?;
    if !out.status.success() {
        bail!(
            "ip {}: {} (the netns driver needs root or CAP_NET_ADMIN)",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

fn in_ns(ns: &str, args: &[&str]) -> Result<()> {
    let mut all = vec!["netns", "exec", ns];
    all.extend_from_slice(args);
    ip(&all)
}

impl Namespaces {
    /// Creates the namespaces, the veth pairs, the addresses and the routes.
    pub fn create() -> Result<Namespaces> {
        let id = std::process::id();
        let n = id % 250 + 1;
        let tag = format!("sp{}", id % 100_000);
        let ns = Namespaces {
            gateway_ns: format!("{tag}-gw"),
            upstream_ns: format!("{tag}-up"),
            gateway_ip: format!("10.201.{n}.2").parse()?,
            upstream_ip: format!("10.202.{n}.2").parse()?,
            root_link: format!("{tag}a"),
            _held: crate::interrupt::hold_namespaces(
                &[&format!("{tag}-gw"), &format!("{tag}-up")],
                &format!("{tag}a"),
            ),
        };
        // Dropping `ns` on a failure below removes whatever was made.
        ns.build(&tag, n)?;
        Ok(ns)
    }

    fn build(&self, tag: &str, n: u32) -> Result<()> {
        let (gw, up) = (self.gateway_ns.as_str(), self.upstream_ns.as_str());
        let (a, b, c, d) = (
            self.root_link.clone(),
            format!("{tag}b"),
            format!("{tag}c"),
            format!("{tag}d"),
        );
        let (root_ip, gw_ip1) = (format!("10.201.{n}.1/30"), format!("10.201.{n}.2/30"));
        let (gw_ip2, up_ip) = (format!("10.202.{n}.1/30"), format!("10.202.{n}.2/30"));
        ip(&["netns", "add", gw])?;
        ip(&["netns", "add", up])?;
        ip(&["link", "add", &a, "type", "veth", "peer", "name", &b])?;
        ip(&["link", "set", &b, "netns", gw])?;
        ip(&["link", "add", &c, "type", "veth", "peer", "name", &d])?;
        ip(&["link", "set", &c, "netns", gw])?;
        ip(&["link", "set", &d, "netns", up])?;
        ip(&["addr", "add", &root_ip, "dev", &a])?;
        ip(&["link", "set", &a, "up"])?;
        for (ns, link, addr) in [(gw, &b, &gw_ip1), (gw, &c, &gw_ip2), (up, &d, &up_ip)] {
            in_ns(ns, &["ip", "addr", "add", addr, "dev", link])?;
            in_ns(ns, &["ip", "link", "set", link, "up"])?;
        }
        for ns in [gw, up] {
            in_ns(ns, &["ip", "link", "set", "lo", "up"])?;
        }
        in_ns(gw, &["sysctl", "-qw", "net.ipv4.ip_forward=1"])?;
        in_ns(
            up,
            &[
                "ip",
                "route",
                "add",
                "default",
                "via",
                &format!("10.202.{n}.1"),
            ],
        )?;
        ip(&[
            "route",
            "add",
            &format!("10.202.{n}.0/30"),
            "via",
            &format!("10.201.{n}.2"),
        ])?;
        Ok(())
    }

    /// The command prefix that runs a program in `ns`.
    pub fn exec_prefix(ns: &str) -> Vec<String> {
        vec!["ip".into(), "netns".into(), "exec".into(), ns.into()]
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        // Deleting the namespaces deletes the links inside them; the root end goes with its peer.
        let _ = ip(&["link", "del", &self.root_link]);
        let _ = ip(&["netns", "del", &self.gateway_ns]);
        let _ = ip(&["netns", "del", &self.upstream_ns]);
    }
}
