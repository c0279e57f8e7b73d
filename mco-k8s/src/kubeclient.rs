//! Connecting to the API server the way every component does: an explicit `--kubeconfig`, else
//! `KUBECONFIG` / `~/.kube/config` / the in-cluster service account, and a User-Agent that
//! names the component (the API server's audit log and metrics attribute requests by it), and
//! logs for people: colour only on a terminal.

use kube::client::retry::RetryPolicy;
use kube::client::ClientBuilder;
use kube::{Client, Config};
use mco_render::controllers::backoff::ClientRetry;
use std::io::IsTerminal;
use std::path::Path;
use tower::buffer::BufferLayer;
use tower::retry::RetryLayer;

/// Why no client could be built.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The kubeconfig could not be read.
    #[error("kubeconfig {path}: {source}")]
    Kubeconfig {
        /// The file.
        path: String,
        /// The reason.
        source: kube::config::KubeconfigError,
    },
    /// No configuration was found or it was unusable.
    #[error("{0}")]
    Infer(#[from] kube::config::InferConfigError),
    /// The User-Agent is not a valid header value.
    #[error("user agent {0:?} is not a valid header value")]
    UserAgent(String),
    /// The client could not be built from the configuration.
    #[error("{0}")]
    Client(#[from] kube::Error),
}

/// `<component>/<version>`, optionally followed by ` (<detail>)` (the agent's node name).
pub fn user_agent(component: &str, detail: Option<&str>) -> String {
    let version = env!("CARGO_PKG_VERSION");
    match detail {
        Some(d) if !d.is_empty() => format!("{component}/{version} ({d})"),
        _ => format!("{component}/{version}"),
    }
}

/// A client from `kubeconfig` (or the usual places when None), sending `user_agent`.
pub async fn connect(kubeconfig: Option<&Path>, user_agent: &str) -> Result<Client, ConnectError> {
    let mut config = match kubeconfig {
        Some(path) => {
            let err = |source| ConnectError::Kubeconfig {
                path: path.display().to_string(),
                source,
            };
            let kc = kube::config::Kubeconfig::read_from(path).map_err(err)?;
            Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(err)?
        }
        None => Config::infer().await?,
    };
    let value = http::HeaderValue::from_str(user_agent)
        .map_err(|_| ConnectError::UserAgent(user_agent.to_string()))?;
    config.headers.push((http::header::USER_AGENT, value));
    Ok(client_from(config)?)
}

/// A client for `config` that retries a request answered `429`, `503` or `504` as
/// [`ClientRetry::COMPONENTS`] says (a `Retry-After` honoured), not as kube-client's default.
pub fn client_from(mut config: Config) -> Result<Client, kube::Error> {
    config.default_retry = false;
    let r = ClientRetry::COMPONENTS;
    let policy = RetryPolicy::new(r.backoff.initial, r.backoff.max, r.retries, true)
        .map_err(|e| kube::Error::Service(e.into()))?;
    // (A buffer first: the retry layer clones the service it wraps, as kube-client's own.)
    Ok(ClientBuilder::try_from(config)?
        .with_layer(&BufferLayer::new(1024))
        .with_layer(&RetryLayer::new(policy))
        .build())
}

/// Logs to standard error, coloured only when it is a terminal.
pub fn init_logging() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}
