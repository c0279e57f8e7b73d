//! Watch caches: one watch per kind keeps a local store of every object of that kind, and
//! each change is handed to the callbacks subscribed to it (which usually enqueue the keys it
//! affects). After start-up the only LIST is the one a watch must make to re-list (its
//! resourceVersion expired); reconciles read the stores.
//!
//! A process shares its watches through a [`Registry`]: each watched collection (a kind, in
//! one namespace or all, under one selector) is watched once, however many loops read it;
//! each gets the store and a change subscription ([`Watched::subscribe`], [`Watched::wake`]).
//! The watch stops when its last handle and subscription are dropped.
//!
//! Errors back off on their own schedule ([`relist`]): a `410 Expired` (history compacted,
//! or the API server restarted with a new watch cache) lists again at once, other failures
//! wait a delay that starts again as soon as the server answers. While a watch re-lists, its
//! store is known to be stale: [`Watched::wait_until_ready`] (and [`Listed::wait`]) wait for
//! the new list, so a pass that reads the store first makes no decision from it.
//!
//! An API the server does not serve (404: its CRD is not installed) has an empty, ready
//! store, as a LIST of it would have nothing; a registry's watch looks again when the
//! CustomResourceDefinition of its kind appears (the registry watches CRDs' metadata, once),
//! and polls with [`Backoff::ABSENT_API`] only while that watch is not working. kube-runtime's
//! stock backoff resets on every event, and its watcher emits an `Init` event before each
//! retry, which turned an absent API into a request a second.

pub mod registry;
pub mod relist;

use futures::{Stream, StreamExt};
pub use kube::runtime::reflector::ObjectRef;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use kube::{Api, Resource};
use mco_render::controllers::backoff::Backoff;
pub use registry::Registry;
use serde::de::DeserializeOwned;
use std::any::Any;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use tokio::sync::Notify;

/// What changed in a watched kind.
#[derive(Debug)]
pub enum Change<'a, K> {
    /// An object was created or modified.
    Applied(&'a K),
    /// An object was deleted.
    Deleted(&'a K),
    /// The watch (re-)listed, or the subscription is new: any object may have changed,
    /// appeared or gone.
    Relisted,
}

/// A subscriber's callback: called after each change is in the store, with the store.
type Callback<K> = Box<dyn FnMut(Change<'_, K>, &Store<K>) + Send>;

/// The callbacks of one watch, and whether its store has listed yet.
struct Subscribers<K: Resource + 'static>
where
    K::DynamicType: Hash + Eq,
{
    next: u64,
    callbacks: Vec<(u64, Callback<K>)>,
    listed: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// When a watch of an API the server does not serve looks again.
#[derive(Clone, Default)]
pub(crate) struct Recheck {
    /// Woken when the kind's CustomResourceDefinition changes.
    notify: Arc<Notify>,
    /// The registry's CRD watch (started at the first absence); `None`: not under a
    /// registry, always poll.
    crds: Option<registry::CrdHook>,
}

impl Recheck {
    /// The kind is not served: makes sure the registry watches CRDs.
    fn absent(&self) {
        if let Some(h) = &self.crds {
            h.start();
        }
    }

    /// Waits until the kind should be looked at again (`attempt`: absences so far): when its
    /// CRD changes, or while the registry's CRD watch is not working, on the
    /// [`Backoff::ABSENT_API`] schedule.
    async fn wait(&self, attempt: u32) {
        let delay = Backoff::ABSENT_API.delay(attempt);
        loop {
            tokio::select! {
                () = self.notify.notified() => return,
                () = tokio::time::sleep(delay) => {
                    if !self.crds.as_ref().is_some_and(registry::CrdHook::working) {
                        return;
                    }
                }
            }
        }
    }
}

/// One watch: its store, its subscribers, the task feeding them (stopped when the last
/// handle is dropped).
struct Shared<K: Resource + 'static>
where
    K::DynamicType: Hash + Eq,
{
    store: Store<K>,
    subscribers: Arc<Mutex<Subscribers<K>>>,
    recheck: Recheck,
    /// Whether the store has listed (any number of tasks may wait on it, unlike
    /// `Store::wait_until_ready`, which wakes only the last task that polled it).
    listed: tokio::sync::watch::Receiver<bool>,
    task: tokio::task::JoinHandle<()>,
    /// What keeps the registry's CRD watch running while this watch runs.
    _registry: Option<Arc<dyn Any + Send + Sync>>,
}

impl<K: Resource + 'static> Drop for Shared<K>
where
    K::DynamicType: Hash + Eq,
{
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A handle on a watch: its store and change subscriptions. Cheap to clone; the watch runs
/// while a handle or a subscription of it is alive.
pub struct Watched<K: Resource + 'static>
where
    K::DynamicType: Hash + Eq,
{
    shared: Arc<Shared<K>>,
}

impl<K: Resource + 'static> Clone for Watched<K>
where
    K::DynamicType: Hash + Eq,
{
    fn clone(&self) -> Self {
        Watched {
            shared: self.shared.clone(),
        }
    }
}

/// Whether a watch's store holds its kind as listed: not before the first list is done, nor
/// while it lists again (after a `410`, the store is known to be stale).
#[derive(Clone)]
pub struct Listed(tokio::sync::watch::Receiver<bool>);

impl Listed {
    /// Waits until the store is listed. Fails when the watch stopped.
    pub async fn wait(&self) -> Result<(), WatchStopped> {
        let mut listed = self.0.clone();
        listed
            .wait_for(|l| *l)
            .await
            .map(|_| ())
            .map_err(|_| WatchStopped)
    }

    /// Whether the store is listed now.
    pub fn now(&self) -> bool {
        *self.0.borrow()
    }

    /// Waits until every store of `all` is listed. Fails when a watch stopped.
    pub async fn all(all: &[Listed]) -> Result<(), WatchStopped> {
        // Again while a store began to list again as another was waited for.
        loop {
            for l in all {
                l.wait().await?;
            }
            if all.iter().all(Listed::now) {
                return Ok(());
            }
        }
    }
}

/// The watch stopped before its store listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the watch stopped before it listed")]
pub struct WatchStopped;

/// A change subscription: its callback is removed when this is dropped.
#[must_use = "the callback is removed when the subscription is dropped"]
pub struct Subscription {
    remove: Option<Box<dyn FnOnce() + Send + Sync>>,
    _watch: Arc<dyn Any + Send + Sync>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(remove) = self.remove.take() {
            remove();
        }
    }
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Subscription")
    }
}

/// A hash of a value, for [`Watched::wake_when`] fingerprints.
pub fn fingerprint(v: &impl Hash) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

impl<K> Watched<K>
where
    K: Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash + Send + Sync,
{
    /// The store (cheap to clone; reads see the latest applied events).
    pub fn store(&self) -> &Store<K> {
        &self.shared.store
    }

    /// Whether the watch task has ended (it only ends when aborted or on a panic).
    pub fn is_finished(&self) -> bool {
        self.shared.task.is_finished()
    }

    /// Waits until the store holds the kind as listed (or knows its API is not served). Any
    /// number of tasks may wait at once. Fails when the watch stopped first.
    pub async fn wait_until_ready(&self) -> Result<(), WatchStopped> {
        let mut listed = self.shared.listed.clone();
        listed
            .wait_for(|l| *l)
            .await
            .map(|_| ())
            .map_err(|_| WatchStopped)
    }

    /// Whether the store holds the kind as last listed, to wait on beside other watches'
    /// ([`Listed::wait`]).
    pub fn listed(&self) -> Listed {
        Listed(self.shared.listed.clone())
    }

    /// Looks at an API the server did not serve again now (a no-op while it is served but
    /// for one extra look the next time it is not).
    pub fn recheck(&self) {
        self.shared.recheck.notify.notify_one();
    }

    /// Calls `on_change` after each change is in the store, with the store; at once with
    /// [`Change::Relisted`] when the store has already listed.
    pub fn subscribe<F>(&self, on_change: F) -> Subscription
    where
        F: FnMut(Change<'_, K>, &Store<K>) + Send + 'static,
    {
        let mut cb: Callback<K> = Box::new(on_change);
        let mut subs = lock(&self.shared.subscribers);
        if subs.listed {
            cb(Change::Relisted, &self.shared.store);
        }
        let id = subs.next;
        subs.next += 1;
        subs.callbacks.push((id, cb));
        drop(subs);
        let weak: Weak<Mutex<Subscribers<K>>> = Arc::downgrade(&self.shared.subscribers);
        Subscription {
            remove: Some(Box::new(move || {
                if let Some(s) = weak.upgrade() {
                    lock(&s).callbacks.retain(|(i, _)| *i != id);
                }
            })),
            _watch: self.shared.clone(),
        }
    }

    /// Sends a wake-up into `tx` on the changes `wake` names (a full channel already holds
    /// one), and once at once when the store has listed.
    pub fn wake(&self, wake: Wake, tx: tokio::sync::mpsc::Sender<()>) -> Subscription {
        match wake {
            Wake::Every => self.subscribe(move |_, _| {
                let _ = tx.try_send(());
            }),
            Wake::SpecChanges => self.wake_when(tx, |o: &K| fingerprint(&o.meta().generation)),
            Wake::NotRendered => self.subscribe(move |change, _| {
                let rendered = match &change {
                    Change::Applied(o) | Change::Deleted(o) => o
                        .meta()
                        .name
                        .as_deref()
                        .is_some_and(|n| n.starts_with("rendered-")),
                    Change::Relisted => false,
                };
                if !rendered {
                    let _ = tx.try_send(());
                }
            }),
        }
    }

    /// Sends a wake-up into `tx` when an object appears, goes, or its `fingerprint` (of the
    /// fields the woken loop reads) changes, and on every re-list.
    pub fn wake_when<F>(&self, tx: tokio::sync::mpsc::Sender<()>, fingerprint: F) -> Subscription
    where
        F: Fn(&K) -> u64 + Send + 'static,
    {
        let mut seen: BTreeMap<(Option<String>, String), u64> = BTreeMap::new();
        let key = |o: &K| {
            let m = o.meta();
            (m.namespace.clone(), m.name.clone().unwrap_or_default())
        };
        self.subscribe(move |change, store| {
            let relevant = match change {
                Change::Relisted => {
                    seen = store
                        .state()
                        .iter()
                        .map(|o| (key(o), fingerprint(o)))
                        .collect();
                    true
                }
                Change::Deleted(o) => {
                    seen.remove(&key(o));
                    true
                }
                Change::Applied(o) => {
                    let f = fingerprint(o);
                    seen.insert(key(o), f) != Some(f)
                }
            };
            if relevant {
                let _ = tx.try_send(());
            }
        })
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

/// Starts the task keeping a store from the watches `make` starts ([`relist::relisting`]),
/// calling the subscribers after each change.
fn spawn_watch<K, S, M>(
    make: M,
    dyntype: K::DynamicType,
    what: &'static str,
    recheck: Recheck,
    health: Option<Arc<AtomicBool>>,
    registry: Option<Arc<dyn Any + Send + Sync>>,
) -> Watched<K>
where
    K: Resource + Clone + Debug + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash + Send + Sync,
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
    M: FnMut() -> S + Send + 'static,
{
    let mut writer = reflector::store::Writer::<K>::new(dyntype);
    let store = writer.as_reader();
    let reader = store.clone();
    let subscribers = Arc::new(Mutex::new(Subscribers {
        next: 0,
        callbacks: Vec::new(),
        listed: false,
    }));
    let subs = subscribers.clone();
    let again = recheck.clone();
    let (listed_tx, listed) = tokio::sync::watch::channel(false);
    let set_listed = move |now: bool| {
        listed_tx.send_if_modified(|l| std::mem::replace(l, now) != now);
    };
    let notify = move |change: Change<'_, K>, subs: &Mutex<Subscribers<K>>| {
        let mut s = lock(subs);
        if matches!(change, Change::Relisted) {
            s.listed = true;
        }
        for (_, cb) in s.callbacks.iter_mut() {
            let c = match &change {
                Change::Applied(o) => Change::Applied(*o),
                Change::Deleted(o) => Change::Deleted(*o),
                Change::Relisted => Change::Relisted,
            };
            cb(c, &reader);
        }
    };
    let task = tokio::spawn(async move {
        let mut stream = relist::relisting(
            mco_render::controllers::backoff::WatchRetry::default(),
            make,
        )
        .boxed();
        let mut absences = 0u32;
        let mut reported_absent = false;
        while let Some(event) = stream.next().await {
            if let Some(h) = &health {
                h.store(event.is_ok(), Ordering::Release);
            }
            match event {
                Ok(event) => {
                    writer.apply_watcher_event(&event);
                    let change = match &event {
                        watcher::Event::Apply(o) => Change::Applied(o),
                        watcher::Event::Delete(o) => Change::Deleted(o),
                        watcher::Event::InitDone => Change::Relisted,
                        // A (re-)list begins: the store is stale until it is done.
                        watcher::Event::Init => {
                            set_listed(false);
                            continue;
                        }
                        // The listed objects come before InitDone.
                        watcher::Event::InitApply(_) => continue,
                    };
                    absences = 0;
                    if reported_absent {
                        tracing::info!("{what}: now served");
                        reported_absent = false;
                    }
                    let relisted = matches!(change, Change::Relisted);
                    notify(change, &subs);
                    if relisted {
                        set_listed(true);
                    }
                }
                Err(e) if is_absent(&e) => {
                    again.absent();
                    if !reported_absent {
                        // Not served: the kind holds nothing. The store says so (emptied, and
                        // ready, so that readers waiting for it go on) and readers look again.
                        writer.apply_watcher_event(&watcher::Event::Init);
                        writer.apply_watcher_event(&watcher::Event::InitDone);
                        notify(Change::Relisted, &subs);
                        tracing::info!("{what}: not served by the API server; looking again when its CRD appears");
                        reported_absent = true;
                    }
                    // Empty and ready, whether first seen absent or again.
                    set_listed(true);
                    again.wait(absences).await;
                    absences = absences.saturating_add(1);
                }
                Err(e) => match relist::failure(&e) {
                    Some(mco_render::controllers::backoff::WatchFailure::Expired) => {
                        tracing::info!("{what}: {e}; listing again");
                    }
                    _ => tracing::warn!("{what}: watch failed ({e}); retrying"),
                },
            }
        }
    });
    Watched {
        shared: Arc::new(Shared {
            store,
            subscribers,
            recheck,
            listed,
            task,
            _registry: registry,
        }),
    }
}

/// Starts a watch of `api` outside any registry (an absent API is polled).
fn watch_alone<K>(
    api: Api<K>,
    config: watcher::Config,
    dyntype: K::DynamicType,
    what: &'static str,
) -> Watched<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash + Send + Sync,
{
    spawn_watch(
        move || watcher(api.clone(), config.clone()),
        dyntype,
        what,
        Recheck::default(),
        None,
        None,
    )
}

/// A watch of its own with one callback: the store, and the task feeding it (stopped when
/// this is dropped). Loops of one process share watches through a [`Registry`] instead.
pub struct Reflector<K: Resource + 'static>
where
    K::DynamicType: Hash + Eq,
{
    watched: Watched<K>,
    _subscription: Subscription,
}

impl<K> Reflector<K>
where
    K: Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash + Send + Sync,
{
    /// The store (cheap to clone; reads see the latest applied events).
    pub fn store(&self) -> &Store<K> {
        self.watched.store()
    }

    /// Whether the watch task has ended (it only ends when aborted or on a panic).
    pub fn is_finished(&self) -> bool {
        self.watched.is_finished()
    }

    /// Waits until the store has listed (any number of tasks may wait at once).
    pub async fn wait_until_ready(&self) -> Result<(), WatchStopped> {
        self.watched.wait_until_ready().await
    }
}

/// Watches `api` into a store of its own, calling `on_change` after each change is in the
/// store (with the store, to read the rest of the kind). `what` names the kind in logs.
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
    on_change: F,
) -> Reflector<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash + Send + Sync,
    F: FnMut(Change<'_, K>, &Store<K>) + Send + 'static,
{
    let watched = watch_alone(api, config, dyntype, what);
    let sub = watched.subscribe(on_change);
    Reflector {
        watched,
        _subscription: sub,
    }
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

/// Watches `api` (objects of `dyntype`) into a store of its own and sends a wake-up into `tx`
/// on the changes `wake` names (a full channel already holds one).
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
    let watched = watch_alone(api, config, dyntype, what);
    let sub = watched.wake(wake, tx);
    Reflector {
        watched,
        _subscription: sub,
    }
}
