//! Watch caches: one watch per kind keeps a local store of every object of that kind, and
//! each change is handed to a callback (which usually enqueues the keys it affects). After
//! start-up the only LIST is the one a watch must make to re-list (its resourceVersion
//! expired); reconciles read the stores.
//!
//! Errors back off on their own schedule ([`Backoff`]): a dropped watch is retried within
//! seconds, an API the server does not serve (404: its CRD is not installed) every few
//! minutes; such a kind's store is empty and ready, as a LIST of it would have nothing. kube-runtime's stock backoff resets on every event, and its watcher emits an
//! `Init` event before each retry, which turned an absent API into a request a second.

use futures::StreamExt;
pub use kube::runtime::reflector::ObjectRef;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use kube::{Api, Resource};
use mco_render::controllers::backoff::Backoff;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::hash::Hash;

/// What changed in a watched kind.
#[derive(Debug)]
pub enum Change<'a, K> {
    /// An object was created or modified.
    Applied(&'a K),
    /// An object was deleted.
    Deleted(&'a K),
    /// The watch (re-)listed: any object may have changed, appeared or gone.
    Relisted,
}

/// A watch cache: the store, and the task feeding it (stopped when this is dropped).
pub struct Reflector<K: Resource + 'static>
where
    K::DynamicType: Hash + Eq,
{
    store: Store<K>,
    task: tokio::task::JoinHandle<()>,
}

impl<K: Resource + 'static> Reflector<K>
where
    K::DynamicType: Hash + Eq,
{
    /// The store (cheap to clone; reads see the latest applied events).
    pub fn store(&self) -> &Store<K> {
        &self.store
    }

    /// Whether the watch task has ended (it only ends when aborted or on a panic).
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }
}

impl<K: Resource + 'static> Drop for Reflector<K>
where
    K::DynamicType: Hash + Eq,
{
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Whether a watch error means the server does not serve the resource at all.
fn is_absent(e: &watcher::Error) -> bool {
    match e {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s)) => s.code == 404,
        watcher::Error::WatchError(s) => s.code == 404,
        _ => false,
    }
}

/// Watches `api` into a store, calling `on_change` after each change is in the store (with
/// the store, to read the rest of the kind). `what` names the kind in logs.
pub fn reflect<K, F>(
    api: Api<K>,
    config: watcher::Config,
    what: &'static str,
    on_change: F,
) -> Reflector<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    F: FnMut(Change<'_, K>, &Store<K>) + Send + 'static,
{
    reflect_with(api, config, (), what, on_change)
}

/// [`reflect`] for kinds with a dynamic type (the MCO kinds, `kube::core::Object`s).
pub fn reflect_with<K, F>(
    api: Api<K>,
    config: watcher::Config,
    dyntype: K::DynamicType,
    what: &'static str,
    mut on_change: F,
) -> Reflector<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash + Send + Sync,
    F: FnMut(Change<'_, K>, &Store<K>) + Send + 'static,
{
    let mut writer = reflector::store::Writer::<K>::new(dyntype);
    let store = writer.as_reader();
    let reader = store.clone();
    let task = tokio::spawn(async move {
        let mut stream = watcher(api, config).boxed();
        let mut attempt = 0u32;
        let mut reported_absent = false;
        while let Some(event) = stream.next().await {
            match event {
                Ok(event) => {
                    writer.apply_watcher_event(&event);
                    let change = match &event {
                        watcher::Event::Apply(o) => Change::Applied(o),
                        watcher::Event::Delete(o) => Change::Deleted(o),
                        watcher::Event::InitDone => Change::Relisted,
                        // The restart marker and the listed objects come before InitDone.
                        watcher::Event::Init | watcher::Event::InitApply(_) => continue,
                    };
                    attempt = 0;
                    if reported_absent {
                        tracing::info!("{what}: now served");
                        reported_absent = false;
                    }
                    on_change(change, &reader);
                }
                Err(e) => {
                    let absent = is_absent(&e);
                    if absent && !reported_absent {
                        // Not served: the kind holds nothing. The store says so (emptied, and
                        // ready, so that readers waiting for it go on) and readers look again.
                        writer.apply_watcher_event(&watcher::Event::Init);
                        writer.apply_watcher_event(&watcher::Event::InitDone);
                        on_change(Change::Relisted, &reader);
                    }
                    let policy = if absent {
                        Backoff::ABSENT_API
                    } else {
                        Backoff::TRANSIENT
                    };
                    let delay = policy.delay(attempt);
                    attempt = attempt.saturating_add(1);
                    if absent {
                        if !reported_absent {
                            tracing::info!("{what}: not served by the API server; checking again with a growing delay");
                            reported_absent = true;
                        }
                    } else {
                        tracing::warn!("{what}: watch failed ({e}); retrying in {delay:?}");
                    }
                    tokio::time::sleep(delay).await;
                }
            }
        }
    });
    Reflector { store, task }
}

/// Which changes of a watched kind wake a loop that re-reads what it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// Every change.
    Every,
    /// Creations, deletions and spec changes (a new `metadata.generation`), not status
    /// updates: a pool's status moves with every node update.
    SpecChanges,
    /// Every change except to rendered MachineConfigs (`rendered-*`), which only the render
    /// controller writes and reads.
    NotRendered,
}

/// Watches `api` (objects of `dyntype`) into a store and sends a wake-up into `tx` on the
/// changes `wake` names (a full channel already holds one).
pub fn wake_on<K>(
    api: Api<K>,
    config: watcher::Config,
    dyntype: K::DynamicType,
    what: &'static str,
    wake: Wake,
    tx: tokio::sync::mpsc::Sender<()>,
) -> Reflector<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash + Send + Sync,
{
    let mut generations: std::collections::BTreeMap<String, Option<i64>> = Default::default();
    reflect_with(api, config, dyntype, what, move |change, _| {
        let relevant = match (&change, wake) {
            (_, Wake::Every) | (Change::Relisted, _) => true,
            (Change::Applied(o) | Change::Deleted(o), Wake::NotRendered) => !o
                .meta()
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("rendered-")),
            (Change::Deleted(o), Wake::SpecChanges) => {
                generations.remove(o.meta().name.as_deref().unwrap_or(""));
                true
            }
            (Change::Applied(o), Wake::SpecChanges) => {
                let name = o.meta().name.clone().unwrap_or_default();
                let generation = o.meta().generation;
                generations.insert(name, generation) != Some(generation)
            }
        };
        if relevant {
            let _ = tx.try_send(());
        }
    })
}
