//! The config a DB-mode change is built on (on every change a node applies). The next config is the live
//! one patched with the changed entities; copying the live one whole costs as much as the rest of a
//! one-entity change on a 10,000-route config, and so does freeing the copy it replaces. So the node keeps
//! the config that was live *before* the live one, with the changes that made the live one: once no
//! request holds it any more (it is the only reference), the next change patches it in place with both
//! change sets, and nothing is copied or freed. While a request still holds it, the live config is copied
//! as before.

use crate::loader::EntityChange;
use sluice_model::declarative::kinds::Kind;
use sluice_model::{declarative, Config};
use std::sync::Arc;

/// The config that was live before the live one, and what made the live one from it.
pub(crate) struct Spare {
    config: Arc<Config>,
    /// The changes from `config` to the live config.
    changes: Vec<EntityChange>,
    /// The database version of the live config (the spare is stale once another one is live).
    leads_to: u64,
}

impl Spare {
    /// `config` was live until `changes` made version `leads_to` live.
    pub fn new(config: Arc<Config>, changes: Vec<EntityChange>, leads_to: u64) -> Spare {
        Spare {
            config,
            changes,
            leads_to,
        }
    }
}

/// The config at the next version: the live one (`live`, at version `applied`) with `changes`, built
/// from `spare` when it leads to `applied` and nothing else holds it, else from a copy of `live`; with
/// where its routes are ([`InPlace`]).
pub(crate) fn next(
    spare: Option<Spare>,
    live: &Arc<Config>,
    applied: u64,
    changes: &[EntityChange],
) -> anyhow::Result<(Config, InPlace)> {
    let reusable = spare
        .filter(|s| s.leads_to == applied)
        .and_then(|s| Some((Arc::try_unwrap(s.config).ok()?, s.changes)));
    let mut config = match reusable {
        Some((mut config, made_live)) => {
            patch(&mut config, &made_live)?;
            config
        }
        None => Config::clone(live),
    };
    // The config is `live`'s equal here (the spare patched with what made `live`, in the same order).
    let in_place = patch(&mut config, changes)?;
    declarative::attach_snis(&mut config);
    Ok((config, in_place))
}

/// The indexes of the routes a patch replaced, ascending, when it replaced every changed route where
/// it was and added or removed none: every other route is then the base config's route of its index
/// (which the snapshot compile takes without reading it). None when routes were added or removed.
pub(crate) type InPlace = Option<Vec<usize>>;

/// Upserts or removes each changed entity; where the routes are afterwards.
fn patch(config: &mut Config, changes: &[EntityChange]) -> anyhow::Result<InPlace> {
    let mut in_place = Some(Vec::new());
    for c in changes {
        let at = match &c.body {
            Some(body) => declarative::upsert_entity(config, c.kind, body)
                .map_err(|e| anyhow::anyhow!("unreadable {} {}: {e}", c.kind.singular(), c.id))?,
            None => {
                declarative::remove_entity(config, c.kind, c.id);
                None
            }
        };
        if c.kind == Kind::Route {
            match (at, &mut in_place) {
                (Some(at), Some(replaced)) => replaced.push(at),
                _ => in_place = None,
            }
        }
    }
    if let Some(replaced) = &mut in_place {
        replaced.sort_unstable();
        replaced.dedup();
    }
    Ok(in_place)
}
