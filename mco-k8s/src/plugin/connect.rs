//! The client, found as kubectl finds it: `--kubeconfig`, else `KUBECONFIG` or
//! `~/.kube/config`, else the in-cluster service account; `--context` picks a context of the
//! kubeconfig instead of its current one.

use crate::kubeclient::{user_agent, ConnectError};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use std::path::Path;

/// The User-Agent the plugin sends.
pub fn agent() -> String {
    user_agent("kubectl-mco", None)
}

/// A client, and the API server it talks to as kubectl names it in messages
/// ([`super::fail::server_name`]).
pub struct Connected {
    /// The client.
    pub client: Client,
    /// The server's host and port.
    pub server: String,
}

/// A client for `kubeconfig` (or the usual places) and `context` (or the current one).
pub async fn client(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<Connected, ConnectError> {
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        ..KubeConfigOptions::default()
    };
    let mut config =
        match (kubeconfig, context) {
            (Some(path), _) => {
                let err = |source| ConnectError::Kubeconfig {
                    path: path.display().to_string(),
                    source,
                };
                let kc = Kubeconfig::read_from(path).map_err(err)?;
                Config::from_custom_kubeconfig(kc, &options)
                    .await
                    .map_err(err)?
            }
            (None, Some(_)) => Config::from_kubeconfig(&options).await.map_err(|source| {
                ConnectError::Kubeconfig {
                    path: std::env::var("KUBECONFIG").unwrap_or_else(|_| "~/.kube/config".into()),
                    source,
                }
            })?,
            (None, None) => Config::infer().await?,
        };
    let ua = agent();
    let value =
        http::HeaderValue::from_str(&ua).map_err(|_| ConnectError::UserAgent(ua.clone()))?;
    config.headers.push((http::header::USER_AGENT, value));
    let server = super::fail::server_name(&config.cluster_url);
    Ok(Connected {
        client: crate::kubeclient::client_from(config)?,
        server,
    })
}
