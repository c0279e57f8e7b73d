//! The I/O around [`respond`]: listeners, TLS, HTTP/1.1 connections,
//! access logs, and the loop that rebuilds the served state when its source changes (the
//! manifests folder, or the API server's watched objects) and reloads the certificate when its
//! files change.

use super::access::AccessPolicy;
use super::api_cache::{ClusterCache, NotReady};
use super::metrics::Metrics;
use super::respond::{respond, Request};
use super::served_state::{BuildOptions, ServedState};
use super::source;
use super::tls::{self, ReloadingCert, TlsError};
use crate::limits::ConnLimits;
use crate::tasks::ServerTasks;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use mco_render::api::ControllerConfigSpec;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio_rustls::TlsAcceptor;

/// Where the pools come from.
#[derive(Clone)]
pub enum Source {
    /// A folder of manifests, rendered here and re-rendered when it changes.
    Dir(PathBuf),
    /// A folder of manifests and a folder of role templates: the template controller's
    /// MachineConfigs (`00-<role>`, `01-<role>-container-runtime`, ...) are rendered from the
    /// templates and the manifests' ControllerConfig, as `mco-render render --templates`
    /// does. Both folders are re-read when they change.
    DirTemplates {
        /// The manifests.
        dir: PathBuf,
        /// The templates.
        templates: PathBuf,
    },
    /// The API server: pools and the controller's rendered MachineConfigs, watched.
    Cluster(kube::Client),
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Dir(d) => f.debug_tuple("Dir").field(d).finish(),
            Source::DirTemplates { dir, templates } => f
                .debug_struct("DirTemplates")
                .field("dir", dir)
                .field("templates", templates)
                .finish(),
            Source::Cluster(_) => f.write_str("Cluster"),
        }
    }
}

/// How to run the server.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the pools come from.
    pub source: Source,
    /// The address to listen on.
    pub listen: IpAddr,
    /// The TLS port (0 picks one); `None` disables it.
    pub secure_port: Option<u16>,
    /// The plain HTTP port (0 picks one); `None` disables it.
    pub insecure_port: Option<u16>,
    /// Certificate and key PEM files for the TLS port.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Rendering and serving options.
    pub build: BuildOptions,
    /// Who may fetch configs.
    pub access: AccessPolicy,
    /// How often to look for changed manifests and certificates.
    pub poll_interval: Duration,
    /// What one client may hold or send (connections, timeouts, head size).
    pub limits: ConnLimits,
    /// Files the bootstrap kubeconfig is built from, re-read at every poll (`None`: the
    /// kubeconfig in `build`, if any, is fixed).
    pub bootstrap: Option<BootstrapFiles>,
}

/// The bootstrap kubeconfig's inputs as mounted files: the token and the CA of the
/// `node-bootstrapper-token` Secret (upstream's /etc/mcs/bootstrap-token). The kubelet
/// updates a mounted Secret in place, so a rotated token or CA reaches the next machine that
/// joins without a restart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootstrapFiles {
    /// The API server URL machines join (upstream's `--apiserver-url`).
    pub apiserver_url: String,
    /// The token file.
    pub token: PathBuf,
    /// The CA bundle file (PEM).
    pub ca: PathBuf,
}

impl BootstrapFiles {
    /// The kubeconfig the files make now.
    pub fn kubeconfig(&self) -> Result<String, String> {
        let token = std::fs::read_to_string(&self.token)
            .map_err(|e| format!("{}: {e}", self.token.display()))?;
        let ca = std::fs::read(&self.ca).map_err(|e| format!("{}: {e}", self.ca.display()))?;
        Ok(mco_render::serve::bootstrap_kubeconfig(
            &self.apiserver_url,
            &ca,
            token.trim(),
        ))
    }
}

/// Starting the server failed.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The manifests could not be read.
    #[error(transparent)]
    Source(#[from] source::SourceError),
    /// The certificate could not be used.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The bootstrap token or CA could not be read.
    #[error("bootstrap kubeconfig: {0}")]
    Bootstrap(String),
    /// A port could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The error.
        source: std::io::Error,
    },
    /// The TLS port needs a certificate and key.
    #[error("the secure port needs --cert and --key")]
    NoCertificate,
    /// The API server's objects could not be cached.
    #[error(transparent)]
    Cluster(#[from] NotReady),
}

/// State shared by every connection.
#[derive(Debug)]
pub struct Shared {
    state: RwLock<Arc<ServedState>>,
    access: AccessPolicy,
    /// The counters.
    pub metrics: Metrics,
}

impl Shared {
    /// The state currently served.
    pub fn state(&self) -> Arc<ServedState> {
        self.state
            .read()
            .map(|s| s.clone())
            .unwrap_or_else(|e| e.into_inner().clone())
    }

    fn set_state(&self, s: ServedState) {
        match self.state.write() {
            Ok(mut cur) => *cur = Arc::new(s),
            Err(e) => *e.into_inner() = Arc::new(s),
        }
    }
}

/// A running server.
#[derive(Debug)]
pub struct Running {
    /// Where the TLS port listens.
    pub secure_addr: Option<SocketAddr>,
    /// Where the plain port listens.
    pub insecure_addr: Option<SocketAddr>,
    /// The shared state and counters.
    pub shared: Arc<Shared>,
    tasks: ServerTasks,
}

impl Running {
    /// Stops accepting, stops the reload loop and waits for the tasks to end.
    pub async fn stop(self) {
        self.tasks.stop().await;
    }

    /// Waits until the server stops (it only does on [`Running::stop`] or a fatal error).
    pub async fn wait(self) {
        self.tasks.wait().await;
    }
}

/// The live source the reload loop follows.
enum Live {
    Dir {
        dir: PathBuf,
        templates: Option<PathBuf>,
        fp: source::Fingerprint,
    },
    Cluster {
        cache: Box<ClusterCache>,
        changed: mpsc::Receiver<()>,
        cc: Box<Option<ControllerConfigSpec>>,
    },
}

impl Live {
    /// Resolves when the watched objects changed (never for a folder, which is polled).
    async fn changed(&mut self) {
        match self {
            Live::Cluster { changed, .. } => {
                if changed.recv().await.is_none() {
                    std::future::pending::<()>().await;
                }
            }
            Live::Dir { .. } => std::future::pending::<()>().await,
        }
    }
}

fn build_state(
    dir: &std::path::Path,
    templates: Option<&std::path::Path>,
    cfg: &Config,
    previous: Option<&ServedState>,
) -> Result<ServedState, source::SourceError> {
    let opts = mco_render::manifests::expand::ClusterOptions {
        controller_version: cfg.build.render.controller_version.clone(),
        templates: templates
            .map(mco_render::load::read_templates)
            .transpose()?,
        release: cfg.build.render.release,
    };
    let (m, errors) = source::load_cluster(dir, &opts)?;
    for e in &errors {
        tracing::warn!(error = %e, "resource not applied: its MachineConfig is not generated");
    }
    Ok(ServedState::build(&m, &cfg.build, previous))
}

/// Logs what a rebuild changed: pools whose served config or failure differs from
/// `previous` (every pool at start-up), and pools no longer served.
fn log_state(state: &ServedState, previous: Option<&ServedState>) {
    let outcome = |e: &Result<super::served_state::PoolEntry, String>| match e {
        Ok(e) => Ok(e.rendered_name.clone()),
        Err(err) => Err(err.clone()),
    };
    if let Some(prev) = previous {
        for pool in prev.pools.keys().filter(|p| !state.pools.contains_key(*p)) {
            tracing::info!(pool = %pool, "no longer served");
        }
    }
    for (pool, entry) in &state.pools {
        let before = previous.and_then(|p| p.pools.get(pool)).map(outcome);
        if before.as_ref() == Some(&outcome(entry)) {
            continue;
        }
        match entry {
            Ok(e) => tracing::info!(pool = %pool, rendered = %e.rendered_name, "serving"),
            Err(err) => tracing::error!(pool = %pool, error = %err, "pool cannot be served"),
        }
    }
}

/// Loads the source, binds the ports and starts serving.
pub async fn start(cfg: Config) -> Result<Running, StartError> {
    let mut cfg = cfg;
    if let Some(b) = &cfg.bootstrap {
        cfg.build.kubeconfig = Some(b.kubeconfig().map_err(StartError::Bootstrap)?);
    }
    let (live, state) = match &cfg.source {
        Source::Dir(dir) | Source::DirTemplates { dir, .. } => {
            let templates = match &cfg.source {
                Source::DirTemplates { templates, .. } => Some(templates.clone()),
                _ => None,
            };
            let fp = source::fingerprint_with(dir, templates.as_deref())?;
            let state = build_state(dir, templates.as_deref(), &cfg, None)?;
            (
                Live::Dir {
                    dir: dir.clone(),
                    templates,
                    fp,
                },
                state,
            )
        }
        Source::Cluster(client) => {
            let (tx, changed) = mpsc::channel(1);
            let cache = ClusterCache::start(client, tx);
            cache.ready().await?;
            let snap = cache.snapshot();
            let state = snap.build(&cfg.build, None, None);
            let cc = Box::new(snap.controller_config);
            let cache = Box::new(cache);
            (Live::Cluster { cache, changed, cc }, state)
        }
    };
    log_state(&state, None);
    let shared = Arc::new(Shared {
        state: RwLock::new(Arc::new(state)),
        access: cfg.access.clone(),
        metrics: Metrics::default(),
    });
    let (tx, rx) = watch::channel(false);
    let mut tasks = Vec::new();

    let cert = match (&cfg.tls, cfg.secure_port) {
        (Some((c, k)), Some(_)) => Some(Arc::new(ReloadingCert::new(c.clone(), k.clone())?)),
        (None, Some(_)) => return Err(StartError::NoCertificate),
        _ => None,
    };

    let mut secure_addr = None;
    if let (Some(port), Some(cert)) = (cfg.secure_port, &cert) {
        let acceptor = TlsAcceptor::from(Arc::new(tls::server_config(cert.clone())?));
        let (listener, addr) = bind(cfg.listen, port).await?;
        tracing::info!(%addr, "serving TLS");
        secure_addr = Some(addr);
        tasks.push(tokio::spawn(accept_loop(
            listener,
            Some(acceptor),
            shared.clone(),
            cfg.limits.clone(),
            rx.clone(),
        )));
    }
    let mut insecure_addr = None;
    if let Some(port) = cfg.insecure_port {
        let (listener, addr) = bind(cfg.listen, port).await?;
        tracing::info!(%addr, "serving plain HTTP");
        insecure_addr = Some(addr);
        tasks.push(tokio::spawn(accept_loop(
            listener,
            None,
            shared.clone(),
            cfg.limits.clone(),
            rx.clone(),
        )));
    }
    tasks.push(tokio::spawn(reload_loop(
        cfg,
        live,
        cert,
        shared.clone(),
        rx,
    )));
    Ok(Running {
        secure_addr,
        insecure_addr,
        shared,
        tasks: ServerTasks::new(tx, tasks),
    })
}

async fn bind(ip: IpAddr, port: u16) -> Result<(TcpListener, SocketAddr), StartError> {
    let addr = SocketAddr::new(ip, port);
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| StartError::Bind { addr, source })?;
    let local = listener
        .local_addr()
        .map_err(|source| StartError::Bind { addr, source })?;
    Ok((listener, local))
}

async fn reload_loop(
    mut cfg: Config,
    mut live: Live,
    cert: Option<Arc<ReloadingCert>>,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(cfg.poll_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let mut objects_changed = false;
        tokio::select! {
            _ = tick.tick() => {}
            _ = live.changed() => objects_changed = true,
            _ = stop.changed() => return,
        }
        if let Some(c) = &cert {
            match c.reload_if_changed() {
                Ok(true) => {
                    tracing::info!("serving certificate reloaded");
                    shared.metrics.cert_reloaded();
                }
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "serving certificate not reloaded"),
            }
        }
        let kubeconfig_changed = reload_kubeconfig(&mut cfg);
        let (dir, templates, fp) = match &mut live {
            Live::Dir { dir, templates, fp } => (dir.clone(), templates.clone(), fp),
            Live::Cluster { cache, changed, cc } => {
                // Not from caches known to be stale: the re-list's end is a change of its own.
                if (objects_changed && cache.fresh()) || kubeconfig_changed {
                    // Let a burst of changes settle into one rebuild.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    while changed.try_recv().is_ok() {}
                    let snap = cache.snapshot();
                    let prev = shared.state();
                    let before = prev.clone();
                    let old_cc = (**cc).clone();
                    let build = cfg.build.clone();
                    let built = tokio::task::spawn_blocking(move || {
                        // A new kubeconfig is in every served config: encode them all again.
                        let prev = (!kubeconfig_changed).then_some(&*prev);
                        let state = snap.build(&build, prev, old_cc.as_ref());
                        (state, snap.controller_config)
                    })
                    .await;
                    match built {
                        Ok((state, new_cc)) => {
                            log_state(&state, Some(&before));
                            shared.set_state(state);
                            shared.metrics.reloaded(true);
                            **cc = new_cc;
                        }
                        Err(e) => {
                            tracing::error!(error = %e, "rebuild task failed");
                            shared.metrics.reloaded(false);
                        }
                    }
                }
                continue;
            }
        };
        let now = match source::fingerprint_with(&dir, templates.as_deref()) {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(error = %e, "cannot scan the manifests folder");
                continue;
            }
        };
        if now == *fp && !kubeconfig_changed {
            continue;
        }
        *fp = now;
        let prev = shared.state();
        let before = prev.clone();
        let cfg2 = cfg.clone();
        let built = tokio::task::spawn_blocking(move || {
            build_state(&dir, templates.as_deref(), &cfg2, Some(&prev))
        })
        .await;
        match built {
            Ok(Ok(state)) => {
                log_state(&state, Some(&before));
                shared.set_state(state);
                shared.metrics.reloaded(true);
            }
            Ok(Err(e)) => {
                tracing::error!(error = %e, "manifests not reloaded; serving the previous configs");
                shared.metrics.reloaded(false);
            }
            Err(e) => {
                tracing::error!(error = %e, "reload task failed");
                shared.metrics.reloaded(false);
            }
        }
    }
}

/// Re-reads the bootstrap files; true when the kubeconfig they make changed (then it is
/// in `cfg`). A file that cannot be read keeps the previous kubeconfig.
fn reload_kubeconfig(cfg: &mut Config) -> bool {
    let Some(b) = &cfg.bootstrap else {
        return false;
    };
    match b.kubeconfig() {
        Ok(k) if cfg.build.kubeconfig.as_ref() != Some(&k) => {
            tracing::info!("bootstrap token or CA changed: serving the new kubeconfig");
            cfg.build.kubeconfig = Some(k);
            true
        }
        Ok(_) => false,
        Err(e) => {
            tracing::warn!(error = %e, "bootstrap kubeconfig not reloaded");
            false
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    shared: Arc<Shared>,
    limits: ConnLimits,
    stop: watch::Receiver<bool>,
) {
    let limits = Arc::new(limits);
    let max = limits.max_connections;
    crate::tasks::accept_connections(listener, stop, max, move |stream, peer| {
        // A response's last segment goes out at once, not after the client's ACK of the one
        // before (hyper writes each response whole, so Nagle's algorithm only delays).
        let _ = stream.set_nodelay(true);
        let (shared, tls, limits) = (shared.clone(), tls.clone(), limits.clone());
        async move {
            match tls {
                None => serve_conn(stream, peer, "http", shared, &limits).await,
                Some(acceptor) => {
                    // The handshake is part of the head: it gets the same time.
                    match tokio::time::timeout(limits.header_timeout, acceptor.accept(stream)).await
                    {
                        Ok(Ok(s)) => serve_conn(s, peer, "https", shared, &limits).await,
                        Ok(Err(e)) => {
                            tracing::debug!(client = %peer, error = %e, "TLS handshake failed")
                        }
                        Err(_) => tracing::debug!(client = %peer, "TLS handshake timed out"),
                    }
                }
            }
        }
    })
    .await;
}

async fn serve_conn<S>(
    io: S,
    peer: SocketAddr,
    scheme: &'static str,
    shared: Arc<Shared>,
    limits: &ConnLimits,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    crate::limits::serve_http1(io, peer, limits, move |req| {
        let resp = handle(&shared, &req, peer, scheme);
        async move { resp }
    })
    .await;
}

fn handle(
    shared: &Shared,
    req: &hyper::Request<Incoming>,
    peer: SocketAddr,
    scheme: &str,
) -> hyper::Response<Full<Bytes>> {
    let h = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    // Upstream reads the header as raw bytes; non-ASCII bytes must not hide it.
    let accept = req
        .headers()
        .get("accept")
        .map(|v| String::from_utf8_lossy(v.as_bytes()));
    // A list header may come as several lines: they are one comma-separated list.
    let mut codings = req.headers().get_all("accept-encoding").iter();
    let accept_encoding = match (codings.next(), codings.next()) {
        (None, _) => None,
        (Some(one), None) => Some(String::from_utf8_lossy(one.as_bytes())),
        (Some(first), Some(second)) => {
            let mut all = String::from_utf8_lossy(first.as_bytes()).into_owned();
            for v in std::iter::once(second).chain(codings) {
                all.push(',');
                all.push_str(&String::from_utf8_lossy(v.as_bytes()));
            }
            Some(std::borrow::Cow::Owned(all))
        }
    };
    let view = Request {
        method: req.method().as_str(),
        path: req.uri().path(),
        accept: accept.as_deref(),
        accept_encoding: accept_encoding.as_deref(),
        if_none_match: h("if-none-match"),
        authorization: h("authorization"),
        client: Some(peer.ip()),
        has_body: !hyper::body::Body::is_end_stream(req.body()),
    };
    let state = shared.state();
    let r = respond(&view, &state, &shared.access, &shared.metrics);
    shared.metrics.record(r.status, r.cache_hit);
    tracing::info!(
        target: "mcs::access",
        scheme,
        client = %peer,
        method = view.method,
        path = view.path,
        status = r.status,
        pool = r.note.pool.as_deref().unwrap_or(""),
        version = r.note.version.as_deref().unwrap_or(""),
        rendered = r.note.rendered.as_deref().unwrap_or(""),
        accept = view.accept.unwrap_or(""),
        accept_encoding = view.accept_encoding.unwrap_or(""),
        user_agent = h("user-agent").unwrap_or(""),
        bytes = r.body.len(),
        error = r.note.error.as_deref().unwrap_or(""),
        "request"
    );
    let mut resp = hyper::Response::new(Full::new(r.body));
    *resp.status_mut() =
        hyper::StatusCode::from_u16(r.status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    for (k, v) in r.headers {
        if let Ok(v) = hyper::header::HeaderValue::from_str(&v) {
            resp.headers_mut().insert(k, v);
        }
    }
    resp
}
