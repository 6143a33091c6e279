use super::*;

fn rec<'a>(kind: &'a str, id: &'a str, body: &'a [u8]) -> EntityRecord<'a> {
    EntityRecord {
        kind,
        id,
        body,
        unique: vec![],
        foreign: vec![],
    }
}

#[test]
fn replace_all_round_trips_in_order_and_replaces() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 10 << 20).unwrap();
    assert_eq!(store.load().unwrap(), None);
    let mut svc = rec("services", "s1", b"{\"name\":\"a\"}");
    svc.unique.push(("name", "a".into()));
    let mut route = rec("routes", "r1", b"{}");
    route.foreign.push(("services", "s1"));
    let records = vec![
        rec("routes", "r0", b"0"),
        svc,
        route,
        rec("routes", "r2", b"2"),
    ];
    store.replace_all("h1", "3.0", &records).unwrap();
    let snap = store.load().unwrap().unwrap();
    assert_eq!(snap.hash, "h1");
    assert_eq!(snap.format_version, "3.0");
    assert_eq!(
        snap.entities[0],
        (
            "routes".to_string(),
            vec![b"0".to_vec(), b"{}".to_vec(), b"2".to_vec()]
        )
    );
    assert_eq!(snap.entities[1].0, "services");
    assert_eq!(
        store.get("routes", "r2").unwrap().as_deref(),
        Some(&b"2"[..])
    );
    assert_eq!(
        store
            .get_by_unique("services", "name", "a")
            .unwrap()
            .as_deref(),
        Some(&b"{\"name\":\"a\"}"[..])
    );
    assert_eq!(
        store.referencing("services", "s1", "routes").unwrap(),
        vec!["r1".to_string()]
    );

    store
        .replace_all("h2", "3.0", &[rec("consumers", "c1", b"c")])
        .unwrap();
    let snap = store.load().unwrap().unwrap();
    assert_eq!(
        snap.entities,
        vec![("consumers".to_string(), vec![b"c".to_vec()])]
    );
    assert_eq!(store.get("routes", "r2").unwrap(), None);
    assert_eq!(store.current_hash().unwrap().as_deref(), Some("h2"));
}

#[test]
fn a_config_larger_than_the_map_fails_and_keeps_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 1 << 20).unwrap();
    store
        .replace_all("small", "3.0", &[rec("services", "s", b"x")])
        .unwrap();
    let big = vec![7u8; 64 * 1024];
    let ids: Vec<String> = (0..64).map(|i| format!("id{i}")).collect();
    let records: Vec<_> = ids.iter().map(|id| rec("services", id, &big)).collect();
    match store.replace_all("big", "3.0", &records) {
        Err(StoreError::Full { .. }) => {}
        other => panic!("expected Full, got {other:?}"),
    }
    assert_eq!(store.current_hash().unwrap().as_deref(), Some("small"));
    assert_eq!(
        store.load().unwrap().unwrap().entities[0].1,
        vec![b"x".to_vec()]
    );
}

#[test]
fn reopening_sees_committed_data() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path(), 10 << 20).unwrap();
        store
            .replace_all("h", "3.0", &[rec("services", "s", b"x")])
            .unwrap();
    }
    let store = Store::open(dir.path(), 10 << 20).unwrap();
    assert_eq!(store.current_hash().unwrap().as_deref(), Some("h"));
}

#[test]
fn garbage_files_give_an_error_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.mdb"), vec![0xAB; 64 * 1024]).unwrap();
    let err = Store::open(dir.path(), 10 << 20)
        .err()
        .expect("garbage must not open");
    assert!(
        err.to_string().contains(&dir.path().display().to_string()),
        "{err}"
    );
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let err = Store::open(&file, 10 << 20)
        .err()
        .expect("a file is not a directory");
    assert!(err.to_string().contains("a-file"), "{err}");
}

#[test]
fn list_keeps_insertion_order_across_kinds() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 10 << 20).unwrap();
    let bodies: Vec<String> = (0..300).map(|i| format!("{{\"n\":{i}}}")).collect();
    let ids: Vec<String> = (0..300).map(|i| format!("id-{:03}", 299 - i)).collect();
    let records: Vec<_> = bodies
        .iter()
        .zip(&ids)
        .enumerate()
        .map(|(i, (b, id))| rec(if i % 3 == 0 { "a" } else { "b" }, id, b.as_bytes()))
        .collect();
    store.replace_all("h", "3.0", &records).unwrap();
    let want_a: Vec<Vec<u8>> = records
        .iter()
        .filter(|r| r.kind == "a")
        .map(|r| r.body.to_vec())
        .collect();
    assert_eq!(store.list("a").unwrap(), want_a);
    assert_eq!(store.list("b").unwrap().len(), 200);
    assert!(store.list("ab").unwrap().is_empty());
    let snap = store.load().unwrap().unwrap();
    assert_eq!(snap.entities[0].0, "a");
    assert_eq!(snap.entities[0].1, want_a);
}

#[test]
fn put_and_delete_maintain_order_and_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 10 << 20).unwrap();
    let mut r1 = rec("routes", "r1", b"one");
    r1.unique.push(("name", "first".into()));
    r1.foreign.push(("services", "s1"));
    store
        .replace_all("h", "3.0", &[r1, rec("routes", "r2", b"two")])
        .unwrap();

    // Updating r1 keeps its position and replaces its indexes.
    let mut r1b = rec("routes", "r1", b"one-b");
    r1b.unique.push(("name", "renamed".into()));
    r1b.foreign.push(("services", "s2"));
    store.put(&r1b).unwrap();
    store.put(&rec("routes", "r3", b"three")).unwrap();
    assert_eq!(
        store.list("routes").unwrap(),
        vec![b"one-b".to_vec(), b"two".to_vec(), b"three".to_vec()]
    );
    assert_eq!(
        store.get_by_unique("routes", "name", "first").unwrap(),
        None
    );
    assert_eq!(
        store.get_by_unique("routes", "name", "renamed").unwrap(),
        Some(b"one-b".to_vec())
    );
    assert!(store
        .referencing("services", "s1", "routes")
        .unwrap()
        .is_empty());
    assert_eq!(
        store.referencing("services", "s2", "routes").unwrap(),
        vec!["r1"]
    );
    assert_eq!(store.current_hash().unwrap().as_deref(), Some(""));

    assert!(store.delete("routes", "r1").unwrap());
    assert!(!store.delete("routes", "r1").unwrap());
    assert_eq!(store.get("routes", "r1").unwrap(), None);
    assert_eq!(
        store.get_by_unique("routes", "name", "renamed").unwrap(),
        None
    );
    assert!(store
        .referencing("services", "s2", "routes")
        .unwrap()
        .is_empty());
    assert_eq!(
        store.list("routes").unwrap(),
        vec![b"two".to_vec(), b"three".to_vec()]
    );
}

#[test]
fn put_into_an_empty_store_commits_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 10 << 20).unwrap();
    store.put(&rec("services", "s", b"x")).unwrap();
    store.put(&rec("services", "t", b"y")).unwrap();
    let snap = store.load().unwrap().unwrap();
    assert_eq!(snap.hash, "");
    assert_eq!(
        snap.entities,
        vec![("services".to_string(), vec![b"x".to_vec(), b"y".to_vec()])]
    );
    assert!(store.used_bytes().unwrap() > 0);
    assert!(store.map_size() >= 10 << 20);
    assert_eq!(store.map_size() % 4096, 0);
}

#[test]
fn another_layout_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path(), 10 << 20).unwrap();
        store.replace_all("h", "3.0", &[]).unwrap();
        let mut wtxn = store.env.write_txn().unwrap();
        store.meta.put(&mut wtxn, b"schema_version", b"99").unwrap();
        wtxn.commit().unwrap();
    }
    match Store::open(dir.path(), 10 << 20) {
        Err(StoreError::Corrupt { path, detail }) => {
            assert_eq!(path, dir.path());
            assert!(detail.contains("99"), "{detail}");
        }
        Err(other) => panic!("expected Corrupt, got {other}"),
        Ok(_) => panic!("expected Corrupt, got a store"),
    }
}

#[test]
fn a_bulk_write_out_of_key_order_keeps_every_index_and_the_last_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 10 << 20).unwrap();
    // Ids in descending order and kinds interleaved: nothing arrives in key order.
    let ids: Vec<String> = (0..500).map(|i| format!("id-{:03}", 499 - i)).collect();
    let names: Vec<String> = (0..500)
        .map(|i| format!("n{}", if i == 250 { 0 } else { i }))
        .collect();
    let records: Vec<_> = ids
        .iter()
        .zip(&names)
        .enumerate()
        .map(|(i, (id, name))| {
            let mut r = rec(if i % 2 == 0 { "routes" } else { "consumers" }, id, b"{}");
            r.unique.push(("name", name.clone()));
            r.foreign.push(("services", "s1"));
            r
        })
        .collect();
    store.replace_all("h", "3.0", &records).unwrap();
    // `n0` was given to records 0 (a route) and 250 (a route too): the later one holds the key.
    let holder = store.get_by_unique("routes", "name", "n0").unwrap();
    assert_eq!(holder, store.get("routes", "id-249").unwrap());
    assert!(holder.is_some());
    assert_eq!(
        store.referencing("services", "s1", "routes").unwrap().len(),
        250
    );
    let consumers = store.referencing("services", "s1", "consumers").unwrap();
    let mut sorted = consumers.clone();
    sorted.sort();
    assert_eq!(consumers, sorted, "referencing lists ids in key order");
    // Single-entity writes still find every index entry the bulk write made.
    assert!(store
        .get_by_unique("consumers", "name", "n1")
        .unwrap()
        .is_some());
    assert!(store.delete("consumers", "id-498").unwrap());
    assert_eq!(
        store.get_by_unique("consumers", "name", "n1").unwrap(),
        None
    );
    assert_eq!(
        store
            .referencing("services", "s1", "consumers")
            .unwrap()
            .len(),
        249
    );
    assert_eq!(store.list("routes").unwrap().len(), 250);
}

#[cfg(target_os = "linux")]
#[test]
fn whole_config_writes_and_reads_leave_the_map_out_of_rss_and_the_data_intact() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 64 << 20).unwrap();
    let pages = store.map_pages.clone().expect("the map is found on Linux");
    let body = vec![b'x'; 300];
    let ids: Vec<String> = (0..20_000).map(|i| format!("id-{i}")).collect();
    let records: Vec<_> = ids.iter().map(|id| rec("routes", id, &body)).collect();
    store.replace_all("h", "3.0", &records).unwrap();
    assert_eq!(pages.resident_kb(), 0, "pages written stay mapped");
    let snap = store.load().unwrap().unwrap();
    assert_eq!(snap.entities[0].1.len(), 20_000);
    assert_eq!(pages.resident_kb(), 0, "pages read stay mapped");
    assert_eq!(store.get("routes", "id-19999").unwrap(), Some(body));
}

/// LMDB refuses keys over 511 bytes; a unique index over a long username must still write, find and
/// delete, and two long names that share their first 511 bytes stay two names.
#[test]
fn unique_values_longer_than_an_lmdb_key_are_indexed() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 10 << 20).unwrap();
    let long_a = format!("{}a", "u".repeat(600));
    let long_b = format!("{}b", "u".repeat(600));
    let mut a = rec("consumers", "c1", b"one");
    a.unique.push(("username", long_a.clone()));
    let mut b = rec("consumers", "c2", b"two");
    b.unique.push(("username", long_b.clone()));
    store.replace_all("h", "3.0", &[a]).unwrap();
    store.put(&b).unwrap();
    assert_eq!(
        store
            .get_by_unique("consumers", "username", &long_a)
            .unwrap(),
        Some(b"one".to_vec())
    );
    assert_eq!(
        store
            .get_by_unique("consumers", "username", &long_b)
            .unwrap(),
        Some(b"two".to_vec())
    );
    assert!(store.delete("consumers", "c2").unwrap());
    assert_eq!(
        store
            .get_by_unique("consumers", "username", &long_b)
            .unwrap(),
        None
    );
    assert_eq!(store.list("consumers").unwrap(), vec![b"one".to_vec()]);
}

/// Change sets applied together in one transaction leave the store as applying them one by one does:
/// a delete and re-insert in a later set appends, a put in place keeps the position, the last hash wins.
#[test]
fn change_sets_applied_together_equal_applied_one_by_one() {
    let (one_dir, all_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let one = Store::open(one_dir.path(), 10 << 20).unwrap();
    let all = Store::open(all_dir.path(), 10 << 20).unwrap();
    let start = [rec("routes", "r1", b"one"), rec("routes", "r2", b"two")];
    for s in [&one, &all] {
        s.replace_all("h0", "3.0", &start).unwrap();
    }
    let mut named = rec("routes", "r2", b"two-b");
    named.unique.push(("name", "b".into()));
    let puts = [
        vec![rec("routes", "r3", b"three")],
        vec![],
        vec![rec("routes", "r1", b"one-again")],
        vec![named],
    ];
    let deletes: [&[(&str, &str)]; 4] = [&[], &[("routes", "r1")], &[], &[]];
    let hashes = ["h1", "h2", "h3", "h4"];
    let sets: Vec<ChangeSet<'_>> = (0..4)
        .map(|i| ChangeSet {
            hash: hashes[i],
            format_version: "3.0",
            puts: &puts[i],
            deletes: deletes[i],
        })
        .collect();
    for set in &sets {
        one.apply(set.hash, "3.0", set.puts, set.deletes).unwrap();
    }
    all.apply_all(&sets).unwrap();
    let want = vec![b"two-b".to_vec(), b"three".to_vec(), b"one-again".to_vec()];
    assert_eq!(all.list("routes").unwrap(), want);
    let (a, b) = (one.load().unwrap().unwrap(), all.load().unwrap().unwrap());
    assert_eq!((a.hash, a.entities), (b.hash.clone(), b.entities));
    assert_eq!(b.hash, "h4");
    assert_eq!(
        all.get_by_unique("routes", "name", "b").unwrap(),
        Some(b"two-b".to_vec())
    );
}
