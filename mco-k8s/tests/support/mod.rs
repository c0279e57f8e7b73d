//! Test support: an in-process Kubernetes API server.

#![allow(dead_code)]

pub mod admission;
pub mod apiserver;
pub mod builder;
pub mod builtin;
pub mod cluster;
pub mod faults;
pub mod http;
pub mod node_host;
pub mod node_writes;
pub mod patch;
pub mod plugin;
pub mod rbac;
pub mod schema;

/// The YAML documents of a file, as JSON values (empty documents skipped).
pub fn yaml_docs(path: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| {
            <serde_json::Value as serde::Deserialize>::deserialize(d)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        })
        .filter(|v| !v.is_null())
        .collect()
}

/// How long a test waits for an outcome before it fails: generous, since CI machines are
/// shared and a loaded one runs the same steps many times slower. Tests assert what happens,
/// never how fast; speed is measured in `benches/`.
pub const PATIENCE: std::time::Duration = std::time::Duration::from_secs(300);

/// Polls `check` every 20 ms until it returns `Some`, for at most `limit`; panics naming
/// `what` when it never does.
pub async fn eventually_within<T>(
    what: &str,
    limit: std::time::Duration,
    mut check: impl FnMut() -> Option<T>,
) -> T {
    poll_until(what, limit, || std::future::ready(check()), String::new).await
}

/// Polls the async `check` every 20 ms until it returns `Some`, for at most `limit`; panics
/// naming `what`, and what `state` says (when it says anything), when it never does.
pub async fn poll_until<T, Fut>(
    what: &str,
    limit: std::time::Duration,
    mut check: impl FnMut() -> Fut,
    state: impl FnOnce() -> String,
) -> T
where
    Fut: std::future::Future<Output = Option<T>>,
{
    let run = async {
        loop {
            if let Some(v) = check().await {
                return v;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    };
    match tokio::time::timeout(limit, run).await {
        Ok(v) => v,
        Err(_) => match state() {
            s if s.is_empty() => panic!("timed out waiting for {what}"),
            s => panic!("timed out waiting for {what}\n{s}"),
        },
    }
}

/// Changes the stored object through `f` (the status subresource when `status`).
// The test server's handlers return its Status error object by value.
#[allow(clippy::result_large_err)]
pub fn edit(
    store: &apiserver::Store,
    plural: &str,
    ns: &str,
    name: &str,
    status: bool,
    f: impl FnOnce(&mut serde_json::Value),
) {
    let def = apiserver::resource(plural).unwrap();
    store
        .write(def, ns, name, status, |old| {
            let mut v = old.clone();
            f(&mut v);
            Ok(v)
        })
        .unwrap_or_else(|e| panic!("{plural}/{name}: {e:?}"));
}
