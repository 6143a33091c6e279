//! DB mode's [`ClusterCounters`] for rate-limiting's `policy: cluster`: each proxy worker keeps one
//! connection of its own (made on the first request that needs it, driven on that worker's runtime, made
//! again after it breaks), so counting never crosses threads and never waits for a pool.

use sluice_db::counters::{self, Window};
use sluice_db::PgSettings;
use sluice_plugins::counters::{
    ClusterCounters, CountFuture, Counted, Scope, Window as PluginWindow,
};
use std::cell::RefCell;
use std::sync::Arc;
use tokio_postgres::Client;

/// Counts in the node's database.
pub struct PgCounters {
    settings: Arc<PgSettings>,
}

impl PgCounters {
    pub fn new(settings: PgSettings) -> PgCounters {
        PgCounters {
            settings: Arc::new(settings),
        }
    }
}

thread_local! {
    /// This worker's connection.
    static CLIENT: RefCell<Option<Arc<Client>>> = const { RefCell::new(None) };
}

/// This worker's open connection, or a new one.
async fn client(settings: &PgSettings) -> Result<Arc<Client>, String> {
    if let Some(c) = CLIENT
        .with(|c| c.borrow().clone())
        .filter(|c| !c.is_closed())
    {
        return Ok(c);
    }
    let client = Arc::new(
        sluice_db::settings::connect_one(settings, |_| {})
            .await
            .map_err(|e| e.to_string())?,
    );
    CLIENT.with(|c| *c.borrow_mut() = Some(client.clone()));
    Ok(client)
}

impl ClusterCounters for PgCounters {
    fn check_and_count(&self, scope: Scope, windows: Vec<PluginWindow>) -> CountFuture {
        let settings = self.settings.clone();
        Box::pin(async move {
            let count = async {
                let client = client(&settings).await?;
                let windows: Vec<Window<'_>> = windows
                    .iter()
                    .map(|w| Window {
                        period: w.period,
                        start: w.start,
                        limit: w.limit,
                        ttl_secs: w.ttl_secs,
                    })
                    .collect();
                counters::check_and_count(
                    &client,
                    &scope.identifier,
                    scope.service,
                    scope.route,
                    &windows,
                )
                .await
                .map_err(|e| {
                    CLIENT.with(|c| c.borrow_mut().take());
                    e.to_string()
                })
            };
            match tokio::time::timeout(settings.timeout, count).await {
                Ok(Ok((allowed, counts))) => Ok(Counted { allowed, counts }),
                Ok(Err(e)) => Err(format!("the database: {e}")),
                Err(_) => Err(format!(
                    "the database did not answer within {} ms",
                    settings.timeout.as_millis()
                )),
            }
        })
    }
}
