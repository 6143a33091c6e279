//! `sluice start`: open the store, load the config, start the proxy workers, the admin and status listeners,
//! and handle signals (SIGHUP reloads the declarative file; SIGUSR1 reopens file-log files; SIGTERM/SIGINT
//! drain and exit 0).

use crate::cluster_counters::PgCounters;
use crate::control::NodeControl;
use crate::dbnode::DbNode;
use crate::hybrid::{self, Role};
use crate::loader::Loader;
use crate::settings::{split_list, Settings};
use crate::{logging, StartArgs};
use anyhow::{bail, Context, Result};
use sluice_plugins::Registry;
use sluice_proxy::{parse_listen, ProxyServer, ProxySettings};
use sluice_store::Store;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};

/// How long in-flight requests get to finish after SIGTERM.
const DRAIN_GRACE: Duration = Duration::from_secs(10);
/// How long http-log/file-log may take to deliver what they hold at exit.
const LOG_FLUSH_GRACE: Duration = Duration::from_secs(5);

pub fn start(args: StartArgs) -> Result<()> {
    let mut overrides = Vec::new();
    if let Some(path) = &args.config {
        overrides.push(("declarative_config", path.display().to_string()));
    }
    if let Some(prefix) = &args.prefix {
        overrides.push(("prefix", prefix.display().to_string()));
    }
    let settings = Settings::load(args.conf.as_deref(), &overrides)?;
    logging::init(&settings.log_level, args.log_format);
    for warning in &settings.ignored {
        tracing::warn!("{warning}");
    }
    std::fs::create_dir_all(&settings.prefix)
        .with_context(|| format!("cannot create prefix {}", settings.prefix.display()))?;

    let store = Store::open(
        &settings.lmdb_environment_path,
        settings.lmdb_map_size as usize,
    )
    .with_context(|| {
        format!(
            "cannot open the config store {}",
            settings.lmdb_environment_path.display()
        )
    })?;
    let registry = match &settings.pg {
        Some(pg) => {
            let registry = Registry::with_database(Arc::new(PgCounters::new(pg.clone())));
            let oauth2 = crate::oauth2_store::PgOAuth2::new(pg.clone());
            registry.state().set_oauth2_store(Arc::new(oauth2));
            registry
        }
        None => Registry::builtin(),
    };
    let cache_size = usize::try_from(settings.mem_cache_size).unwrap_or(usize::MAX);
    registry.state().proxy_caches().set_capacity(cache_size);
    let loader = Arc::new(Loader::new(Arc::new(registry), store));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("sluice-control")
        .enable_all()
        .build()
        .context("starting the control runtime")?;
    let db = match &settings.pg {
        Some(pg) => {
            if settings.declarative_config.is_some() {
                tracing::warn!("declarative_config is ignored with database = postgres");
            }
            let db = DbNode::new(pg.clone(), loader.clone())?;
            runtime.block_on(db.start())?;
            Some(db)
        }
        None => {
            match &settings.declarative_config {
                // A data plane's config comes from its control plane; until the first push it serves the
                // last one it stored.
                Some(_) if settings.cluster.role == Role::DataPlane => {
                    tracing::warn!("declarative_config is ignored with role = data_plane");
                    loader.load_from_store()?;
                }
                Some(file) => {
                    loader.load_file(file)?;
                }
                None => {
                    if !loader.load_from_store()? {
                        tracing::warn!("no declarative_config and an empty store: serving no routes until POST /config");
                    }
                }
            }
            None
        }
    };

    let listen =
        parse_listen(&settings.proxy_listen).map_err(|e| anyhow::anyhow!("proxy_listen: {e}"))?;
    let stream_listen = sluice_proxy::parse_stream_listen(&settings.stream_listen)
        .map_err(|e| anyhow::anyhow!("stream_listen: {e}"))?;
    let default_certificate =
        match listen.iter().any(|l| l.ssl) || stream_listen.iter().any(|l| l.ssl) {
            true => Some(certificate(
                &settings,
                "ssl_cert",
                &settings.ssl_cert,
                &settings.ssl_cert_key,
            )?),
            false => None,
        };
    let proxy_settings = ProxySettings {
        listen,
        stream_listen,
        default_certificate,
        workers: settings.worker_threads,
        trusted_ips: parse_trusted_ips(&settings.trusted_ips)?,
        headers: sluice_proxy::HeaderSettings::parse(&settings.headers)
            .map_err(|e| anyhow::anyhow!("headers: {e}"))?,
        dns: settings.dns.clone(),
        client_header_timeout: settings.client.header_timeout,
        keepalive_timeout: settings.client.keepalive_timeout,
        client_body_timeout: settings.client.body_timeout,
        send_timeout: settings.client.send_timeout,
        upstream_keepalive: settings.upstream_keepalive,
        worker_connections: settings.client.worker_connections,
        head_limits: settings.client.head_limits,
        body_buffering: sluice_proxy::BodyBuffering {
            temp_dir: settings.prefix.join("client_body_temp"),
            memory: settings.client.body_buffer_size,
            max_body: settings.client.max_body_size,
        },
        response_buffering: sluice_proxy::ResponseBuffering {
            temp_dir: settings.prefix.join("proxy_temp"),
            memory: settings.client.proxy_buffers,
            file_max: settings.client.proxy_max_temp_file_size,
        },
        ..ProxySettings::default()
    };
    let proxy = ProxyServer::start(proxy_settings, loader.snapshot(), Some(loader.subscribe()))
        .context("starting the proxy listeners")?;
    for listen in proxy.local_addrs() {
        tracing::info!(addr = %listen.addr, ssl = listen.ssl, http2 = listen.http2, "proxy listening");
    }
    for listen in proxy.stream_addrs() {
        tracing::info!(addr = %listen.addr, ssl = listen.ssl, udp = listen.udp, "stream listening");
    }

    let control = Arc::new(NodeControl {
        loader: loader.clone(),
        settings: settings.clone(),
        node_id: uuid::Uuid::new_v4(),
        hostname: hostname(),
        proxy_stats: OnceLock::new(),
        db,
        data_planes: Default::default(),
    });
    let _ = control.proxy_stats.set(proxy.stats());

    let served = runtime.block_on(control_plane(control, settings));
    // A DB-mode node's or a data plane's store takes the changes applied since its last batch.
    loader.flush_store();
    served?;
    tracing::info!("draining in-flight requests");
    proxy.shutdown(DRAIN_GRACE);
    if !loader
        .registry()
        .state()
        .log_queues()
        .flush(LOG_FLUSH_GRACE)
    {
        tracing::warn!("log records still queued at exit were lost");
    }
    tracing::info!("stopped");
    Ok(())
}

/// Serves the admin and status listeners and handles signals until SIGTERM/SIGINT.
async fn control_plane(control: Arc<NodeControl>, settings: Settings) -> Result<()> {
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    if let Some(db) = &control.db {
        tokio::spawn(db.clone().follow());
        tokio::spawn(db.clone().expire_counters());
    }
    match settings.cluster.role {
        Role::ControlPlane => {
            let serving = hybrid::cp::listen(
                settings.cluster.clone(),
                control.loader.clone(),
                control.data_planes.clone(),
            )
            .await?;
            tokio::spawn(serving);
        }
        Role::DataPlane => {
            tokio::spawn(hybrid::dp::run(
                settings.cluster.clone(),
                control.loader.clone(),
                control.node_id,
                control.hostname.clone(),
            ));
        }
        Role::Traditional => {}
    }
    for (setting, value, status, cert, key) in [
        (
            "admin_listen",
            &settings.admin_listen,
            false,
            &settings.admin_ssl_cert,
            &settings.admin_ssl_cert_key,
        ),
        (
            "status_listen",
            &settings.status_listen,
            true,
            &settings.status_ssl_cert,
            &settings.status_ssl_cert_key,
        ),
    ] {
        for listen in parse_listen(value).map_err(|e| anyhow::anyhow!("{setting}: {e}"))? {
            let tls = match listen.ssl {
                false => None,
                true => {
                    let pair = certificate(&settings, setting, cert, key)?;
                    let resolver = sluice_tls::SniResolver::new(None, pair);
                    let config = sluice_tls::server_config(Arc::new(resolver), listen.http2)
                        .map_err(|e| anyhow::anyhow!("{setting}: {e}"))?;
                    Some(tokio_rustls::TlsAcceptor::from(config))
                }
            };
            let listener = tokio::net::TcpListener::bind(listen.addr)
                .await
                .with_context(|| format!("{setting}: cannot listen on {}", listen.addr))?;
            tracing::info!(addr = %listen.addr, ssl = listen.ssl, "{} listening", if status { "status" } else { "admin" });
            let control: Arc<dyn sluice_admin::Control> = control.clone();
            let mut stop = stop_rx.clone();
            let shutdown = async move {
                let _ = stop.wait_for(|s| *s).await;
            };
            let limits = sluice_admin::ServeLimits {
                header_timeout: settings.client.header_timeout,
                body_timeout: settings.client.body_timeout,
                send_timeout: settings.client.send_timeout,
            };
            tokio::spawn(async move {
                let served = if status {
                    sluice_admin::serve_status(listener, tls, control, limits, shutdown).await
                } else {
                    sluice_admin::serve_admin(listener, tls, control, limits, shutdown).await
                };
                if let Err(e) = served {
                    tracing::error!(error = %e, "{setting} listener failed");
                }
            });
        }
    }

    let mut hup = signal(SignalKind::hangup())?;
    let mut usr1 = signal(SignalKind::user_defined1())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    loop {
        tokio::select! {
            _ = hup.recv() => reload(&control, &settings).await,
            _ = usr1.recv() => {
                sluice_plugins::logging::reopen_log_files();
                tracing::info!("SIGUSR1: file-log files will be reopened");
            }
            _ = term.recv() => break,
            _ = int.recv() => break,
        }
    }
    let _ = stop_tx.send(true);
    Ok(())
}

/// SIGHUP: re-read the declarative file; on failure keep serving the old config.
async fn reload(control: &Arc<NodeControl>, settings: &Settings) {
    if control.db.is_some() {
        // The database is the config in DB mode; a file would replace it on this node only.
        tracing::warn!("SIGHUP ignored: database = postgres (the config comes from the database)");
        return;
    }
    let Some(file) = settings.declarative_config.clone() else {
        tracing::warn!("SIGHUP ignored: no declarative_config to re-read");
        return;
    };
    let loader = control.loader.clone();
    match tokio::task::spawn_blocking(move || loader.load_file(&file)).await {
        Ok(Ok(_)) => tracing::info!("configuration reloaded on SIGHUP"),
        Ok(Err(e)) => tracing::error!("reload failed, keeping the old configuration: {e:#}"),
        Err(e) => tracing::error!("reload task failed: {e}"),
    }
}

/// The certificate a TLS listener presents by default: the configured files (`ssl_cert`, `admin_ssl_cert`,
/// ...), else the one generated under `<prefix>/ssl` on first start.
fn certificate(
    settings: &Settings,
    what: &str,
    cert: &Option<String>,
    key: &Option<String>,
) -> Result<sluice_tls::CertPair> {
    match (cert, key) {
        (Some(c), Some(k)) => {
            sluice_tls::load_pair_files(c, k).map_err(|e| anyhow::anyhow!("{what}: {e}"))
        }
        (None, None) => sluice_tls::default_pair(&settings.prefix.join("ssl"))
            .map_err(|e| anyhow::anyhow!("default certificate: {e}")),
        _ => bail!("{what}: set both the certificate and its key"),
    }
}

fn parse_trusted_ips(value: &str) -> Result<Vec<ipnet::IpNet>> {
    let mut out = Vec::new();
    for item in split_list(value) {
        if item == "unix:" {
            continue;
        }
        let net = match item.parse::<ipnet::IpNet>() {
            Ok(net) => net,
            Err(_) => match item.parse::<std::net::IpAddr>() {
                Ok(ip) => ipnet::IpNet::from(ip),
                Err(_) => bail!("trusted_ips: '{item}' is not an IP address or CIDR range"),
            },
        };
        out.push(net);
    }
    Ok(out)
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}
