//! Reads: each call is one short read transaction, which never blocks and is never blocked by a writer.

use crate::write::decode_ids_value;
use crate::{key, Snapshot, Store, StoreError};
use heed::RoTxn;

impl Store {
    /// The hash of the committed config, if any: compare it with a new file's hash to skip a no-op
    /// reload. Empty after single-entity writes.
    pub fn current_hash(&self) -> Result<Option<String>, StoreError> {
        self.meta_value("hash")
    }

    /// The committed config, or None when nothing was ever committed.
    pub fn load(&self) -> Result<Option<Snapshot>, StoreError> {
        let rtxn = self.env.read_txn().map_err(|e| self.lmdb(e))?;
        let text = |k: &[u8]| -> Result<Option<String>, StoreError> {
            Ok(self
                .meta
                .get(&rtxn, k)
                .map_err(|e| self.lmdb(e))?
                .map(|b| String::from_utf8_lossy(b).into_owned()))
        };
        let Some(hash) = text(b"hash")? else {
            return Ok(None);
        };
        // Keys sort by kind then seq, so each kind's bodies come out in order; kinds are then
        // ordered by their first seq to keep first-seen order.
        let mut kinds: Vec<(u64, String, Vec<Vec<u8>>)> = Vec::new();
        for item in self.entities.iter(&rtxn).map_err(|e| self.lmdb(e))? {
            let (k, v) = item.map_err(|e| self.lmdb(e))?;
            let (kind, seq) = self.split_entity_key(k)?;
            match kinds.last_mut() {
                Some((_, last, list)) if last.as_bytes() == kind => list.push(v.to_vec()),
                _ => kinds.push((
                    seq,
                    String::from_utf8_lossy(kind).into_owned(),
                    vec![v.to_vec()],
                )),
            }
        }
        kinds.sort_by_key(|(first, _, _)| *first);
        let snapshot = Snapshot {
            hash,
            format_version: text(b"format_version")?.unwrap_or_default(),
            committed_at: text(b"committed_at")?
                .and_then(|t| t.parse().ok())
                .unwrap_or(0),
            entities: kinds.into_iter().map(|(_, k, l)| (k, l)).collect(),
        };
        drop(rtxn);
        self.release_map_pages();
        Ok(Some(snapshot))
    }

    /// One entity by kind and id.
    pub fn get(&self, kind: &str, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let rtxn = self.env.read_txn().map_err(|e| self.lmdb(e))?;
        self.get_in(&rtxn, kind, id)
    }

    /// One entity by a natural key, e.g. `("services", "name", "svc-a")`.
    pub fn get_by_unique(
        &self,
        kind: &str,
        field: &str,
        value: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let rtxn = self.env.read_txn().map_err(|e| self.lmdb(e))?;
        let k = key(&[kind.as_bytes(), field.as_bytes(), value.as_bytes()]);
        let Some(id) = self.unique.get(&rtxn, &k).map_err(|e| self.lmdb(e))? else {
            return Ok(None);
        };
        let id = String::from_utf8_lossy(id).into_owned();
        self.get_in(&rtxn, kind, &id)
    }

    /// All bodies of one kind in insertion order.
    pub fn list(&self, kind: &str) -> Result<Vec<Vec<u8>>, StoreError> {
        let rtxn = self.env.read_txn().map_err(|e| self.lmdb(e))?;
        let prefix = key(&[kind.as_bytes(), b""]);
        let iter = self
            .entities
            .prefix_iter(&rtxn, &prefix)
            .map_err(|e| self.lmdb(e))?;
        iter.map(|item| item.map(|(_, v)| v.to_vec()).map_err(|e| self.lmdb(e)))
            .collect()
    }

    /// Ids of `from_kind` entities that reference the `kind` entity `id` (e.g. the routes of a
    /// service), sorted by id. Used for cascades and nested Admin API listings.
    pub fn referencing(
        &self,
        kind: &str,
        id: &str,
        from_kind: &str,
    ) -> Result<Vec<String>, StoreError> {
        let rtxn = self.env.read_txn().map_err(|e| self.lmdb(e))?;
        let prefix = key(&[kind.as_bytes(), id.as_bytes(), from_kind.as_bytes(), b""]);
        let iter = self
            .foreign
            .prefix_iter(&rtxn, &prefix)
            .map_err(|e| self.lmdb(e))?;
        iter.map(|item| {
            item.map(|(k, _)| String::from_utf8_lossy(&k[prefix.len()..]).into_owned())
                .map_err(|e| self.lmdb(e))
        })
        .collect()
    }

    fn get_in(
        &self,
        rtxn: &RoTxn<'_>,
        kind: &str,
        id: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let id_key = key(&[kind.as_bytes(), id.as_bytes()]);
        let Some(value) = self.ids.get(rtxn, &id_key).map_err(|e| self.lmdb(e))? else {
            return Ok(None);
        };
        let (seq, _) = decode_ids_value(value).ok_or_else(|| self.corrupt("malformed id entry"))?;
        let body = self
            .entities
            .get(rtxn, &key(&[kind.as_bytes(), &seq.to_be_bytes()]))
            .map_err(|e| self.lmdb(e))?;
        Ok(body.map(<[u8]>::to_vec))
    }

    /// Splits an `entities` key into kind and seq.
    fn split_entity_key<'k>(&self, k: &'k [u8]) -> Result<(&'k [u8], u64), StoreError> {
        let (head, seq) = k
            .split_last_chunk::<8>()
            .ok_or_else(|| self.corrupt("malformed entity key"))?;
        let kind = head
            .strip_suffix(&[0])
            .ok_or_else(|| self.corrupt("malformed entity key"))?;
        Ok((kind, u64::from_be_bytes(*seq)))
    }
}
