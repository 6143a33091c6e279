//! DB mode's [`ClusterCounters`] for `policy: cluster` (rate-limiting and response-ratelimiting), and the
//! connection oauth2's store uses too ([`on_worker_connection`]): each proxy worker keeps one connection of
//! its own (made by the first request that needs it while the others wait for it, driven on that worker's
//! runtime, made again after it breaks), so counting never crosses threads or waits for a pool.

use sluice_db::counters::{self, Window};
use sluice_db::PgSettings;
use sluice_plugins::counters::{
    AddFuture, ClusterCounters, CountFuture, Counted, CountsFuture, Scope, Window as PluginWindow,
};
use std::future::Future;
use std::pin::Pin;
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

/// One worker's connection slot: its requests wait on it while the first one connects, so a burst of
/// requests on a fresh worker makes one connection, not one each.
type Slot = Arc<tokio::sync::Mutex<Option<Arc<Client>>>>;

thread_local! {
    /// This worker's connection.
    static CLIENT: Slot = Slot::default();
}

/// This worker's open connection, or a new one.
async fn client(settings: &PgSettings) -> Result<Arc<Client>, String> {
    let slot = CLIENT.with(Slot::clone);
    let mut held = slot.lock().await;
    if let Some(c) = held.as_ref().filter(|c| !c.is_closed()) {
        return Ok(c.clone());
    }
    let client = Arc::new(
        sluice_db::settings::connect_one(settings, |_| {})
            .await
            .map_err(|e| e.to_string())?,
    );
    *held = Some(client.clone());
    Ok(client)
}

/// Drops this worker's connection after an error, so the next request connects again.
async fn forget() {
    let slot = CLIENT.with(Slot::clone);
    *slot.lock().await = None;
}

/// Runs `query` on this worker's connection within the database timeout (the counters, and oauth2's codes
/// and tokens); a failed query drops the connection, so the next call connects again.
pub(crate) async fn on_worker_connection<T, F, Fut>(
    settings: &PgSettings,
    query: F,
) -> Result<T, String>
where
    F: FnOnce(Arc<Client>) -> Fut,
    Fut: std::future::Future<Output = Result<T, tokio_postgres::Error>>,
{
    let run = async {
        let client = client(settings).await?;
        match query(client).await {
            Ok(v) => Ok(v),
            Err(e) => {
                forget().await;
                Err(e.to_string())
            }
        }
    };
    match tokio::time::timeout(settings.timeout, run).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(format!("the database: {e}")),
        Err(_) => Err(format!(
            "the database did not answer within {} ms",
            settings.timeout.as_millis()
        )),
    }
}

/// The database's form of the plugin's windows.
fn db_windows(windows: &[PluginWindow]) -> Vec<Window<'_>> {
    windows
        .iter()
        .map(|w| Window {
            period: &w.period,
            start: w.start,
            limit: w.limit,
            ttl_secs: w.ttl_secs,
        })
        .collect()
}

impl PgCounters {
    /// One counters query for a request, boxed for the plugin: on this worker's connection, within the
    /// database timeout.
    fn query<T, F, Fut>(&self, query: F) -> Pin<Box<dyn Future<Output = Result<T, String>> + Send>>
    where
        T: Send + 'static,
        F: FnOnce(Arc<Client>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, tokio_postgres::Error>> + Send,
    {
        let settings = self.settings.clone();
        Box::pin(async move { on_worker_connection(&settings, query).await })
    }
}

impl ClusterCounters for PgCounters {
    fn check_and_count(&self, scope: Scope, windows: Vec<PluginWindow>) -> CountFuture {
        self.query(move |client| async move {
            let windows = db_windows(&windows);
            let (id, service, route) = (&scope.identifier, scope.service, scope.route);
            let (allowed, counts) =
                counters::check_and_count(&client, id, service, route, &windows).await?;
            Ok(Counted { allowed, counts })
        })
    }

    fn spent(&self, scope: Scope, windows: Vec<PluginWindow>) -> CountsFuture {
        self.query(move |client| async move {
            let windows = db_windows(&windows);
            let (id, service, route) = (&scope.identifier, scope.service, scope.route);
            counters::spent(&client, id, service, route, &windows).await
        })
    }

    fn spend(&self, scope: Scope, windows: Vec<PluginWindow>, by: u64) -> AddFuture {
        self.query(move |client| async move {
            let windows = db_windows(&windows);
            let (id, service, route) = (&scope.identifier, scope.service, scope.route);
            counters::spend(&client, id, service, route, &windows, by).await
        })
    }
}
