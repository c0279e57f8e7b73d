//! Deletion as a cluster does it: the API server's garbage-collection finalizers and a
//! stand-in for kube-controller-manager's garbage collector.
//!
//! The API server side ([`deletion_finalizers`]) is the registry's: a DELETE's
//! `propagationPolicy` (or `orphanDependents`) puts `foregroundDeletion` or `orphan` on the
//! object, or takes them off (`Background`); without either the object's own finalizers say,
//! else the kind's default (batch/v1 Jobs orphan their pods, for compatibility; everything
//! else is collected in the background).
//!
//! The collector ([`Store::collect_garbage`]) plays the garbage collector on what this
//! server saw deleted: a dependent whose every owner was deleted here goes (a background
//! delete, so its own finalizers hold it); one with some owners left loses the references to
//! the deleted ones; an object deleted in the foreground has its dependents deleted (in the
//! foreground; one with another owner that stays only loses the reference) and keeps
//! `foregroundDeletion` until those with `blockOwnerDeletion` are gone;
//! an orphaning one has the references to it removed from its dependents, then its `orphan`
//! finalizer. Owners it never saw (a made-up uid in a test's ownerReference) are left alone,
//! as a collector that cannot find the owner's kind leaves them. [`Store::set_garbage_collector`]
//! turns it off: a bare API server, as `../shared/real-cluster` runs, where nothing finishes
//! a foreground deletion.

use super::{meta, resource, set_meta, ApiError, Inner, Key, ResourceDef, Store};
use mco_render::api::value_at::strings_at;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

/// `metav1.FinalizerOrphanDependents`.
pub const ORPHAN: &str = "orphan";
/// `metav1.FinalizerDeleteDependents`.
pub const FOREGROUND: &str = "foregroundDeletion";

/// How long the collector lets deletions gather before a round.
const ROUND_DELAY: Duration = Duration::from_millis(20);

/// What the collector knows between rounds.
#[derive(Default)]
pub struct State {
    /// Off: nothing is collected.
    off: bool,
    /// Something may need collecting.
    pending: bool,
    /// The uids of objects deleted here that some object named as its owner.
    gone: BTreeSet<String>,
    /// Every uid an owner reference has named (kept, so a round runs only for deletions
    /// that may leave dependents).
    referenced: BTreeSet<String>,
    /// The uids of objects being deleted with the collector's finalizer: waiting for it.
    waiting: BTreeSet<String>,
}

impl State {
    /// Takes note of a stored change; true when the collector may have work.
    pub fn note(&mut self, type_: &str, obj: &Value) -> bool {
        for r in obj["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(uid) = r["uid"].as_str() {
                if !self.referenced.contains(uid) {
                    self.referenced.insert(uid.to_string());
                }
            }
        }
        let deleted = type_ == "DELETED";
        let uid = meta(obj, "uid").unwrap_or_default();
        let owner_gone = deleted && self.referenced.contains(&uid) && self.gone.insert(uid.clone());
        // A dependent gone may let its owner's foreground deletion finish.
        let owner_waits = deleted
            && obj["metadata"]["ownerReferences"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r["uid"].as_str())
                .any(|u| self.waiting.contains(u));
        let marked = !deleted
            && meta(obj, "deletionTimestamp").is_some()
            && finalizers(obj)
                .iter()
                .any(|f| f == ORPHAN || f == FOREGROUND);
        if marked {
            self.waiting.insert(uid);
        } else if deleted {
            self.waiting.remove(&uid);
        }
        if (owner_gone || owner_waits || marked) && !self.off {
            self.pending = true;
        }
        self.pending && !self.off
    }
}

/// An object's `metadata.finalizers`.
pub fn finalizers(obj: &Value) -> Vec<String> {
    strings_at(obj, "/metadata/finalizers")
}

/// The finalizers a DELETE with `options` leaves on `obj` (the registry's
/// `deletionFinalizersForGarbageCollection`); empty: the object goes at once.
pub fn deletion_finalizers(
    def: &ResourceDef,
    obj: &Value,
    options: Option<&Value>,
) -> Result<Vec<String>, ApiError> {
    let orphan_dependents = options
        .and_then(|o| o.get("orphanDependents"))
        .and_then(Value::as_bool);
    let policy = options
        .and_then(|o| o.get("propagationPolicy"))
        .and_then(Value::as_str);
    if let Some(p) = policy {
        if !matches!(p, "Orphan" | "Background" | "Foreground") {
            return Err(ApiError::new(
                422,
                "Invalid",
                format!(
                    "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: {p:?}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
                ),
            ));
        }
        if orphan_dependents.is_some() {
            return Err(ApiError::new(
                422,
                "Invalid",
                "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"null\": orphanDependents and deletionPropagation cannot be both set",
            ));
        }
    }
    let have = finalizers(obj);
    let orphan = match (orphan_dependents, policy) {
        (Some(o), _) => o,
        (None, Some(p)) => p == "Orphan",
        (None, None) if have.iter().any(|f| f == ORPHAN) => true,
        (None, None) if have.iter().any(|f| f == FOREGROUND) => false,
        // batch/v1 Jobs keep their pods unless asked otherwise (backward compatibility).
        (None, None) => def.plural == "jobs",
    };
    let foreground = match (orphan_dependents, policy) {
        (Some(_), _) => false,
        (None, Some(p)) => p == "Foreground",
        (None, None) => have.iter().any(|f| f == FOREGROUND),
    };
    let mut out: Vec<String> = have
        .iter()
        .filter(|f| *f != ORPHAN && *f != FOREGROUND)
        .cloned()
        .collect();
    if orphan {
        out.push(ORPHAN.to_string());
    }
    if foreground {
        out.push(FOREGROUND.to_string());
    }
    let same: BTreeSet<&String> = out.iter().collect();
    if same == have.iter().collect() {
        return Ok(have);
    }
    Ok(out)
}

/// Where an object is stored.
type Place = (&'static ResourceDef, Key);

/// One owner reference of a dependent.
struct Reference {
    owner_uid: String,
    blocks: bool,
}

/// A dependent: where it is, whether it is being deleted, and its owners.
struct Dependent {
    place: Place,
    deleting: bool,
    owners: Vec<Reference>,
}

/// A step of one round.
enum Step {
    /// Delete the object, with these DeleteOptions.
    Delete(Place, Value),
    /// Drop the owner references to these uids.
    Unown(Place, BTreeSet<String>),
    /// Take this finalizer off.
    Unfinalize(Place, &'static str),
}

impl Store {
    /// Turns the garbage collector on or off (on when the server starts).
    pub fn set_garbage_collector(&self, on: bool) {
        let mut inner = self.lock();
        inner.gc.off = !on;
        inner.gc.pending = on;
        drop(inner);
        self.gc_wake.notify_one();
    }

    /// Runs the garbage collector until the task is dropped.
    pub(super) async fn run_garbage_collector(self: Arc<Self>) {
        loop {
            self.gc_wake.notified().await;
            loop {
                tokio::time::sleep(ROUND_DELAY).await;
                if !self.collect_garbage() {
                    break;
                }
            }
        }
    }

    /// One round of the collector; true when it changed something (another round is due).
    pub fn collect_garbage(&self) -> bool {
        let mut inner = self.lock();
        if inner.gc.off || !inner.gc.pending {
            return false;
        }
        inner.gc.pending = false;
        let steps = plan(&inner);
        let changed = !steps.is_empty();
        for step in steps {
            self.take(&mut inner, step);
        }
        if changed {
            inner.gc.pending = true;
        }
        changed
    }

    fn take(&self, inner: &mut Inner, step: Step) {
        match step {
            Step::Delete((def, (ns, name)), options) => {
                let _ = if def.plural == "pods" {
                    self.delete_pod_locked(inner, &ns, &name, Some(&options))
                } else {
                    self.delete_locked(inner, def, &ns, &name, Some(&options))
                };
            }
            Step::Unown((def, key), uids) => {
                let Some(mut obj) = inner.object(def.plural, &key) else {
                    return;
                };
                let refs: Vec<Value> = obj["metadata"]["ownerReferences"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter(|r| !r["uid"].as_str().is_some_and(|u| uids.contains(u)))
                            .cloned()
                            .collect()
                    })
                    .unwrap_or_default();
                set_meta(
                    &mut obj,
                    "ownerReferences",
                    if refs.is_empty() {
                        Value::Null
                    } else {
                        json!(refs)
                    },
                );
                if let Some(m) = obj["metadata"].as_object_mut() {
                    m.retain(|_, v| !v.is_null());
                }
                self.commit(inner, def, key, obj, "MODIFIED");
            }
            Step::Unfinalize((def, key), finalizer) => {
                let Some(mut obj) = inner.object(def.plural, &key) else {
                    return;
                };
                let left: Vec<String> = finalizers(&obj)
                    .into_iter()
                    .filter(|f| f != finalizer)
                    .collect();
                if left.is_empty() {
                    if let Some(m) = obj["metadata"].as_object_mut() {
                        m.remove("finalizers");
                    }
                    self.commit(inner, def, key, obj, "DELETED");
                } else {
                    set_meta(&mut obj, "finalizers", json!(left));
                    self.commit(inner, def, key, obj, "MODIFIED");
                }
            }
        }
    }
}

/// The round's steps, from the objects as stored.
fn plan(inner: &Inner) -> Vec<Step> {
    // Every object with owners, and every object by uid.
    let mut dependents: Vec<Dependent> = Vec::new();
    let mut by_uid: BTreeMap<String, (Place, Vec<String>, bool)> = BTreeMap::new();
    for (plural, objects) in &inner.objects {
        let Some(def) = resource(plural) else {
            continue;
        };
        for (key, obj) in objects {
            let deleting = meta(obj, "deletionTimestamp").is_some();
            if let Some(uid) = meta(obj, "uid") {
                by_uid.insert(uid, ((def, key.clone()), finalizers(obj), deleting));
            }
            let owners: Vec<Reference> = obj["metadata"]["ownerReferences"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|r| {
                            Some(Reference {
                                owner_uid: r["uid"].as_str()?.to_string(),
                                blocks: r["blockOwnerDeletion"].as_bool() == Some(true),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default();
            if !owners.is_empty() {
                dependents.push(Dependent {
                    place: (def, key.clone()),
                    deleting,
                    owners,
                });
            }
        }
    }
    let mut steps = Vec::new();
    // Dependents of owners deleted here, and of owners deleting in the foreground or
    // orphaning.
    let mut blocked: BTreeSet<String> = BTreeSet::new();
    for d in &dependents {
        let owner = |r: &Reference| by_uid.get(&r.owner_uid);
        let has = |r: &Reference, f: &str| {
            owner(r).is_some_and(|(_, fs, del)| *del && fs.iter().any(|x| x == f))
        };
        // The uids of the owners `keep` picks.
        let uids = |keep: &dyn Fn(&Reference) -> bool| -> BTreeSet<String> {
            d.owners
                .iter()
                .filter(|r| keep(r))
                .map(|r| r.owner_uid.clone())
                .collect()
        };
        let gone =
            uids(&|r| inner.gc.gone.contains(&r.owner_uid) && !by_uid.contains_key(&r.owner_uid));
        let orphaning = uids(&|r| has(r, ORPHAN));
        let waiting = uids(&|r| has(r, FOREGROUND));
        // An owner that stays keeps the dependent: it only loses the other references.
        let solid = d
            .owners
            .iter()
            .any(|r| owner(r).is_some_and(|(_, _, deleting)| !*deleting));
        blocked.extend(uids(&|r| r.blocks && has(r, FOREGROUND)));
        if d.deleting {
            continue;
        }
        if !solid && !waiting.is_empty() {
            steps.push(Step::Delete(
                d.place.clone(),
                json!({"propagationPolicy": "Foreground"}),
            ));
        } else if gone.len() == d.owners.len() {
            steps.push(Step::Delete(
                d.place.clone(),
                json!({"propagationPolicy": "Background"}),
            ));
        } else {
            let mut drop: BTreeSet<String> = gone.union(&orphaning).cloned().collect();
            if solid {
                drop.extend(waiting);
            }
            if !drop.is_empty() {
                steps.push(Step::Unown(d.place.clone(), drop));
            }
        }
    }
    // Owners whose dependents are dealt with lose the collector's finalizer.
    for (uid, (place, fs, deleting)) in &by_uid {
        if !*deleting {
            continue;
        }
        if fs.iter().any(|f| f == FOREGROUND) && !blocked.contains(uid) {
            steps.push(Step::Unfinalize(place.clone(), FOREGROUND));
        }
        if fs.iter().any(|f| f == ORPHAN) {
            let still_owned = dependents
                .iter()
                .any(|d| d.owners.iter().any(|r| &r.owner_uid == uid));
            if !still_owned {
                steps.push(Step::Unfinalize(place.clone(), ORPHAN));
            }
        }
    }
    steps
}
