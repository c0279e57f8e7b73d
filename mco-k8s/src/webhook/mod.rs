//! The validating admission webhook: `POST /validate` over HTTPS answers AdmissionReview v1
//! requests with [`mco_render::admission`]'s findings (the same as `mco-render validate
//! --cluster-dir`), against the cluster as watch caches hold it ([`cache`]): no API call per
//! request. `GET /healthz` answers `ok`.
//!
//! The certificate comes from PEM files (the Secret `machine-config-controller-webhook-tls`
//! mounted as files) and is reloaded when they change, as the machine-config-server does
//! ([`crate::mcs::tls`]).

pub mod cache;

use crate::mcs::tls::{self, ReloadingCert, TlsError};
use crate::tasks::ServerTasks;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use mco_render::admission::v1;
use mco_render::admission::{ClusterView, ReviewOptions};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

/// The largest request body accepted: an AdmissionReview carries the object and the stored
/// one, each up to the 1.5 MiB etcd allows.
pub const MAX_BODY_BYTES: usize = 4 << 20;

/// Where reviews read the cluster from.
pub trait ViewSource: Send + Sync + 'static {
    /// The cluster now, or `None` while the caches are not filled (requests are then allowed
    /// with a warning saying they were not reviewed).
    fn view(&self) -> Option<Arc<ClusterView>>;
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
    crate::tasks::accept_connections(listener, stop, move |stream, peer| {
        let (shared, acceptor) = (shared.clone(), acceptor.clone());
        async move {
            let tls = match acceptor.accept(stream).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::debug!(client = %peer, error = %e, "TLS handshake failed");
                    return;
                }
            };
            let svc = service_fn(move |req| {
                let shared = shared.clone();
                async move { Ok::<_, Infallible>(handle(&shared, req).await) }
            });
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(10))
                .serve_connection(TokioIo::new(tls), svc);
            if let Err(e) = conn.await {
                tracing::debug!(client = %peer, error = %e, "connection ended with an error");
            }
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
            let body = match Limited::new(req.into_body(), MAX_BODY_BYTES)
                .collect()
                .await
            {
                Ok(b) => b.to_bytes(),
                Err(e) => return reply(413, "text/plain", format!("request body: {e}\n")),
            };
            let started = Instant::now();
            let out = match shared.source.view() {
                Some(view) => {
                    // The adapter reads the clock: the core judges maintenance windows from it.
                    let review = ReviewOptions {
                        now: Some(jiff::Timestamp::now()),
                        ..shared.review.clone()
                    };
                    v1::handle(&body, &view, &review)
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
}

impl WebhookArgs {
    /// Runs the webhook on the cluster's caches when `--webhook-listen` is set, on every
    /// replica, leader or not. The caches start at once; serving waits until the certificate
    /// files load (the Secret is mounted optional: it may appear later). The task ends only if
    /// the port cannot be bound.
    pub fn spawn(
        &self,
        client: &kube::Client,
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
        };
        let caches = cache::WebhookCache::start(client, render);
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
