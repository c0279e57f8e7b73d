//! The validating admission webhook: `POST /validate` over HTTPS answers AdmissionReview v1
//! requests with [`mco_render::admission`]'s findings (the same as `mco-render validate
//! --cluster-dir`), against the cluster as watch caches hold it ([`cache`]): no API call per
//! request. `GET /healthz` answers `ok`.
//!
//! The certificate comes from PEM files (the Secret `machine-config-controller-webhook-tls`
//! mounted as files) and is reloaded when they change, as the machine-config-server does
//! ([`crate::mcs::tls`]).

pub mod cache;

use crate::limits::ConnLimits;
use crate::mcs::tls::{self, ReloadingCert, TlsError};
use crate::tasks::ServerTasks;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use mco_render::admission::in_use::User;
use mco_render::admission::v1;
use mco_render::admission::{ClusterView, ReviewOptions};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

/// The largest request body accepted by default: an AdmissionReview carries the object and
/// the stored one, each up to the 1.5 MiB etcd allows.
pub const MAX_BODY_BYTES: usize = 4 << 20;

/// What the webhook's clients may hold or send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookLimits {
    /// Connections, head timeout and size, idle timeout.
    pub conn: ConnLimits,
    /// The largest AdmissionReview body; larger ones get 413 (at once when the
    /// `Content-Length` says so).
    pub max_body_bytes: usize,
    /// Time the body has to arrive once the head has; slower ones get 408. The API server
    /// gives a webhook 10 s at most, so anything slower is already lost.
    pub body_timeout: Duration,
}

impl Default for WebhookLimits {
    fn default() -> Self {
        WebhookLimits {
            conn: ConnLimits {
                max_connections: 128,
                header_timeout: Duration::from_secs(5),
                idle_timeout: Duration::from_secs(60),
                max_header_bytes: 16384,
                max_headers: 64,
            },
            max_body_bytes: MAX_BODY_BYTES,
            body_timeout: Duration::from_secs(5),
        }
    }
}

/// Where reviews read the cluster from.
pub trait ViewSource: Send + Sync + 'static {
    /// The cluster now, or `None` while the caches are not filled (requests are then allowed
    /// with a warning saying they were not reviewed).
    fn view(&self) -> Option<Arc<ClusterView>>;

    /// The pools and nodes that name the MachineConfig `name` (a DELETE of it is refused
    /// then); by default those `view` holds.
    fn users<'a>(&'a self, name: &'a str, view: &'a ClusterView) -> UsersFuture<'a> {
        let users = v1::cluster_users(view, name);
        Box::pin(async move { users })
    }
}

/// What [`ViewSource::users`] returns.
pub type UsersFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Vec<User>> + Send + 'a>>;

/// The MachineConfig a request DELETEs, if it is one.
fn deleted_machine_config(body: &[u8]) -> Option<String> {
    let review: v1::AdmissionReview = serde_json::from_slice(body).ok()?;
    let request = review.request?;
    if request.operation != "DELETE" || request.kind.kind != "MachineConfig" {
        return None;
    }
    match request.name.as_str() {
        "" => request
            .old_object
            .as_ref()
            .and_then(|o| o.pointer("/metadata/name"))
            .and_then(serde_json::Value::as_str)
            .map(str::to_string),
        n => Some(n.to_string()),
    }
}

/// A fixed view (tests, benchmarks).
impl ViewSource for Arc<ClusterView> {
    fn view(&self) -> Option<Arc<ClusterView>> {
        Some(self.clone())
    }
}

/// How to run the webhook.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address to listen on (port 0 picks one).
    pub listen: SocketAddr,
    /// Certificate and key PEM files.
    pub cert: PathBuf,
    /// The key.
    pub key: PathBuf,
    /// Review options.
    pub review: ReviewOptions,
    /// How often to look for a changed certificate.
    pub poll_interval: Duration,
    /// What clients may hold or send.
    pub limits: WebhookLimits,
}

/// Starting failed.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The certificate could not be used.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The port could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The error.
        source: std::io::Error,
    },
}

/// A running webhook.
#[derive(Debug)]
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    tasks: ServerTasks,
}

impl Running {
    /// Stops accepting and the reload loop, and waits for them.
    pub async fn stop(self) {
        self.tasks.stop().await;
    }

    /// Waits until the webhook stops.
    pub async fn wait(self) {
        self.tasks.wait().await;
    }
}

struct Shared {
    source: Box<dyn ViewSource>,
    review: ReviewOptions,
    limits: WebhookLimits,
}

/// Loads the certificate, binds and serves.
pub async fn start(cfg: Config, source: impl ViewSource) -> Result<Running, StartError> {
    let cert = Arc::new(ReloadingCert::new(cfg.cert.clone(), cfg.key.clone())?);
    let acceptor = TlsAcceptor::from(Arc::new(tls::server_config(cert.clone())?));
    let listener = TcpListener::bind(cfg.listen)
        .await
        .map_err(|source| StartError::Bind {
            addr: cfg.listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| StartError::Bind {
        addr: cfg.listen,
        source,
    })?;
    tracing::info!(%addr, "admission webhook serving TLS");
    let shared = Arc::new(Shared {
        source: Box::new(source),
        review: cfg.review.clone(),
        limits: cfg.limits.clone(),
    });
    let (tx, rx) = watch::channel(false);
    let tasks = vec![
        tokio::spawn(accept_loop(listener, acceptor, shared, rx.clone())),
        tokio::spawn(reload_loop(cert, cfg.poll_interval, rx)),
    ];
    Ok(Running {
        addr,
        tasks: ServerTasks::new(tx, tasks),
    })
}

async fn reload_loop(cert: Arc<ReloadingCert>, every: Duration, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        match cert.reload_if_changed() {
            Ok(true) => tracing::info!("webhook certificate reloaded"),
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "webhook certificate not reloaded"),
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    shared: Arc<Shared>,
    stop: watch::Receiver<bool>,
) {
    let max = shared.limits.conn.max_connections;
    crate::tasks::accept_connections(listener, stop, max, move |stream, peer| {
        let (shared, acceptor) = (shared.clone(), acceptor.clone());
        async move {
            let limits = shared.limits.conn.clone();
            // The handshake is part of the head: it gets the same time.
            let tls =
                match tokio::time::timeout(limits.header_timeout, acceptor.accept(stream)).await {
                    Ok(Ok(s)) => s,
                    Ok(Err(e)) => {
                        tracing::debug!(client = %peer, error = %e, "TLS handshake failed");
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(client = %peer, "TLS handshake timed out");
                        return;
                    }
                };
            crate::limits::serve_http1(tls, peer, &limits, move |req| {
                let shared = shared.clone();
                async move { handle(&shared, req).await }
            })
            .await;
        }
    })
    .await;
}

fn reply(status: u16, content_type: &str, body: impl Into<Bytes>) -> hyper::Response<Full<Bytes>> {
    let mut resp = hyper::Response::new(Full::new(body.into()));
    *resp.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(v) = hyper::header::HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    resp
}

async fn handle(shared: &Shared, req: hyper::Request<Incoming>) -> hyper::Response<Full<Bytes>> {
    let path = req.uri().path().to_string();
    match (req.method().as_str(), path.as_str()) {
        ("GET", "/healthz") => reply(200, "text/plain", "ok\n"),
        ("POST", "/validate") => {
            let max = shared.limits.max_body_bytes;
            if hyper::body::Body::size_hint(req.body()).lower() > max as u64 {
                return reply(
                    413,
                    "text/plain",
                    format!("request body over {max} bytes\n"),
                );
            }
            let read = Limited::new(req.into_body(), max).collect();
            let body = match tokio::time::timeout(shared.limits.body_timeout, read).await {
                Ok(Ok(b)) => b.to_bytes(),
                Ok(Err(e)) if e.is::<LengthLimitError>() => {
                    return reply(
                        413,
                        "text/plain",
                        format!("request body over {max} bytes\n"),
                    )
                }
                Ok(Err(e)) => return reply(400, "text/plain", format!("request body: {e}\n")),
                Err(_) => return reply(408, "text/plain", "request body too slow\n"),
            };
            let started = Instant::now();
            let out = match shared.source.view() {
                Some(view) => {
                    // The adapter reads the clock: the core judges maintenance windows from it.
                    let review = ReviewOptions {
                        now: Some(jiff::Timestamp::now()),
                        ..shared.review.clone()
                    };
                    // Only a MachineConfig's DELETE asks who names it (its users read now).
                    let users = match deleted_machine_config(&body) {
                        Some(name) => {
                            let found = shared.source.users(&name, &view).await;
                            Some((name, found))
                        }
                        None => None,
                    };
                    let lookup = |name: &str| match &users {
                        Some((n, u)) if n == name => u.clone(),
                        _ => Vec::new(),
                    };
                    v1::handle_with(&body, &view, &review, &lookup)
                }
                None => not_ready(&body),
            };
            match out {
                Ok(json) => {
                    tracing::debug!(
                        elapsed_us = started.elapsed().as_micros() as u64,
                        "reviewed"
                    );
                    reply(200, "application/json", json)
                }
                Err(e) => reply(400, "text/plain", format!("{e}\n")),
            }
        }
        (_, "/validate") | (_, "/healthz") => reply(405, "text/plain", "method not allowed\n"),
        _ => reply(404, "text/plain", "not found\n"),
    }
}

/// The answer while the caches fill: allowed, saying it was not reviewed.
fn not_ready(body: &[u8]) -> Result<Vec<u8>, v1::DecodeError> {
    let review: v1::AdmissionReview = serde_json::from_slice(body)?;
    let request = review.request.ok_or(v1::DecodeError::NoRequest)?;
    let response = v1::AdmissionResponse {
        uid: request.uid,
        allowed: true,
        status: None,
        warnings: vec![
            "machine-config webhook: the cluster caches are not filled yet; not reviewed".into(),
        ],
    };
    Ok(serde_json::to_vec(&v1::AdmissionReview::response(
        response,
    ))?)
}

/// The webhook's flags, for a binary to flatten into its own.
#[derive(Debug, Clone, clap::Args)]
pub struct WebhookArgs {
    /// Serve the validating admission webhook on this address (off without it), e.g.
    /// `0.0.0.0:9443`.
    #[arg(long)]
    pub webhook_listen: Option<SocketAddr>,
    /// The webhook's certificate (PEM; the Secret's `tls.crt`).
    #[arg(long, default_value = "/etc/webhook-tls/tls.crt")]
    pub webhook_cert: PathBuf,
    /// The webhook's key (PEM; the Secret's `tls.key`).
    #[arg(long, default_value = "/etc/webhook-tls/tls.key")]
    pub webhook_key: PathBuf,
    /// Minutes one node takes to drain, update and reboot, for rollout estimates.
    #[arg(long, default_value_t = 5)]
    pub webhook_node_minutes: u64,
    /// Webhook connections served at once; more wait to be accepted.
    #[arg(long, default_value_t = 128)]
    pub webhook_max_connections: usize,
    /// Seconds a webhook client has for the TLS handshake and the request head, and again for
    /// the body.
    #[arg(long, default_value_t = 5)]
    pub webhook_request_timeout_seconds: u64,
    /// Largest AdmissionReview body in bytes; larger ones get 413.
    #[arg(long, default_value_t = MAX_BODY_BYTES)]
    pub webhook_max_body_bytes: usize,
}

impl WebhookArgs {
    /// The limits the flags set (the rest are [`WebhookLimits::default`]).
    pub fn limits(&self) -> WebhookLimits {
        let d = WebhookLimits::default();
        let timeout = Duration::from_secs(self.webhook_request_timeout_seconds.max(1));
        WebhookLimits {
            conn: ConnLimits {
                max_connections: self.webhook_max_connections.max(1),
                header_timeout: timeout,
                ..d.conn
            },
            max_body_bytes: self.webhook_max_body_bytes,
            body_timeout: timeout,
        }
    }

    /// Runs the webhook on the cluster's caches when `--webhook-listen` is set, on every
    /// replica, leader or not. The caches start at once; serving waits until the certificate
    /// files load (the Secret is mounted optional: it may appear later). The task ends only if
    /// the port cannot be bound.
    pub fn spawn(
        &self,
        client: &kube::Client,
        render: mco_render::RenderOptions,
    ) -> Option<JoinHandle<()>> {
        self.spawn_with(&crate::reflect::Registry::new(client.clone()), render)
    }

    /// [`WebhookArgs::spawn`] on the watches of `registry`, shared with the process's other
    /// loops.
    pub fn spawn_with(
        &self,
        registry: &crate::reflect::Registry,
        render: mco_render::RenderOptions,
    ) -> Option<JoinHandle<()>> {
        let listen = self.webhook_listen?;
        let cfg = Config {
            listen,
            cert: self.webhook_cert.clone(),
            key: self.webhook_key.clone(),
            review: ReviewOptions {
                node_duration: Duration::from_secs(self.webhook_node_minutes.saturating_mul(60)),
                now: None,
            },
            poll_interval: Duration::from_secs(10),
            limits: self.limits(),
        };
        let caches = cache::WebhookCache::start_with(registry, render);
        Some(tokio::spawn(async move {
            let mut reported = false;
            while let Err(e) = tls::load_certified_key(&cfg.cert, &cfg.key) {
                if !reported {
                    tracing::warn!(error = %e, "webhook: no usable certificate yet; checking every 10 s");
                    reported = true;
                }
                tokio::time::sleep(Duration::from_secs(10)).await;
            }
            match start(cfg, caches).await {
                Ok(running) => running.wait().await,
                Err(e) => tracing::error!(error = %e, "webhook not started"),
            }
        }))
    }
}
