//! What a test process left when it died before its [`super::Lan`] was dropped (killed by a timeout or a
//! signal): its namespaces, the processes it ran in them, and its link in this namespace, found by the
//! process id in their names (`sl<pid>_<k>...`) and removed when that process is gone.

use std::process::Command;

/// The process that made a namespace or link named `name`, when the name is one of a [`super::Lan`].
fn owner(name: &str) -> Option<u32> {
    let (pid, rest) = name.strip_prefix("sl")?.split_once('_')?;
    rest.starts_with(|c: char| c.is_ascii_digit())
        .then(|| pid.parse().ok())
        .flatten()
}

fn gone(name: &str) -> bool {
    owner(name).is_some_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
}

fn listed(args: &[&str]) -> String {
    Command::new("ip")
        .args(args)
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
        .unwrap_or_default()
}

/// Removes the namespaces and links of LANs whose processes are gone.
pub fn sweep() {
    let namespaces = listed(&["netns", "list"]);
    for name in namespaces
        .lines()
        .filter_map(|l| l.split_whitespace().next())
    {
        if gone(name) {
            // The gateways it ran there outlived it.
            for pid in listed(&["netns", "pids", name]).split_whitespace() {
                let _ = Command::new("kill").args(["-KILL", pid]).status();
            }
            let _ = Command::new("ip").args(["netns", "del", name]).status();
        }
    }
    // `ip -o link`: "7: sl123_0r@if6: <...> ...".
    let links = listed(&["-o", "link", "show"]);
    for line in links.lines() {
        let name = line.split(": ").nth(1).unwrap_or_default();
        let name = name.split('@').next().unwrap_or_default();
        if gone(name) {
            let _ = Command::new("ip").args(["link", "del", name]).status();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::owner;

    #[test]
    fn owners_come_from_lan_names_only() {
        assert_eq!(owner("sl4194304_9-lan"), Some(4194304));
        assert_eq!(owner("sl12_0r"), Some(12));
        assert_eq!(owner("sl12_0h249"), Some(12));
        assert_eq!(owner("sp123-gw"), None);
        assert_eq!(owner("sl12-lan"), None);
        assert_eq!(owner("sl12_x"), None);
    }
}
