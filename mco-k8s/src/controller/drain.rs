//! Carrying out drain and uncordon requests: cordon, evict (the API server enforces
//! PodDisruptionBudgets and answers 429 while one blocks), record the request as applied.

use super::cluster::SyncError;
use k8s_openapi::api::core::v1::{Node as KubeNode, Pod as KubePod};
use kube::api::{EvictParams, ListParams, Patch, PatchParams};
use kube::{Api, Client};
use mco_render::api::node::{DRAIN_FAILURE, LAST_APPLIED_DRAIN};
use mco_render::api::Node;
use mco_render::controllers::drain::{
    drain_action, drain_failure_annotation, should_evict, DrainAction, Pod,
};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How long one eviction may take. kube-rs retries a 429 (a PodDisruptionBudget refusing)
/// with exponential backoff for minutes; past this the pod counts as blocking and the next
/// pass tries again, so one blocked pod does not stall every pool's sync.
pub const EVICTION_ATTEMPT: Duration = Duration::from_secs(2);

/// Drains nodes on request, remembering when each node's current drain request started (a
/// new request starts its own clock).
pub struct Drainer {
    client: Client,
    nodes: Api<KubeNode>,
    started: BTreeMap<String, (String, Instant)>,
    timeout: Duration,
}

impl Drainer {
    /// A drainer giving up (and reporting) after `timeout`.
    pub fn new(client: Client, timeout: Duration) -> Self {
        Drainer {
            nodes: Api::all(client.clone()),
            client,
            started: BTreeMap::new(),
            timeout,
        }
    }

    async fn set_unschedulable(&self, node: &str, on: bool) -> Result<(), SyncError> {
        let patch = json!({"spec": {"unschedulable": on}});
        self.nodes
            .patch(node, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        Ok(())
    }

    /// Records `request` as applied and clears any drain failure report.
    async fn mark_applied(&self, node: &str, request: &str) -> Result<(), SyncError> {
        let patch = json!({"metadata": {"annotations": {
            LAST_APPLIED_DRAIN: request,
            DRAIN_FAILURE: null,
        }}});
        self.nodes
            .patch(node, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        Ok(())
    }

    /// Evicts what should go, all at once; returns the pods still blocking (namespace, name).
    async fn evict_all(&self, node: &str) -> Result<Vec<(String, String)>, SyncError> {
        let pods: Api<KubePod> = Api::all(self.client.clone());
        let lp = ListParams::default().fields(&format!("spec.nodeName={node}"));
        let mut targets = Vec::new();
        for p in pods.list(&lp).await? {
            let pod: Pod = match serde_json::to_value(&p).and_then(serde_json::from_value) {
                Ok(p) => p,
                Err(_) => continue,
            };
            if should_evict(&pod) {
                targets.push((pod.metadata.namespace, pod.metadata.name));
            }
        }
        let attempts = targets.into_iter().map(|(ns, name)| async move {
            let api: Api<KubePod> = Api::namespaced(self.client.clone(), &ns);
            let res =
                tokio::time::timeout(EVICTION_ATTEMPT, api.evict(&name, &EvictParams::default()))
                    .await;
            (ns, name, res)
        });
        let mut blocking = Vec::new();
        for (ns, name, res) in futures::future::join_all(attempts).await {
            match res {
                Ok(Ok(_)) => {}
                Ok(Err(kube::Error::Api(s))) if s.code == 404 => {}
                Ok(Err(kube::Error::Api(s))) if s.code == 429 => blocking.push((ns, name)),
                Err(_elapsed) => blocking.push((ns, name)),
                Ok(Err(e)) => return Err(e.into()),
            }
        }
        Ok(blocking)
    }

    /// Handles every node's pending request.
    pub async fn sync(&mut self, nodes: &[Node]) -> Result<(), SyncError> {
        for n in nodes {
            match drain_action(n) {
                DrainAction::None => {
                    self.started.remove(n.name());
                }
                DrainAction::Uncordon { request } => {
                    self.set_unschedulable(n.name(), false).await?;
                    self.mark_applied(n.name(), &request).await?;
                    self.started.remove(n.name());
                }
                DrainAction::Drain { request } => {
                    if !n.spec.unschedulable {
                        self.set_unschedulable(n.name(), true).await?;
                    }
                    let now = Instant::now();
                    let entry = self
                        .started
                        .entry(n.name().to_string())
                        .or_insert_with(|| (request.clone(), now));
                    if entry.0 != request {
                        *entry = (request.clone(), now);
                    }
                    let started = entry.1;
                    let blocking = self.evict_all(n.name()).await?;
                    if blocking.is_empty() {
                        self.mark_applied(n.name(), &request).await?;
                        self.started.remove(n.name());
                        continue;
                    }
                    let timed_out = started.elapsed() > self.timeout;
                    let report = drain_failure_annotation(n, &blocking, timed_out);
                    if report.as_deref() != n.annotation(DRAIN_FAILURE) {
                        if let Some(r) = &report {
                            tracing::error!(node = n.name(), "{r}");
                        }
                        let patch = json!({"metadata": {"annotations": {DRAIN_FAILURE: report}}});
                        self.nodes
                            .patch(n.name(), &PatchParams::default(), &Patch::Merge(&patch))
                            .await?;
                    }
                }
            }
        }
        Ok(())
    }
}
