//! Kubernetes Events on Nodes and pools for the steps the controllers take, under upstream's
//! reasons (`RenderedConfigGenerated` on a pool, `FailedToDrain` on a node, and
//! `SetDesiredConfig` when a node is targeted), as `events.k8s.io/v1` Events that
//! `kubectl describe` shows. Recording is best effort: a refused Event is logged, never a
//! failed sync.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::Client;

/// The controller's Event recorder.
#[derive(Clone)]
pub struct Events {
    recorder: Recorder,
}

impl Events {
    /// Events reported as `component`.
    pub fn new(client: Client, component: &str) -> Self {
        let reporter = Reporter {
            controller: component.to_string(),
            instance: std::env::var("POD_NAME").ok().filter(|p| !p.is_empty()),
        };
        Events {
            recorder: Recorder::new(client, reporter),
        }
    }

    async fn publish(&self, reference: ObjectReference, warning: bool, reason: &str, note: String) {
        let event = Event {
            type_: if warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: reason.to_string(),
            note: Some(note),
            action: reason.to_string(),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&event, &reference).await {
            tracing::debug!("event {reason} not recorded: {e}");
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

    /// An Event on the MachineConfigPool `name`.
    pub async fn on_pool(&self, name: &str, uid: Option<&str>, reason: &str, note: String) {
        let reference = ObjectReference {
            api_version: Some(format!("{}/{}", crate::crd::GROUP, crate::crd::VERSION)),
            kind: Some("MachineConfigPool".into()),
            name: Some(name.to_string()),
            uid: uid.map(str::to_string),
            ..ObjectReference::default()
        };
        self.publish(reference, false, reason, note).await;
    }
}
