//! Carrying out drain and uncordon requests: cordon, evict (the API server enforces
//! PodDisruptionBudgets and answers 429 while one blocks), wait until the evicted pods are
//! gone, record the request as applied. The decisions are `mco_render::controllers::drain`'s
//! ([`drain_step`] for where a drain stands, [`DrainRetry`] for when to look again); this
//! module reads pods, sends evictions and writes the node.
//!
//! A drain that is not done is looked at again on its own clock ([`Drainer::next_retry`]),
//! not only on the controller's resync: every [`DrainRetry::first`] while evicted pods
//! terminate, and with a doubling backoff while evictions are refused. Passes that come
//! earlier (any watched change) leave a drain alone until its retry is due.

use super::pool_sync::SyncError;
use k8s_openapi::api::core::v1::{Node as KubeNode, Pod as KubePod};
use kube::api::{EvictParams, ListParams, Patch, PatchParams};
use kube::{Api, Client};
use mco_render::api::node::{DESIRED_DRAIN, DRAIN_FAILURE, LAST_APPLIED_DRAIN};
use mco_render::api::Node;
use mco_render::controllers::drain::{
    drain_action_unless_recorded, drain_failure_annotation, drain_step, DrainAction, DrainRetry,
    DrainStep, Pod, PodRef,
};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// How long one eviction may take. kube-rs retries a 429 (a PodDisruptionBudget refusing)
/// with exponential backoff for minutes; past this the pod counts as refused and the drain's
/// own backoff tries again, so one blocked pod does not stall every pool's sync.
pub const EVICTION_ATTEMPT: Duration = Duration::from_secs(2);

/// Eviction rounds in one attempt: a round evicts what the last listing showed, and pods that
/// show up after it get one more round before the attempt ends.
const ROUNDS: usize = 2;

/// One node's drain in progress.
#[derive(Debug)]
struct Ongoing {
    /// The desiredDrain value being carried out.
    request: String,
    /// When this request was first seen.
    started: Instant,
    /// Pods whose eviction the API server accepted (or which were already gone).
    evicted: BTreeSet<PodRef>,
    /// Attempts in a row that ended blocked.
    refusals: u32,
    /// When the drain is due for its next attempt.
    next: Instant,
    /// Whether this drain cordoned the node (its patch answered): a retry from a Node read
    /// before that write's echo does not cordon again.
    cordoned: bool,
}

impl Ongoing {
    fn new(request: &str, now: Instant) -> Self {
        Ongoing {
            request: request.to_string(),
            started: now,
            evicted: BTreeSet::new(),
            refusals: 0,
            next: now,
            cordoned: false,
        }
    }
}

/// The API calls a drain makes.
struct DrainApi {
    client: Client,
    nodes: Api<KubeNode>,
}

/// What the API server answered to one eviction.
enum Evicted {
    /// Accepted: the pod is terminating (or already deleted).
    Accepted,
    /// Refused, or no answer within [`EVICTION_ATTEMPT`].
    Refused,
}

impl DrainApi {
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

    async fn set_failure(&self, node: &str, report: Option<&str>) -> Result<(), SyncError> {
        let patch = json!({"metadata": {"annotations": {DRAIN_FAILURE: report}}});
        self.nodes
            .patch(node, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        Ok(())
    }

    /// The pods bound to `node`.
    async fn pods_on(&self, node: &str) -> Result<Vec<Pod>, SyncError> {
        let pods: Api<KubePod> = Api::all(self.client.clone());
        let lp = ListParams::default().fields(&format!("spec.nodeName={node}"));
        let mut out = Vec::new();
        for p in pods.list(&lp).await? {
            match serde_json::to_value(&p).and_then(serde_json::from_value) {
                Ok(pod) => out.push(pod),
                Err(e) => tracing::warn!(node, "pod {:?} does not decode: {e}", p.metadata.name),
            }
        }
        Ok(out)
    }

    /// One attempt at a drain: evict what should go (up to [`ROUNDS`] rounds), and say where
    /// the drain stands after it.
    async fn attempt(&self, node: &str, d: &mut Ongoing) -> Result<DrainStep, SyncError> {
        let mut pods = self.pods_on(node).await?;
        let mut refused = BTreeSet::new();
        for _ in 0..ROUNDS {
            let step = drain_step(&pods, &d.evicted, &refused);
            let DrainStep::Evict(targets) = &step else {
                return Ok(step);
            };
            let mut accepted = false;
            for (r, outcome) in self.evict_all(targets).await {
                match outcome {
                    Evicted::Accepted => {
                        tracing::info!(node, "evicted pod {r}");
                        d.evicted.insert(r);
                        accepted = true;
                    }
                    Evicted::Refused => {
                        refused.insert(r);
                    }
                }
            }
            if accepted {
                // Pods deleted at once (no grace period) are gone now; the others terminate.
                pods = self.pods_on(node).await?;
            }
        }
        Ok(drain_step(&pods, &d.evicted, &refused))
    }

    /// Evicts `targets`, all at once.
    async fn evict_all(&self, targets: &[PodRef]) -> Vec<(PodRef, Evicted)> {
        let attempts = targets.iter().map(|r| async move {
            let api: Api<KubePod> = Api::namespaced(self.client.clone(), &r.namespace);
            let res = tokio::time::timeout(
                EVICTION_ATTEMPT,
                api.evict(&r.name, &EvictParams::default()),
            )
            .await;
            let outcome = match res {
                Ok(Ok(_)) => Evicted::Accepted,
                // Gone already: nothing to wait for.
                Ok(Err(kube::Error::Api(s))) if s.code == 404 => Evicted::Accepted,
                Ok(Err(kube::Error::Api(s))) if s.code == 429 => Evicted::Refused,
                Err(_elapsed) => Evicted::Refused,
                Ok(Err(e)) => {
                    tracing::warn!("evicting {r}: {e}");
                    Evicted::Refused
                }
            };
            (r.clone(), outcome)
        });
        futures::future::join_all(attempts).await
    }
}

/// Drains nodes on request, remembering each node's drain in progress: when its current
/// request started (a new request starts its own clock), what it evicted, and when to look
/// at it again; and the request it last recorded as applied on each node, until the watched
/// Node shows it, so that a pass on a Node read before that write does not carry the request
/// out again.
pub struct Drainer {
    api: DrainApi,
    ongoing: BTreeMap<String, Ongoing>,
    recorded: BTreeMap<String, String>,
    timeout: Duration,
    retry: DrainRetry,
    events: crate::events::Events,
    metrics: Option<std::sync::Arc<crate::metrics::ControllerMetrics>>,
}

impl Drainer {
    /// Keeps `mcc_drain_err` in `metrics` current.
    pub fn with_metrics(
        mut self,
        metrics: std::sync::Arc<crate::metrics::ControllerMetrics>,
    ) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// A drainer reporting a drain failed after `timeout`, looking again at drains not done
    /// as `retry` says.
    pub fn new(client: Client, timeout: Duration, retry: DrainRetry) -> Self {
        Drainer {
            events: crate::events::Events::new(client.clone(), "machine-config-controller"),
            metrics: None,
            api: DrainApi {
                nodes: Api::all(client.clone()),
                client,
            },
            ongoing: BTreeMap::new(),
            recorded: BTreeMap::new(),
            timeout,
            retry,
        }
    }

    /// How long until a drain in progress is due for its next attempt (zero when one is
    /// overdue); `None` when no drain is in progress.
    pub fn next_retry(&self) -> Option<Duration> {
        let now = Instant::now();
        self.ongoing
            .values()
            .map(|d| d.next.saturating_duration_since(now))
            .min()
    }

    /// Works a node's drain request: when its retry is due, cordon, attempt, then record it
    /// applied, or report it and schedule the next attempt.
    async fn drain(&mut self, n: &Node, request: String) -> Result<(), SyncError> {
        let now = Instant::now();
        let d = self
            .ongoing
            .entry(n.name().to_string())
            .or_insert_with(|| Ongoing::new(&request, now));
        if d.request != request {
            *d = Ongoing::new(&request, now);
        }
        if now < d.next {
            return Ok(());
        }
        // Should anything below fail, the next pass is not before the first retry.
        d.next = now + self.retry.first;
        if !n.spec.unschedulable && !d.cordoned {
            self.api.set_unschedulable(n.name(), true).await?;
            d.cordoned = true;
        }
        let step = self.api.attempt(n.name(), d).await?;
        if step == DrainStep::Done {
            self.ongoing.remove(n.name());
            // The metric first: whoever sees the drain applied sees it no longer failing.
            if let Some(m) = &self.metrics {
                m.set_drain_failed(n.name(), false);
            }
            self.api.mark_applied(n.name(), &request).await?;
            tracing::info!(node = n.name(), "drained ({request})");
            self.recorded.insert(n.name().to_string(), request);
            return Ok(());
        }
        d.refusals = match step {
            DrainStep::Blocked { .. } => d.refusals.saturating_add(1),
            _ => 0,
        };
        let elapsed = d.started.elapsed();
        let timed_out = elapsed >= self.timeout;
        let mut delay = self
            .retry
            .delay(&step, d.refusals)
            .unwrap_or(self.retry.first);
        if !timed_out {
            // Look again when the timeout passes, so the report is not late.
            delay = delay.min(self.timeout - elapsed);
        }
        d.next = Instant::now() + delay;
        let report = drain_failure_annotation(n, &step, timed_out);
        if report.as_deref() != n.annotation(DRAIN_FAILURE) {
            self.api.set_failure(n.name(), report.as_deref()).await?;
            if let Some(m) = &self.metrics {
                m.set_drain_failed(n.name(), report.is_some());
            }
            if let Some(r) = &report {
                tracing::error!(node = n.name(), "{r}");
                self.events
                    .on_node(n.name(), true, "FailedToDrain", r.clone())
                    .await;
            }
        }
        Ok(())
    }

    /// Forgets the drains of nodes that no longer exist.
    pub fn retain_nodes(&mut self, exists: impl Fn(&str) -> bool) {
        self.ongoing.retain(|name, _| exists(name));
        self.recorded.retain(|name, _| exists(name));
    }

    /// Handles the pending request of each of `nodes` (drains whose retry is not due yet
    /// wait).
    pub async fn sync(&mut self, nodes: &[&Node]) -> Result<(), SyncError> {
        for n in nodes.iter().copied() {
            let name = n.name();
            // The Node shows what was recorded, or asks for something else (a Node newer than
            // the write): the record has done its work.
            if self.recorded.get(name).is_some_and(|r| {
                n.annotation(LAST_APPLIED_DRAIN) == Some(r.as_str())
                    || n.annotation(DESIRED_DRAIN) != Some(r.as_str())
            }) {
                self.recorded.remove(name);
            }
            match drain_action_unless_recorded(n, self.recorded.get(name).map(String::as_str)) {
                DrainAction::None => {
                    self.ongoing.remove(name);
                }
                DrainAction::Uncordon { request } => {
                    self.ongoing.remove(name);
                    self.api.set_unschedulable(name, false).await?;
                    self.api.mark_applied(name, &request).await?;
                    self.recorded.insert(name.to_string(), request);
                }
                DrainAction::Drain { request } => self.drain(n, request).await?,
            }
        }
        Ok(())
    }
}
