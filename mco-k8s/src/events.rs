//! Kubernetes Events on Nodes and pools for the steps the controllers take, under upstream's
//! reasons (`RenderedConfigGenerated` on a pool, `FailedToDrain` on a node, and
//! `SetDesiredConfig` on a pool when its nodes are targeted), as `events.k8s.io/v1` Events that
//! `kubectl describe` shows. Recording never fails a sync: an Event the API server could not
//! take (away, throttling, failing) is tried again in the background, as client-go's recorder
//! does (up to 12 tries in all, 1 s apart at first, then up to 10 s), and one it refuses
//! (invalid, forbidden) is logged.
//!
//! The same Event recorded again (same object, type, reason and note) within a few minutes
//! counts up the first one's `series` instead of adding another. The note is part of that
//! identity, as it is for upstream's recorder (client-go's `record` correlator keys on the
//! message): `Targeted node worker-0 ...` and `Targeted node worker-1 ...` on one pool are two
//! Events, not one counted twice. (kube-runtime's `Recorder` leaves the note out of the key.)

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::Client;
use mco_render::controllers::backoff::{may_succeed_later, EVENT_TRIES};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a recorded Event is counted up rather than recorded anew.
const SERIES_WINDOW: Duration = Duration::from_secs(6 * 60);

/// Whether a failed write may succeed later (see [`may_succeed_later`]).
fn transient(e: &kube::Error) -> bool {
    may_succeed_later(match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    })
}

/// The wait before try `n` (2 and on): 1 s, 2 s, 4 s, 8 s, then 10 s.
fn retry_delay(n: u32) -> Duration {
    Duration::from_secs((1u64 << n.saturating_sub(2).min(4)).min(10))
}

/// What makes two Events the same: the object, type, reason and note.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    uid: Option<String>,
    warning: bool,
    reason: String,
    note: String,
}

/// An Event recorded recently: its namespace and name, how often it happened, when last.
#[derive(Debug, Clone)]
struct Recorded {
    namespace: String,
    name: String,
    count: i32,
    last: Instant,
}

/// The controller's Event recorder.
#[derive(Clone)]
pub struct Events {
    client: Client,
    controller: String,
    instance: String,
    recent: Arc<Mutex<HashMap<Key, Recorded>>>,
}

impl Events {
    /// Events reported as `component`.
    pub fn new(client: Client, component: &str) -> Self {
        let instance = std::env::var("POD_NAME")
            .ok()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| component.to_string());
        Events {
            client,
            controller: component.to_string(),
            instance,
            recent: Arc::default(),
        }
    }

    /// The Event recorded anew: named after the object and the time, in the object's
    /// namespace (`default` for cluster-scoped objects).
    fn fresh(
        &self,
        reference: ObjectReference,
        warning: bool,
        reason: &str,
        note: String,
    ) -> Event {
        let now = Timestamp::now();
        Event {
            metadata: ObjectMeta {
                name: Some(format!(
                    "{}.{:x}",
                    reference.name.as_deref().unwrap_or(&self.controller),
                    now.as_nanosecond()
                )),
                namespace: Some(
                    reference
                        .namespace
                        .clone()
                        .unwrap_or_else(|| "default".to_string()),
                ),
                ..ObjectMeta::default()
            },
            action: Some(reason.to_string()),
            reason: Some(reason.to_string()),
            note: Some(note),
            type_: Some(if warning { "Warning" } else { "Normal" }.to_string()),
            event_time: Some(MicroTime(now)),
            regarding: Some(reference),
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            ..Event::default()
        }
    }

    async fn publish(&self, reference: ObjectReference, warning: bool, reason: &str, note: String) {
        let key = Key {
            kind: reference.kind.clone(),
            namespace: reference.namespace.clone(),
            name: reference.name.clone(),
            uid: reference.uid.clone(),
            warning,
            reason: reason.to_string(),
            note: note.clone(),
        };
        let again = self.recent.lock().ok().and_then(|mut recent| {
            recent.retain(|_, r| r.last.elapsed() < SERIES_WINDOW);
            let r = recent.get_mut(&key)?;
            r.count = r.count.saturating_add(1);
            r.last = Instant::now();
            Some(r.clone())
        });
        let result = match again {
            Some(r) => {
                let events: Api<Event> = Api::namespaced(self.client.clone(), &r.namespace);
                let patch = serde_json::json!({"series": EventSeries {
                    count: r.count,
                    last_observed_time: MicroTime(Timestamp::now()),
                }});
                events
                    .patch(&r.name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map(|_| ())
            }
            None => {
                let event = self.fresh(reference, warning, reason, note);
                let namespace = event.metadata.namespace.clone().unwrap_or_default();
                let name = event.metadata.name.clone().unwrap_or_default();
                let events: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
                let created = events.create(&PostParams::default(), &event).await;
                match created {
                    Ok(_) => self.remember(key, namespace, name),
                    Err(e) if transient(&e) => {
                        tracing::debug!("event {reason} not recorded yet: {e}; trying again");
                        let this = self.clone();
                        tokio::spawn(async move {
                            this.retry(events, event, key, namespace, name).await
                        });
                    }
                    Err(e) => tracing::debug!("event {reason} not recorded: {e}"),
                }
                return;
            }
        };
        if let Err(e) = result {
            tracing::debug!("event {reason} not recorded: {e}");
        }
    }

    fn remember(&self, key: Key, namespace: String, name: String) {
        if let Ok(mut recent) = self.recent.lock() {
            recent.insert(
                key,
                Recorded {
                    namespace,
                    name,
                    count: 1,
                    last: Instant::now(),
                },
            );
        }
    }

    /// Tries a new Event again until it is stored (or already was: a create whose answer was
    /// lost), refused for good, or out of tries.
    async fn retry(
        &self,
        events: Api<Event>,
        event: Event,
        key: Key,
        namespace: String,
        name: String,
    ) {
        for n in 2..=EVENT_TRIES {
            tokio::time::sleep(retry_delay(n)).await;
            match events.create(&PostParams::default(), &event).await {
                Ok(_) => return self.remember(key, namespace, name),
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    return self.remember(key, namespace, name)
                }
                Err(e) if transient(&e) && n < EVENT_TRIES => continue,
                Err(e) => {
                    tracing::debug!("event {name} not recorded after {n} tries: {e}");
                    return;
                }
            }
        }
    }

    /// An Event on the Node `name`.
    pub async fn on_node(&self, name: &str, warning: bool, reason: &str, note: String) {
        let reference = ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some(name.to_string()),
            ..ObjectReference::default()
        };
        self.publish(reference, warning, reason, note).await;
    }

    /// An Event on the cluster-scoped MCO object `kind`/`name` (a MachineOSConfig, a
    /// MachineOSBuild), a Warning when `warning` is set.
    pub async fn on_mco_object(
        &self,
        kind: &str,
        name: &str,
        uid: Option<&str>,
        warning: bool,
        reason: &str,
        note: String,
    ) {
        let reference = ObjectReference {
            api_version: Some(format!("{}/{}", crate::crd::GROUP, crate::crd::VERSION)),
            kind: Some(kind.to_string()),
            name: Some(name.to_string()),
            uid: uid.map(str::to_string),
            ..ObjectReference::default()
        };
        self.publish(reference, warning, reason, note).await;
    }

    /// An Event on the MachineConfigPool `name`.
    pub async fn on_pool(&self, name: &str, uid: Option<&str>, reason: &str, note: String) {
        self.on_pool_typed(name, uid, false, reason, note).await;
    }

    /// An Event on the MachineConfigPool `name`, a Warning when `warning` is set.
    pub async fn on_pool_typed(
        &self,
        name: &str,
        uid: Option<&str>,
        warning: bool,
        reason: &str,
        note: String,
    ) {
        let reference = ObjectReference {
            api_version: Some(format!("{}/{}", crate::crd::GROUP, crate::crd::VERSION)),
            kind: Some("MachineConfigPool".into()),
            name: Some(name.to_string()),
            uid: uid.map(str::to_string),
            ..ObjectReference::default()
        };
        self.publish(reference, warning, reason, note).await;
    }
}

#[cfg(test)]
mod retry_tests {
    use super::*;

    #[test]
    fn only_what_may_pass_later_is_tried_again_and_the_waits_grow_to_ten_seconds() {
        let api = |code: u16| {
            kube::Error::Api(Box::new(kube::core::Status {
                code,
                ..Default::default()
            }))
        };
        assert!(transient(&api(429)));
        assert!(transient(&api(503)));
        assert!(transient(&api(500)));
        assert!(!transient(&api(422)));
        assert!(!transient(&api(403)));
        let waits: Vec<u64> = (2..=EVENT_TRIES)
            .map(|n| retry_delay(n).as_secs())
            .collect();
        assert_eq!(waits, [1, 2, 4, 8, 10, 10, 10, 10, 10, 10, 10]);
    }
}
