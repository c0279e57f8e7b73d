//! How the agent's watches run, so that an idle agent sends no request but WATCHes.
//!
//! - Each WATCH long-polls for minutes ([`WatchOptions::timeout_secs`], spread per node between
//!   5 and 10 minutes as client-go's reflectors spread theirs); its reconnect is a WATCH from
//!   the last resourceVersion, not a LIST.
//! - A `410 Expired` (the server restarted with a new watch cache, or compacted its history
//!   past the watch's resourceVersion) lists again at once; other failures are retried with
//!   [`WatchOptions::transient`] delays, shorter ones while the server does not answer, all
//!   starting again as soon as it answers ([`relist`], [`WatchOptions::retry`]).
//! - An API the server does not serve reads as having no objects ([`Seen::Absent`]).
//!   kube-apiserver answers a LIST or WATCH of a custom resource whose CRD is not installed
//!   (its group unknown, or known without that resource) from its last handler, Go's
//!   `http.NotFound`: status 404, `Content-Type: text/plain; charset=utf-8`, the body
//!   `404 page not found` (a built-in group's unknown resource gets a `Status` object instead).
//!   kube-rs turns the plain-text body into an API error with code 404 and the reason
//!   `Failed to parse error data`; [`is_absent`] reads both forms, at the LIST, at a WATCH's
//!   start (the CRD was deleted while the agent watched) and inside a watch.
//! - The agent then watches the resource's CustomResourceDefinition by name (a LIST, then a
//!   WATCH) and looks again when it is Established, so an absent API costs an idle agent no
//!   request, and an API installed later is followed at once. Only when the CRD cannot be
//!   watched (the agent's role does not grant it) is the API rechecked with
//!   [`WatchOptions::absent`]'s growing delays (minutes).

use std::hash::{Hash, Hasher};
use std::time::Duration;

use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::watcher;
use kube::{Api, Client, Resource};
use mco_render::controllers::backoff::{Backoff, WatchRetry};

pub mod relist;
pub use relist::relisting;
use serde::de::DeserializeOwned;

/// The delays before an absent API is looked at again when its CRD cannot be watched: a
/// minute, doubling to ten. An agent runs on every node, so it rechecks more slowly than the
/// controller's [`Backoff::ABSENT_API`].
pub const ABSENT_API: Backoff = Backoff {
    initial: Duration::from_secs(60),
    max: Duration::from_secs(600),
};

/// How the agent's watches run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchOptions {
    /// Seconds each WATCH request asks the server to hold it open (`timeoutSeconds`).
    pub timeout_secs: u32,
    /// Delays after a LIST or WATCH the server refused; while it does not answer, the same
    /// capped at [`WatchRetry::UNREACHABLE`]'s longest.
    pub transient: Backoff,
    /// Delays before an absent API is looked at again, when its CRD cannot be watched.
    pub absent: Backoff,
}

impl WatchOptions {
    /// The options for the agent of `node`: WATCH timeouts between 5 and 10 minutes, spread
    /// by the node's name so that the nodes' watches do not reconnect together.
    pub fn for_node(node: &str) -> Self {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        node.hash(&mut h);
        let spread = u32::try_from(h.finish() % 300).unwrap_or(0);
        WatchOptions {
            timeout_secs: 300 + spread,
            transient: Backoff::TRANSIENT,
            absent: ABSENT_API,
        }
    }

    /// The retry schedule of a watch under these options.
    pub fn retry(&self) -> WatchRetry {
        let outage = Backoff {
            initial: self.transient.initial,
            max: self.transient.max.min(WatchRetry::UNREACHABLE.max),
        };
        WatchRetry::new(self.transient, outage)
    }

    /// A watcher configuration with these options' WATCH timeout.
    pub fn config(&self) -> watcher::Config {
        watcher::Config::default().timeout(self.timeout_secs)
    }

    /// [`WatchOptions::config`] for the one object `name`.
    pub fn named(&self, name: &str) -> watcher::Config {
        self.config().fields(&format!("metadata.name={name}"))
    }
}

/// Whether a watch failed because the server does not serve the API (404), in whichever form
/// kube-apiserver says it (see the module's documentation).
pub fn is_absent(e: &watcher::Error) -> bool {
    match e {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s)) => s.code == 404,
        watcher::Error::WatchError(s) => s.code == 404,
        _ => false,
    }
}

/// Whether a request failed because the server does not serve the API, not because the
/// object it named is missing: a 404 other than the `NotFound` Status naming the object (the
/// plain-text `404 page not found`, or a built-in group's Status that names nothing).
pub fn is_absent_api(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404
        && !(s.reason == "NotFound" && s.details.as_ref().is_some_and(|d| !d.name.is_empty())))
}

/// The CustomResourceDefinition resource.
pub fn crd_resource() -> ApiResource {
    ApiResource {
        group: "apiextensions.k8s.io".into(),
        version: "v1".into(),
        api_version: "apiextensions.k8s.io/v1".into(),
        kind: "CustomResourceDefinition".into(),
        plural: "customresourcedefinitions".into(),
    }
}

/// The name of the CRD that would serve `ar` (`<plural>.<group>`): none for the groups
/// Kubernetes serves itself (the core group, `apps`, `batch`, `policy`, `*.k8s.io`).
pub fn crd_name(ar: &ApiResource) -> Option<String> {
    (ar.group.contains('.') && !ar.group.ends_with(".k8s.io"))
        .then(|| format!("{}.{}", ar.plural, ar.group))
}

/// Where to look when an API is absent: its CRD, through this client.
#[derive(Clone)]
pub struct Crd {
    api: Api<DynamicObject>,
    name: String,
}

impl Crd {
    /// The CRD that would serve `ar`, read through `client`; `None` for built-in APIs.
    pub fn of(client: &Client, ar: &ApiResource) -> Option<Self> {
        Some(Crd {
            api: Api::all_with(client.clone(), &crd_resource()),
            name: crd_name(ar)?,
        })
    }

    /// The CRD's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Whether a CRD object says it is Established (its resource served).
fn established(crd: &DynamicObject) -> bool {
    crd.data["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Established" && c["status"] == "True")
}

/// Waits until an absent API is worth looking at again (`attempt`: the absences in a row so
/// far): until its CRD (`crd`) is Established, watched by name; or, without a CRD to watch or
/// when the CRD watch fails, `opts.absent`'s delay. A CRD Established already when first seen
/// (its installation raced the 404, or it does not serve the version asked for) is looked at
/// once at once, then after the delay.
pub async fn until_served(crd: Option<&Crd>, opts: &WatchOptions, attempt: u32, what: &str) {
    let fallback = opts.absent.delay(attempt);
    let Some(crd) = crd else {
        tracing::debug!("{what}: not served; looking again in {fallback:?}");
        tokio::time::sleep(fallback).await;
        return;
    };
    let mut stream = watcher(crd.api.clone(), opts.named(&crd.name)).boxed();
    while let Some(ev) = stream.next().await {
        match ev {
            Ok(watcher::Event::InitApply(o)) if established(&o) => {
                if attempt > 0 {
                    tokio::time::sleep(fallback).await;
                }
                return;
            }
            Ok(watcher::Event::Apply(o)) if established(&o) => {
                tracing::info!("{what}: CustomResourceDefinition {} established", crd.name);
                return;
            }
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(
                    "{what}: CustomResourceDefinition {} not watched ({e}); looking again in {fallback:?}",
                    crd.name
                );
                tokio::time::sleep(fallback).await;
                return;
            }
        }
    }
}

/// What a followed watch reports.
#[derive(Debug)]
pub enum Seen<K> {
    /// A watch event (an object, or the bounds of a (re-)list).
    Event(watcher::Event<K>),
    /// The server does not serve the API: there are no objects.
    Absent,
}

/// Follows the objects of `api` under `cfg`, handing each event to `on` until it returns
/// false or the watch ends: a `410` lists again at once, other errors are retried after
/// [`WatchOptions::retry`]'s delays, and an absent API is reported ([`Seen::Absent`]) and waited for ([`until_served`]), then listed afresh.
pub async fn follow<K, F>(
    api: Api<K>,
    crd: Option<Crd>,
    cfg: watcher::Config,
    opts: WatchOptions,
    what: &str,
    mut on: F,
) where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
    F: FnMut(Seen<K>) -> bool,
{
    let mut absences = 0u32;
    loop {
        let (api, cfg) = (api.clone(), cfg.clone());
        let mut stream = relisting(opts.retry(), move || watcher(api.clone(), cfg.clone())).boxed();
        loop {
            match stream.next().await {
                None => return,
                Some(Ok(ev)) => {
                    if matches!(ev, watcher::Event::InitDone) {
                        absences = 0;
                    }
                    if !on(Seen::Event(ev)) {
                        return;
                    }
                }
                Some(Err(e)) if is_absent(&e) => {
                    tracing::debug!("{what}: not served ({e})");
                    if !on(Seen::Absent) {
                        return;
                    }
                    until_served(crd.as_ref(), &opts, absences, what).await;
                    absences = absences.saturating_add(1);
                    // A fresh watcher: it lists again.
                    break;
                }
                // Retried by `relisting`, after its delay.
                Some(Err(e)) => tracing::debug!("{what} watch: {e}; retrying"),
            }
        }
    }
}

#[cfg(test)]
mod tests;
