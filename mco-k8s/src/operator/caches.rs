//! The operator's watch caches: what a pass reads comes from watches ([`crate::reflect`]),
//! each listed once when it starts, so that a pass over a cluster that has not changed makes
//! no request at all.
//!
//! - The kinds a pass reads the contents of ([`READ_WHOLE`]: the workloads, ConfigMaps and
//!   Secrets, pools, MachineConfigNodes, Nodes, MachineOSConfigs, the ClusterOperator and the
//!   cluster config objects) are watched whole; the other kinds the operator applies (CRDs,
//!   RBAC, the ControllerConfig...) for their metadata only: whether each object exists, and
//!   its resourceVersion.
//! - Namespaced kinds are watched in the operator's namespace; ConfigMaps also in
//!   `openshift-config` (the Proxy and the Image name ConfigMaps there), and elsewhere a
//!   ConfigMap or Secret by name (the CA bundles, the cluster's pull secret and entitlement);
//!   the ClusterOperator by name; other cluster-scoped kinds whole. A watch starts the first
//!   time a pass asks for what it holds (or ahead, [`Caches::prestart`]).
//! - Applying an object ([`Caches::apply`]) asks the API server only when the cache says it is
//!   missing or differs: a watched-whole object is compared with the desired one as the
//!   apply would ([`update_for`]); an object watched for its metadata is not looked at again
//!   while its resourceVersion is the one at which the last apply found it up to date.
//! - Every change to a watched object wakes the operator's loop, but for the status updates of
//!   Nodes and MachineConfigNodes (the agents' heartbeat of an update) and MachineOSConfigs.

use super::apply::{apply, Applied};
use super::kinds::{read_kind_info, KindInfo};
use super::OperatorError;
use crate::reflect::{fingerprint, Registry, Subscription, Wake, Watched};
use kube::api::DynamicObject;
use kube::core::PartialObjectMeta;
use kube::runtime::watcher;
use kube::{Api, Client};
use mco_render::api::node::DESIRED_CONFIG;
use mco_render::api::value_at::str_at;
use mco_render::controllers::operator::certificates::OPENSHIFT_CONFIG;
use mco_render::controllers::operator::{update_for, NAMESPACE};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::mpsc;

/// How long a pass waits for a watch to list before it fails.
const LIST_WAIT: Duration = Duration::from_secs(60);

/// The kinds whose objects a pass reads: watched whole. The other kinds the operator applies
/// are watched for their metadata only.
pub const READ_WHOLE: &[&str] = &[
    "Deployment",
    "DaemonSet",
    "ConfigMap",
    "Secret",
    "MachineConfigPool",
    "ClusterOperator",
    "Infrastructure",
    "Network",
    "DNS",
    "Proxy",
    "Image",
    "Node",
    "MachineConfigNode",
    "MachineOSConfig",
];

/// What one watch of a kind covers.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// Every object (a cluster-scoped kind).
    All,
    /// The objects of one namespace.
    Namespace(String),
    /// One object: (namespace, name).
    Named(Option<String>, String),
}

/// The watch that holds `name` of `kind` in `namespace`.
pub fn scope_for(kind: &str, namespace: Option<&str>, name: &str) -> Scope {
    match namespace {
        None if kind == "ClusterOperator" => Scope::Named(None, name.into()),
        None => Scope::All,
        Some(ns) if ns == NAMESPACE => Scope::Namespace(ns.into()),
        Some(ns) if kind == "ConfigMap" && ns == OPENSHIFT_CONFIG => Scope::Namespace(ns.into()),
        Some(ns) if kind == "ConfigMap" || kind == "Secret" => {
            Scope::Named(Some(ns.into()), name.into())
        }
        Some(ns) => Scope::Namespace(ns.into()),
    }
}

/// A watch, whole or of metadata.
#[derive(Clone)]
enum Slot {
    Whole(Watched<DynamicObject>),
    Meta(Watched<PartialObjectMeta<DynamicObject>>),
}

/// What the cache says of one object.
enum Cached {
    /// Not there.
    Absent,
    /// There, watched whole (with `apiVersion` and `kind`).
    Whole(Value),
    /// There, watched for its metadata: its resourceVersion.
    Meta(Option<String>),
}

impl Cached {
    fn resource_version(&self) -> Option<String> {
        match self {
            Cached::Absent => None,
            Cached::Whole(v) => v
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .map(str::to_string),
            Cached::Meta(rv) => rv.clone(),
        }
    }
}

/// An object: (kind, namespace, name).
type ObjectKey = (String, Option<String>, String);

/// The ClusterOperator as this operator last wrote it, and the resourceVersion it had before.
struct Written {
    before: Option<String>,
    object: Value,
}

/// The operator's watches, started from a [`Registry`], and what it remembers between passes.
pub struct Caches {
    registry: Registry,
    tx: mpsc::Sender<()>,
    slots: Mutex<BTreeMap<(String, Scope), (Slot, Subscription)>>,
    /// Objects the last apply found up to date, at (resourceVersion, hash of the desired one).
    verified: Mutex<BTreeMap<ObjectKey, (String, u64)>>,
    status: Mutex<Option<Written>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The fields of a Node the operator reads: its labels (its pool), its desired config (its
/// MachineConfigNode), its phase, and its OS (layered pools need CoreOS).
fn node_fingerprint(o: &DynamicObject) -> u64 {
    let annotation = o
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DESIRED_CONFIG));
    fingerprint(&(
        &o.metadata.uid,
        &o.metadata.labels,
        annotation,
        str_at(&o.data, "/status/phase"),
        str_at(&o.data, "/status/nodeInfo/osImage"),
    ))
}

/// The fields of a MachineConfigNode the operator writes: its spec (its generation) and owner.
fn machine_config_node_fingerprint(o: &DynamicObject) -> u64 {
    let owners = serde_json::to_string(&o.metadata.owner_references).unwrap_or_default();
    fingerprint(&(o.metadata.generation, owners))
}

/// The object as JSON, with the `apiVersion` and `kind` a list's items may lack.
fn as_value(o: &DynamicObject, info: &KindInfo) -> Result<Value, OperatorError> {
    let mut v = serde_json::to_value(o).map_err(OperatorError::Encode)?;
    if let Some(m) = v.as_object_mut() {
        m.entry("apiVersion")
            .or_insert_with(|| Value::String(info.resource.api_version.clone()));
        m.entry("kind")
            .or_insert_with(|| Value::String(info.resource.kind.clone()));
    }
    Ok(v)
}

fn in_scope(meta: &kube::api::ObjectMeta, namespace: Option<&str>, name: Option<&str>) -> bool {
    name.is_none_or(|n| meta.name.as_deref() == Some(n))
        && namespace.is_none_or(|ns| meta.namespace.as_deref() == Some(ns))
}

/// The object `name` (in `namespace`) of `w`'s store, once the watch has listed.
async fn listed_one<K>(
    w: &Watched<K>,
    what: &str,
    namespace: Option<&str>,
    name: &str,
) -> Result<Option<std::sync::Arc<K>>, OperatorError>
where
    K: kube::Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + std::hash::Hash + Send + Sync,
{
    listed(w, what).await?;
    Ok(w.store()
        .state()
        .into_iter()
        .find(|o| in_scope(o.meta(), namespace, Some(name))))
}

async fn listed<K>(w: &Watched<K>, what: &str) -> Result<(), OperatorError>
where
    K: kube::Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + std::hash::Hash + Send + Sync,
{
    match tokio::time::timeout(LIST_WAIT, w.wait_until_ready()).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(OperatorError::NotListed(what.to_string())),
    }
}

impl Caches {
    /// Caches on the watches of `registry`; each change that concerns the operator sends a
    /// wake-up into `tx`.
    pub fn new(registry: &Registry, tx: mpsc::Sender<()>) -> Self {
        Caches {
            registry: registry.clone(),
            tx,
            slots: Mutex::new(BTreeMap::new()),
            verified: Mutex::new(BTreeMap::new()),
            status: Mutex::new(None),
        }
    }

    fn info(kind: &str) -> Result<KindInfo, OperatorError> {
        read_kind_info(kind).ok_or_else(|| OperatorError::UnknownKind(kind.to_string()))
    }

    /// The watch of `scope` of `kind`, started now when it is not running.
    fn slot(&self, info: &KindInfo, scope: &Scope) -> Slot {
        let kind = info.resource.kind.clone();
        let key = (kind.clone(), scope.clone());
        let mut slots = lock(&self.slots);
        if let Some((slot, _)) = slots.get(&key) {
            return slot.clone();
        }
        let client = self.registry.client().clone();
        let ar = &info.resource;
        let mut cfg = watcher::Config::default();
        let namespace = match scope {
            Scope::All => None,
            Scope::Namespace(ns) => Some(ns.as_str()),
            Scope::Named(ns, name) => {
                cfg = cfg.fields(&format!("metadata.name={name}"));
                ns.as_deref()
            }
        };
        let what = "the operator's watches";
        let (slot, subscription) = if READ_WHOLE.contains(&kind.as_str()) {
            let api = match namespace {
                Some(ns) => Api::<DynamicObject>::namespaced_with(client, ns, ar),
                None => Api::<DynamicObject>::all_with(client, ar),
            };
            let w = self.registry.watch(api, cfg, ar.clone(), what);
            let tx = self.tx.clone();
            let sub = match kind.as_str() {
                "Node" => w.wake_when(tx, node_fingerprint),
                "MachineConfigNode" => w.wake_when(tx, machine_config_node_fingerprint),
                "MachineOSConfig" => w.wake(Wake::SpecChanges, tx),
                _ => w.wake(Wake::Every, tx),
            };
            (Slot::Whole(w), sub)
        } else {
            type Meta = PartialObjectMeta<DynamicObject>;
            let api = match namespace {
                Some(ns) => Api::<Meta>::namespaced_with(client, ns, ar),
                None => Api::<Meta>::all_with(client, ar),
            };
            let w = self.registry.watch(api, cfg, ar.clone(), what);
            let sub = w.wake(Wake::Every, self.tx.clone());
            (Slot::Meta(w), sub)
        };
        slots.insert(key, (slot.clone(), subscription));
        slot
    }

    /// Starts the watches that hold these objects (kind, namespace, name), not waiting for
    /// them to list; kinds the operator does not know are left to the pass to report.
    pub fn prestart<'a>(
        &self,
        objects: impl IntoIterator<Item = (&'a str, Option<&'a str>, &'a str)>,
    ) {
        for (kind, namespace, name) in objects {
            if let Some(info) = read_kind_info(kind) {
                let ns = namespace.filter(|_| info.namespaced);
                self.slot(&info, &scope_for(kind, ns, name));
            }
        }
    }

    /// The objects of `kind` in `namespace` (all when `None`) named `name` (all when
    /// `None`), from a whole watch of `scope`, once it has listed.
    async fn read(
        &self,
        info: &KindInfo,
        scope: &Scope,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> Result<Vec<Value>, OperatorError> {
        let what = &info.resource.kind;
        match self.slot(info, scope) {
            Slot::Whole(w) => {
                listed(&w, what).await?;
                w.store()
                    .state()
                    .iter()
                    .filter(|o| in_scope(&o.metadata, namespace, name))
                    .map(|o| as_value(o, info))
                    .collect()
            }
            Slot::Meta(_) => Err(OperatorError::UnknownKind(format!(
                "{what} (watched for its metadata only)"
            ))),
        }
    }

    /// The object `name` of `kind` (in `namespace` for a namespaced kind).
    pub async fn get(
        &self,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Value>, OperatorError> {
        let info = Self::info(kind)?;
        let ns = namespace.filter(|_| info.namespaced);
        let scope = scope_for(kind, ns, name);
        Ok(self
            .read(&info, &scope, ns, Some(name))
            .await?
            .into_iter()
            .next())
    }

    /// Every object of `kind` (in `namespace` for a namespaced kind).
    pub async fn list(
        &self,
        kind: &str,
        namespace: Option<&str>,
    ) -> Result<Vec<Value>, OperatorError> {
        let info = Self::info(kind)?;
        let ns = namespace.filter(|_| info.namespaced);
        let scope = match ns {
            Some(ns) => Scope::Namespace(ns.to_string()),
            None => Scope::All,
        };
        self.read(&info, &scope, ns, None).await
    }

    /// What the cache holds of one object.
    async fn cached(
        &self,
        info: &KindInfo,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Cached, OperatorError> {
        let what = &info.resource.kind;
        let scope = scope_for(what, namespace, name);
        Ok(match self.slot(info, &scope) {
            Slot::Whole(w) => match listed_one(&w, what, namespace, name).await? {
                Some(o) => Cached::Whole(as_value(&o, info)?),
                None => Cached::Absent,
            },
            Slot::Meta(w) => match listed_one(&w, what, namespace, name).await? {
                Some(o) => Cached::Meta(o.metadata.resource_version.clone()),
                None => Cached::Absent,
            },
        })
    }

    /// Applies one desired object as [`apply`] does, asking the API server only when the
    /// cache says the object is missing or differs (see the module's doc).
    pub async fn apply(&self, client: &Client, desired: &Value) -> Result<Applied, OperatorError> {
        let kind = str_at(desired, "/kind");
        let info = super::kinds::kind_info(kind)
            .ok_or_else(|| OperatorError::UnknownKind(kind.to_string()))?;
        let name = str_at(desired, "/metadata/name").to_string();
        let namespace = info
            .namespaced
            .then(|| match str_at(desired, "/metadata/namespace") {
                "" => NAMESPACE.to_string(),
                ns => ns.to_string(),
            });
        let key: ObjectKey = (kind.to_string(), namespace.clone(), name.clone());
        let hash = fingerprint(&desired.to_string());
        let cached = self.cached(&info, namespace.as_deref(), &name).await?;
        let rv = cached.resource_version();
        if let Some(rv) = &rv {
            if lock(&self.verified).get(&key) == Some(&(rv.clone(), hash)) {
                return Ok(Applied::Unchanged);
            }
        }
        if let Cached::Whole(live) = &cached {
            let want = super::apply::to_apply(desired, namespace.as_deref());
            if update_for(&want, live).is_none() {
                if let Some(rv) = rv {
                    lock(&self.verified).insert(key, (rv, hash));
                }
                return Ok(Applied::Unchanged);
            }
        }
        let applied = apply(client, desired).await?;
        let mut verified = lock(&self.verified);
        match (applied, rv) {
            (Applied::Unchanged, Some(rv)) => {
                verified.insert(key, (rv, hash));
            }
            _ => {
                verified.remove(&key);
            }
        }
        Ok(applied)
    }

    /// The ClusterOperator to compute the status from: `live` as the cache holds it, or what
    /// this operator wrote last when the cache has not seen that write yet.
    pub fn cluster_operator(&self, live: Option<Value>) -> Option<Value> {
        let mut written = lock(&self.status);
        let rv = live
            .as_ref()
            .and_then(|l| l.pointer("/metadata/resourceVersion"))
            .and_then(Value::as_str)
            .map(str::to_string);
        match written.take() {
            Some(w) if w.before == rv => {
                let object = w.object.clone();
                *written = Some(w);
                Some(object)
            }
            _ => live,
        }
    }

    /// Records a write of the ClusterOperator: `object` as the API server returned it, over
    /// the one the cache held (`before`, `None` when it had none).
    pub fn wrote_cluster_operator(&self, before: Option<&Value>, object: Value) {
        let before = before
            .and_then(|l| l.pointer("/metadata/resourceVersion"))
            .and_then(Value::as_str)
            .map(str::to_string);
        *lock(&self.status) = Some(Written { before, object });
    }
}
