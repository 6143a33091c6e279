use super::*;

#[test]
fn stat_fields_skip_the_command_name() {
    let stat = "42 (my (odd) cmd) S 7 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0";
    assert_eq!(stat_field(stat, 3), None); // field 3 is the state letter
    assert_eq!(stat_field(stat, 4), Some(7));
    assert_eq!(stat_field(stat, 14), Some(250));
    assert_eq!(stat_field(stat, 15), Some(50));
    assert_eq!(stat_field("garbage", 14), None);
}

#[test]
fn cpu_lists() {
    let table: &[(&str, Option<&[u32]>)] = &[
        ("0", Some(&[0])),
        ("0-1", Some(&[0, 1])),
        ("0,2-3", Some(&[0, 2, 3])),
        ("", None),
        ("3-1", None),
        ("x", None),
    ];
    for &(list, want) in table {
        assert_eq!(
            parse_cpu_list(list),
            want.map(|w| w.iter().copied().collect()),
            "{list}"
        );
    }
}

#[test]
fn status_fields() {
    let status = "Name:\tx\nVmHWM:\t   1234 kB\nVmRSS:\t  99 kB\n";
    assert_eq!(status_kib(status, "VmHWM"), Some(1234));
    assert_eq!(status_kib(status, "VmSwap"), None);
}

#[test]
fn own_process_is_measurable() {
    let me = std::process::id();
    assert!(tree(me).contains(&me));
    assert!(tree_cpu_seconds(me).is_some());
    // Touching fresh pages faults them in, and the count shows it.
    let before = tree_minor_faults(me).unwrap();
    let touched = vec![1u8; 64 << 20];
    assert!(
        tree_minor_faults(me).unwrap() >= before + 1000,
        "{}",
        touched[4096]
    );
    assert!(tree_peak_rss_kib(me).unwrap_or(0) > 0);
    let allowed = cpus_allowed(me).unwrap();
    assert_eq!(check_pinning(me, "me", &allowed), None);
}

#[test]
fn tree_includes_children() {
    let mut child = std::process::Command::new("sleep")
        .arg("5")
        .spawn()
        .unwrap();
    let pid = child.id();
    let found = tree(std::process::id());
    let _ = child.kill();
    let _ = child.wait();
    assert!(found.contains(&pid), "{found:?} lacks {pid}");
}
