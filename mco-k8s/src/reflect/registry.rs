//! The watches of one process, shared: each watched collection (a resource's URL, in one
//! namespace or all, and the watch's label and field selectors) is watched once, started by
//! the first loop that asks for it; later ones get the same store and subscribe to its
//! changes. As client-go's shared informer factory does.
//!
//! Once a kind turns out not to be served, the registry also watches the
//! CustomResourceDefinitions (their metadata only, one watch), so that a watch of a kind the
//! server does not serve yet looks again when its CRD appears, instead of polling.

use super::{lock, spawn_watch, Change, Recheck, Subscription, Watched};
use kube::api::{ApiResource, DynamicObject};
use kube::core::PartialObjectMeta;
use kube::runtime::watcher;
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use std::any::Any;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use tokio::sync::Notify;

/// What identifies a watch: the collection's URL and the selectors.
type Key = (String, Option<String>, Option<String>);

/// The metadata of the CustomResourceDefinitions.
pub type CrdMeta = PartialObjectMeta<DynamicObject>;

/// A watch the registry started, as long as anyone holds it.
struct Entry {
    /// A `Weak<Shared<K>>` of the watch's object type.
    watch: Box<dyn Any + Send + Sync>,
    /// The CRD that serves the kind (`<plural>.<group>`), when a CRD may.
    crd: Option<String>,
    /// Woken when that CRD changes.
    recheck: Weak<Notify>,
}

/// The registry's CRD watch.
struct Crds {
    watched: Watched<CrdMeta>,
    _subscription: Subscription,
}

struct Inner {
    client: Client,
    entries: Mutex<BTreeMap<Key, Entry>>,
    crds: OnceLock<Crds>,
    /// Held while the CRD watch starts (it starts once).
    crds_starting: Mutex<()>,
    /// Whether the CRD watch's last event was not an error.
    crds_working: Arc<AtomicBool>,
}

/// A watch's handle on its registry's CRD watch: starts it, says whether it works.
#[derive(Clone)]
pub(crate) struct CrdHook {
    registry: Weak<Inner>,
    working: Arc<AtomicBool>,
}

impl CrdHook {
    /// Starts the registry's CRD watch if it is not running.
    pub(crate) fn start(&self) {
        if let Some(inner) = self.registry.upgrade() {
            Registry { inner }.crds();
        }
    }

    /// Whether the CRD watch is working (then absent kinds wait for it, unpolled).
    pub(crate) fn working(&self) -> bool {
        self.working.load(Ordering::Acquire)
    }
}

/// The process's shared watches. Cheap to clone (every clone is the same registry).
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<Key> = lock(&self.inner.entries).keys().cloned().collect();
        f.debug_struct("Registry").field("watches", &keys).finish()
    }
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

/// The name of the CRD that would serve `plural` in `group`: none for the groups Kubernetes
/// itself serves (the core group, `apps`, `batch`, `policy`, `*.k8s.io`).
fn crd_name(group: &str, plural: &str) -> Option<String> {
    (group.contains('.') && !group.ends_with(".k8s.io")).then(|| format!("{plural}.{group}"))
}

impl Registry {
    /// An empty registry whose watches use `client`.
    pub fn new(client: Client) -> Self {
        Registry {
            inner: Arc::new(Inner {
                client,
                entries: Mutex::new(BTreeMap::new()),
                crds: OnceLock::new(),
                crds_starting: Mutex::new(()),
                crds_working: Arc::new(AtomicBool::new(false)),
            }),
        }
    }

    /// The client the watches use.
    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// The watch of `api` under `config`: the running one when there is one, else one started
    /// now (inside a Tokio runtime). `dyntype` is the objects' type, `what` names the kind in
    /// logs. A collection is watched as one object type per process: asked for as another, it
    /// gets a watch of its own, logged as an error.
    pub fn watch<K>(
        &self,
        api: Api<K>,
        config: watcher::Config,
        dyntype: K::DynamicType,
        what: &'static str,
    ) -> Watched<K>
    where
        K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
        K::DynamicType: Clone + Eq + Hash + Send + Sync,
    {
        let key: Key = (
            api.resource_url().to_string(),
            config.label_selector.clone(),
            config.field_selector.clone(),
        );
        let crd = crd_name(&K::group(&dyntype), &K::plural(&dyntype));
        let crd_watch = K::group(&dyntype) == "apiextensions.k8s.io"
            && K::plural(&dyntype) == "customresourcedefinitions"
            && key.1.is_none()
            && key.2.is_none();
        if crd_watch {
            // The registry's own CRD watch, when the types agree.
            let shared: Box<dyn Any> = Box::new(self.crds());
            match shared.downcast::<Watched<K>>() {
                Ok(w) => return *w,
                Err(_) => {
                    tracing::error!(
                        "{what}: CRDs are watched already as metadata; watching them again"
                    );
                    return self.start(api, config, dyntype, what, None);
                }
            }
        }
        let mut entries = lock(&self.inner.entries);
        if let Some(entry) = entries.get(&key) {
            match entry.watch.downcast_ref::<Weak<super::Shared<K>>>() {
                Some(weak) => {
                    if let Some(shared) = weak.upgrade() {
                        return Watched { shared };
                    }
                }
                None => {
                    tracing::error!(
                        "{what}: {} is watched already as another type; watching it again",
                        key.0
                    );
                    drop(entries);
                    return self.start(api, config, dyntype, what, None);
                }
            }
        }
        let watched = self.start(api, config, dyntype, what, crd.clone());
        entries.insert(
            key,
            Entry {
                watch: Box::new(Arc::downgrade(&watched.shared)),
                crd,
                recheck: Arc::downgrade(&watched.shared.recheck.notify),
            },
        );
        watched
    }

    /// Starts a watch: absent APIs wait for their CRD (`crd`) when the registry watches CRDs.
    fn start<K>(
        &self,
        api: Api<K>,
        config: watcher::Config,
        dyntype: K::DynamicType,
        what: &'static str,
        crd: Option<String>,
    ) -> Watched<K>
    where
        K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
        K::DynamicType: Clone + Eq + Hash + Send + Sync,
    {
        let recheck = Recheck {
            notify: Arc::new(Notify::new()),
            crds: crd.as_ref().map(|_| CrdHook {
                registry: Arc::downgrade(&self.inner),
                working: self.inner.crds_working.clone(),
            }),
        };
        // Keeps the registry, and its CRD watch, alive while this watch runs.
        let keep: Option<Arc<dyn Any + Send + Sync>> = crd.map(|_| {
            let inner: Arc<dyn Any + Send + Sync> = self.inner.clone();
            inner
        });
        spawn_watch(
            move || watcher(api.clone(), config.clone()),
            dyntype,
            what,
            recheck,
            None,
            keep,
        )
    }

    /// The registry's watch of the CRDs' metadata, started on first use (by a loop that
    /// watches CRDs' metadata itself, or when a watched kind is not served).
    pub fn crds(&self) -> Watched<CrdMeta> {
        if let Some(c) = self.inner.crds.get() {
            return c.watched.clone();
        }
        let _starting = lock(&self.inner.crds_starting);
        if let Some(c) = self.inner.crds.get() {
            return c.watched.clone();
        }
        let ar = crd_resource();
        let api = Api::<CrdMeta>::all_with(self.client().clone(), &ar);
        // Not through `watch`: the CRD watch holds no handle on the registry.
        let crd_api = api.clone();
        let watched = spawn_watch(
            move || watcher(crd_api.clone(), watcher::Config::default()),
            ar,
            "CustomResourceDefinitions",
            Recheck::default(),
            Some(self.inner.crds_working.clone()),
            None,
        );
        let weak = Arc::downgrade(&self.inner);
        let subscription = watched.subscribe(move |change, store| {
            let Some(inner) = weak.upgrade() else { return };
            let changed: Option<String> = match change {
                Change::Applied(c) | Change::Deleted(c) => c.metadata.name.clone(),
                Change::Relisted => None,
            };
            let present = |name: &str| {
                store
                    .state()
                    .iter()
                    .any(|c| c.metadata.name.as_deref() == Some(name))
            };
            for entry in lock(&inner.entries).values() {
                let Some(crd) = &entry.crd else { continue };
                let concerned = match &changed {
                    Some(name) => name == crd,
                    None => present(crd),
                };
                if concerned {
                    if let Some(n) = entry.recheck.upgrade() {
                        n.notify_one();
                    }
                }
            }
        });
        let crds = Crds {
            watched: watched.clone(),
            _subscription: subscription,
        };
        // Only this caller starts it (under `crds_starting`).
        let _ = self.inner.crds.set(crds);
        let key: Key = (api.resource_url().to_string(), None, None);
        lock(&self.inner.entries).insert(
            key,
            Entry {
                watch: Box::new(Arc::downgrade(&watched.shared)),
                crd: None,
                recheck: Arc::downgrade(&watched.shared.recheck.notify),
            },
        );
        watched
    }

    /// The watches running now: each collection's URL and selectors (for tests and logs).
    pub fn watches(&self) -> Vec<(String, Option<String>, Option<String>)> {
        lock(&self.inner.entries)
            .iter()
            .filter(|(_, e)| e.recheck.strong_count() > 0)
            .map(|(k, _)| k.clone())
            .collect()
    }
}
