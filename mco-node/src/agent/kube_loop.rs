//! The agent's kube-rs side: watch the node, fetch MachineConfigs, patch annotations, and carry
//! out the steps [`decide`] returns. Nothing here decides anything.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node as KubeNode;
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
use kube::runtime::watcher;
use kube::{Api, Client};
use mco_render::api::node::{DRAIN_FAILURE, FORCE};
use mco_render::api::MachineConfig;
use mco_render::api::Node;
use mco_render::plan::MachineConfiguration;

use serde_json::json;

use super::watches::{follow, is_absent_api, relisting, until_served, Crd, Seen, WatchOptions};
use super::{
    after_apply, decide, drain_timeout_reason, uncordon_timeout_reason, Step, DRAIN, UNCORDON,
};
use crate::apply::{run_update, ApplyOptions};
use crate::desired_config::{rendered_input, DesiredConfig, LoadError};
use crate::drift::FORCE_FILE;
use crate::host::Host;
use crate::root::HostRoot;
use crate::state::read_current;

/// The MachineConfig resource (cluster-scoped, `machineconfiguration.openshift.io/v1`).
pub fn machine_config_resource() -> ApiResource {
    ApiResource {
        group: "machineconfiguration.openshift.io".into(),
        version: "v1".into(),
        api_version: "machineconfiguration.openshift.io/v1".into(),
        kind: "MachineConfig".into(),
        plural: "machineconfigs".into(),
    }
}

/// The MachineConfigNode resource (cluster-scoped, one per Node, named after it).
pub fn machine_config_node_resource() -> ApiResource {
    ApiResource {
        group: "machineconfiguration.openshift.io".into(),
        version: "v1".into(),
        api_version: "machineconfiguration.openshift.io/v1".into(),
        kind: "MachineConfigNode".into(),
        plural: "machineconfignodes".into(),
    }
}

/// The cluster's `MachineConfiguration` resource (`operator.openshift.io/v1`); the one named
/// `cluster` holds the node disruption policies.
pub fn machine_configuration_resource() -> ApiResource {
    ApiResource {
        group: "operator.openshift.io".into(),
        version: "v1".into(),
        api_version: "operator.openshift.io/v1".into(),
        kind: "MachineConfiguration".into(),
        plural: "machineconfigurations".into(),
    }
}

/// A client from `kubeconfig` (else KUBECONFIG, ~/.kube/config or the in-cluster service
/// account) whose User-Agent names the agent and its node, so the API server's audit log and
/// request metrics attribute each agent's traffic.
pub async fn connect(kubeconfig: Option<&std::path::Path>, node: &str) -> Result<Client, String> {
    let mut config = match kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| format!("kubeconfig {}: {e}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|e| format!("kubeconfig {}: {e}", path.display()))?
        }
        None => kube::Config::infer().await.map_err(|e| e.to_string())?,
    };
    let agent = format!(
        "machine-config-daemon/{} ({node})",
        env!("CARGO_PKG_VERSION")
    );
    let value = http::HeaderValue::from_str(&agent).map_err(|e| format!("user agent: {e}"))?;
    config.headers.push((http::header::USER_AGENT, value));
    client_from(config).map_err(|e| e.to_string())
}

/// A client for `config` that retries a request answered `429`, `503` or `504` as
/// [`ClientRetry::COMPONENTS`] says (a `Retry-After` honoured), not as kube-client's default
/// (15 tries over minutes, the update held all that time).
///
/// [`ClientRetry::COMPONENTS`]: mco_render::controllers::backoff::ClientRetry::COMPONENTS
pub fn client_from(mut config: kube::Config) -> Result<Client, kube::Error> {
    use mco_render::controllers::backoff::ClientRetry;
    config.default_retry = false;
    let r = ClientRetry::COMPONENTS;
    let policy =
        kube::client::retry::RetryPolicy::new(r.backoff.initial, r.backoff.max, r.retries, true)
            .map_err(|e| kube::Error::Service(e.into()))?;
    // (A buffer first: the retry layer clones the service it wraps, as kube-client's own.)
    Ok(kube::client::ClientBuilder::try_from(config)?
        .with_layer(&tower::buffer::BufferLayer::new(1024))
        .with_layer(&tower::retry::RetryLayer::new(policy))
        .build())
}

/// A sync or the watch failed.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The API server refused or failed a request.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// An object did not decode into this project's model.
    #[error("decoding {what}: {message}")]
    Decode {
        /// The object.
        what: String,
        /// Why.
        message: String,
    },
    /// The config on disk could not be read.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A file under the host root could not be written.
    #[error(transparent)]
    Root(#[from] crate::root::RootError),
    /// The API server does not serve the resource (its CRD is not installed).
    #[error("the API server does not serve {0}")]
    NotServed(String),
}

/// How the agent runs.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// The node this agent manages.
    pub node_name: String,
    /// How long the controller may take to drain before the node is reported Degraded
    /// (upstream: 1 hour).
    pub drain_timeout: Duration,
    /// How long the controller may take to uncordon (upstream: 10 minutes).
    pub uncordon_timeout: Duration,
    /// Wait this long before retrying a failed apply.
    pub retry_after: Duration,
    /// Sync at least this often, events or not (on the node as last seen: an idle sync makes
    /// no request).
    pub resync: Duration,
    /// How the agent's watches run: their WATCH timeout, their retries, how an absent API is
    /// waited for (shared by the certificate writer and the pinned image manager).
    pub watch: WatchOptions,
    /// Keep running after asking the host to reboot (for hosts that only print commands).
    pub continue_after_reboot: bool,
    /// The metrics the agent keeps current.
    pub metrics: std::sync::Arc<super::metrics::AgentMetrics>,
}

impl AgentOptions {
    /// Upstream's timeouts for `node_name`.
    pub fn new(node_name: &str) -> Self {
        AgentOptions {
            node_name: node_name.into(),
            drain_timeout: Duration::from_secs(3600),
            uncordon_timeout: Duration::from_secs(600),
            retry_after: Duration::from_secs(30),
            resync: Duration::from_secs(60),
            watch: WatchOptions::for_node(node_name),
            continue_after_reboot: false,
            metrics: super::metrics::AgentMetrics::new(),
        }
    }
}

/// Where one sync left the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Synced {
    /// Nothing to do.
    Idle(String),
    /// Waiting for the controller to apply a drain or uncordon request.
    Waiting(String),
    /// The apply failed; it is retried after [`AgentOptions::retry_after`].
    Retrying,
    /// The host was asked to reboot.
    Rebooting,
}

/// The longest run of steps one sync takes (every step changes the node or the disk; this
/// only guards against a loop).
const MAX_STEPS: usize = 32;

/// The node agent in cluster mode.
pub struct Agent<H: Host> {
    nodes: Api<KubeNode>,
    mcs: Api<DynamicObject>,
    root: HostRoot,
    host: H,
    opts: AgentOptions,
    machine_configurations: Api<DynamicObject>,
    mcns: Api<DynamicObject>,
    node_uid: Option<String>,
    policies: Option<MachineConfiguration>,
    cache: BTreeMap<String, DesiredConfig>,
    waiting: Option<(String, Instant, bool)>,
    retry: Option<(String, Instant)>,
    /// The node as our last write left it (the API server's answer): watch events before its
    /// echo show the node before that write, and are not synced on; until that echo arrives,
    /// a resync works on this node, not on the one last seen.
    written: Option<KubeNode>,
    /// Records the Events of the steps on the Node.
    recorder: kube::runtime::events::Recorder,
    /// The config on disk at the last sync (what the drift monitor watches).
    on_disk: Option<DesiredConfig>,
    /// The config whose booted OS image was checked since the agent started.
    os_checked: Option<String>,
    /// The MachineConfigNode was written since the agent started.
    mcn_started: bool,
    /// The start-up MachineConfigNode write failed (not for want of the API): the failures
    /// in a row, and when to try again.
    mcn_retry: Option<(u32, Instant)>,
    /// The server does not serve MachineConfigNodes: nothing is written until it does.
    mcn_absent: bool,
    /// The absences of the MachineConfigNode API in a row.
    mcn_absences: u32,
    /// Events and MachineConfigNode phases a failed request left unsent.
    unsent: super::unsent::Unsent,
    /// Woken when the MachineConfigNode API may be served again.
    mcn_served: std::sync::Arc<tokio::sync::Notify>,
    /// The client (for the watches of CRDs).
    client: Client,
    /// Where the watched Node is handed on to the agent's other loops ([`Agent::share_node`]).
    node_feed: Option<tokio::sync::watch::Sender<Option<NodeObjects>>>,
}

/// The Node as the agent's watch holds it, by name (empty: deleted), for the pinned image
/// manager; `None` until listed and while the watch lists again.
pub type NodeObjects = BTreeMap<String, DynamicObject>;

/// Converts a Kubernetes object to this project's model through JSON.
fn convert<T: serde::de::DeserializeOwned, S: serde::Serialize>(
    what: &str,
    obj: &S,
) -> Result<T, AgentError> {
    serde_json::to_value(obj)
        .and_then(serde_json::from_value)
        .map_err(|e| AgentError::Decode {
            what: what.into(),
            message: e.to_string(),
        })
}

/// A fetched MachineConfig, ready to apply.
pub fn desired_from(obj: &DynamicObject) -> Result<DesiredConfig, AgentError> {
    let name = obj.metadata.name.clone().unwrap_or_default();
    let what = format!("MachineConfig {name}");
    let machine_config: MachineConfig = convert(&what, obj)?;
    let input =
        rendered_input(&machine_config).map_err(|message| AgentError::Decode { what, message })?;
    Ok(DesiredConfig {
        machine_config,
        input,
    })
}

impl<H: Host> Agent<H> {
    /// An agent applying to `root` through `host`.
    pub fn new(client: Client, root: HostRoot, host: H, opts: AgentOptions) -> Self {
        Agent {
            nodes: Api::all(client.clone()),
            mcs: Api::all_with(client.clone(), &machine_config_resource()),
            machine_configurations: Api::all_with(
                client.clone(),
                &machine_configuration_resource(),
            ),
            mcns: Api::all_with(client.clone(), &machine_config_node_resource()),
            client: client.clone(),
            node_uid: None,
            recorder: kube::runtime::events::Recorder::new(
                client,
                kube::runtime::events::Reporter {
                    controller: "machine-config-daemon".into(),
                    instance: Some(opts.node_name.clone()),
                },
            ),
            policies: None,
            root,
            host,
            opts,
            cache: BTreeMap::new(),
            waiting: None,
            retry: None,
            written: None,
            on_disk: None,
            os_checked: None,
            mcn_started: false,
            mcn_retry: None,
            mcn_absent: false,
            mcn_absences: 0,
            unsent: Default::default(),
            mcn_served: std::sync::Arc::default(),
            node_feed: None,
        }
    }

    /// The Node as this agent's watch sees it, for the agent's other loops, so that one
    /// process watches its Node once.
    pub fn share_node(&mut self) -> tokio::sync::watch::Receiver<Option<NodeObjects>> {
        let (tx, rx) = tokio::sync::watch::channel(None);
        self.node_feed = Some(tx);
        rx
    }

    /// Hands the Node on (`None`: being listed again) when its resourceVersion changed.
    fn feed(&self, node: Option<Option<&KubeNode>>) {
        let Some(tx) = &self.node_feed else { return };
        let objects: Option<NodeObjects> = node.map(|n| {
            n.and_then(|n| {
                let v = serde_json::to_value(n).ok()?;
                let o: DynamicObject = serde_json::from_value(v).ok()?;
                Some((o.metadata.name.clone().unwrap_or_default(), o))
            })
            .into_iter()
            .collect()
        });
        tx.send_if_modified(|held| {
            let version = |m: &Option<NodeObjects>| {
                m.as_ref().map(|m| {
                    m.values()
                        .map(|o| o.metadata.resource_version.clone())
                        .collect::<Vec<_>>()
                })
            };
            if version(held) == version(&objects) {
                return false;
            }
            *held = objects;
            true
        });
    }

    /// The host the agent acts through.
    pub fn host(&self) -> &H {
        &self.host
    }

    /// Plans updates under the cluster's `MachineConfiguration` (its user node disruption
    /// policies and validation overrides); `None` uses the built-in policies. [`Agent::run`]
    /// keeps it current from the `cluster` object.
    pub fn set_policies(&mut self, policies: Option<MachineConfiguration>) {
        self.policies = policies;
    }

    /// The MachineConfig `name`, or `None` when the API server has none.
    async fn fetch(&mut self, name: &str) -> Result<Option<DesiredConfig>, AgentError> {
        if let Some(c) = self.cache.get(name) {
            return Ok(Some(c.clone()));
        }
        let Some(obj) = self.mcs.get_opt(name).await? else {
            return Ok(None);
        };
        let config = desired_from(&obj)?;
        self.cache.insert(name.to_string(), config.clone());
        Ok(Some(config))
    }

    /// Writes a step's annotations; returns the node as the API server now holds it.
    async fn write(&mut self, step: &Step, node: &Node) -> Result<Node, AgentError> {
        let Some(patch) = step.patch() else {
            return Ok(node.clone());
        };
        // Compared before writing: a step the node already shows (a failed update retried
        // with the same reason) sends nothing, records no Event again.
        let shown = step.annotations().is_some_and(|want| {
            want.iter()
                .all(|(k, v)| node.metadata.annotations.get(k).map(String::as_str) == v.as_deref())
        });
        if shown {
            tracing::debug!(node = %self.opts.node_name, ?step, "the node shows the step already");
            return Ok(node.clone());
        }
        let updated = self.patch_node(&patch).await?;
        self.node_uid = updated.metadata.uid.clone().or(self.node_uid.take());
        self.record(step, &updated).await;
        let annotations = updated.metadata.annotations.as_ref();
        let get = |k: &str| {
            annotations
                .and_then(|a| a.get(k))
                .map_or("", String::as_str)
        };
        let m = &self.opts.metrics;
        m.set_state(
            get(mco_render::api::node::STATE),
            get(mco_render::api::node::REASON),
        );
        match step {
            Step::Done { current, .. } => {
                m.set_update(current, "");
                m.set_config_drift(0);
            }
            Step::ConfigDrift { .. } => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
                m.set_config_drift(now);
            }
            Step::Degraded { reason } | Step::Unreconcilable { reason } => {
                m.set_update(get(mco_render::api::node::DESIRED_CONFIG), reason)
            }
            _ => {}
        }
        let node: Node = convert(&format!("Node {}", self.opts.node_name), &updated)?;
        self.report(step, &node).await;
        if let Step::Done { current, .. } = step {
            self.report_irreconcilable(current).await;
        }
        Ok(node)
    }

    /// Removes the [`FORCE`] annotation once the update it let past the drift check is
    /// committed, as the force file is removed then.
    async fn clear_force(&mut self) -> Result<Node, AgentError> {
        let patch = json!({"metadata": {"annotations": {FORCE: null}}});
        let updated = self.patch_node(&patch).await?;
        convert(&format!("Node {}", self.opts.node_name), &updated)
    }

    /// The resourceVersion of the node as our last write left it.
    fn written_version(&self) -> Option<String> {
        self.written.as_ref()?.metadata.resource_version.clone()
    }

    /// Merge-patches this node's Node, remembering the node the write left (its own write's
    /// watch event is not news).
    async fn patch_node(&mut self, patch: &serde_json::Value) -> Result<KubeNode, AgentError> {
        let updated = self
            .nodes
            .patch(
                &self.opts.node_name,
                &PatchParams::default(),
                &Patch::Merge(patch),
            )
            .await?;
        self.written = Some(updated.clone());
        Ok(updated)
    }

    /// Records `step`'s phases on the node's MachineConfigNode (created, owned by the Node,
    /// when absent): spec and status are merge-patched, the status through its subresource.
    /// Best effort, like the Events: a failure is logged.
    async fn report(&mut self, step: &Step, node: &Node) {
        let phases = super::node_conditions::step_phases(step, node);
        self.write_phases(phases, node).await;
    }

    /// Writes `phases` on the MachineConfigNode after the ones a failed write left unsent;
    /// when the server was away or failing, all of them wait for the next try.
    async fn write_phases(&mut self, phases: Vec<super::node_conditions::Phase>, node: &Node) {
        if self.mcn_absent {
            return;
        }
        self.unsent.queue_phases(phases);
        let all = self.unsent.take_phases(Instant::now());
        if all.is_empty() {
            return;
        }
        match self.write_mcn(&all, node).await {
            Ok(()) => {
                self.mcn_absences = 0;
                self.unsent.phases_written();
            }
            Err(e) => {
                if matches!(&e, AgentError::Kube(k) if super::unsent::transient(k)) {
                    self.unsent.phases_failed(all, Instant::now());
                }
                self.mcn_failed(&e, "MachineConfigNode not written");
            }
        }
    }

    /// Sends what a failed request left unsent (the API server away, throttling or failing
    /// then): the Events first, then the MachineConfigNode phases.
    async fn send_unsent(&mut self, node: &Node) {
        if self.unsent.is_empty() {
            return;
        }
        self.publish(Vec::new(), None).await;
        self.write_phases(Vec::new(), node).await;
    }

    /// After a failed MachineConfigNode write: when the server does not serve the API, no
    /// write is tried until its CRD is established (the start-up write follows then).
    fn mcn_failed(&mut self, e: &AgentError, what: &str) {
        if !matches!(e, AgentError::NotServed(_)) {
            tracing::warn!(node = %self.opts.node_name, "{what}: {e}");
            return;
        }
        tracing::info!(node = %self.opts.node_name, "{what}: {e}; waiting for its CustomResourceDefinition");
        self.mcn_absent = true;
        self.mcn_started = false;
        let crd = Crd::of(&self.client, &machine_config_node_resource());
        let (opts, attempt, served) = (self.opts.watch, self.mcn_absences, self.mcn_served.clone());
        self.mcn_absences = self.mcn_absences.saturating_add(1);
        tokio::spawn(async move {
            until_served(crd.as_ref(), &opts, attempt, "MachineConfigNode").await;
            served.notify_one();
        });
    }

    async fn write_mcn(
        &mut self,
        phases: &[super::node_conditions::Phase],
        node: &Node,
    ) -> Result<(), AgentError> {
        use mco_render::api::machine_config_node::{StatusConfigVersion, NOT_YET_SET};
        use mco_render::api::MachineConfigNodeStatus;
        let name = self.opts.node_name.clone();
        let desired = match node.desired_config() {
            "" => NOT_YET_SET.to_string(),
            d => d.to_string(),
        };
        let stored = match self.mcns.get_opt(&name).await {
            Err(e) if is_absent_api(&e) => {
                return Err(AgentError::NotServed("MachineConfigNodes".into()))
            }
            Err(e) => return Err(e.into()),
            Ok(Some(o)) => Some(o),
            Ok(None) => {
                if self.node_uid.is_none() {
                    self.node_uid = match &node.metadata.uid {
                        Some(uid) => Some(uid.clone()),
                        None => self.nodes.get(&name).await?.metadata.uid,
                    };
                }
                None
            }
        };
        // The pool the operator names (from the pools' node selectors) is kept; the roles
        // only name it while nobody has.
        let pool = stored
            .as_ref()
            .and_then(|o| o.data.pointer("/spec/pool/name"))
            .and_then(serde_json::Value::as_str)
            .filter(|p| !p.is_empty() && *p != NOT_YET_SET)
            .map_or_else(|| super::node_conditions::pool_of(node), str::to_string);
        let spec = json!({
            "node": {"name": name},
            "pool": {"name": pool},
            "configVersion": {"desired": desired},
        });
        let stored = match stored {
            Some(o) => o,
            None => {
                let obj: DynamicObject = convert(
                    &format!("MachineConfigNode {name}"),
                    &json!({
                        "apiVersion": "machineconfiguration.openshift.io/v1",
                        "kind": "MachineConfigNode",
                        "metadata": {"name": name, "ownerReferences": [{
                            "apiVersion": "v1", "kind": "Node", "name": name,
                            "uid": self.node_uid.clone().unwrap_or_default(),
                        }]},
                        "spec": spec,
                    }),
                )?;
                match self.mcns.create(&Default::default(), &obj).await {
                    Ok(o) => o,
                    // The operator created it meanwhile.
                    Err(kube::Error::Api(e)) if e.code == 409 => self.mcns.get(&name).await?,
                    // The collection is not found: the API is not served.
                    Err(e) if is_absent_api(&e) => {
                        return Err(AgentError::NotServed("MachineConfigNodes".into()))
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        };
        if stored.data.get("spec") != Some(&spec) {
            self.mcns
                .patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(&json!({ "spec": spec })),
                )
                .await?;
        }
        let before: MachineConfigNodeStatus = match stored.data.get("status") {
            Some(v) => convert(&format!("MachineConfigNode {name} status"), v)?,
            None => MachineConfigNodeStatus::default(),
        };
        let mut status = before.clone();
        let now = now_rfc3339();
        for p in phases {
            status.record(&p.parent, p.child.as_ref(), &desired, &now);
        }
        status.config_version = Some(StatusConfigVersion {
            current: node.current_config().to_string(),
            desired: desired.clone(),
        });
        status.observed_generation = stored.metadata.generation;
        if status != before {
            self.mcns
                .patch_status(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(&json!({ "status": status })),
                )
                .await?;
        }
        Ok(())
    }

    /// Records the step's Events on the Node (see [`Self::publish`]).
    async fn record(&mut self, step: &Step, node: &KubeNode) {
        let events = super::step_events(step, &self.opts.node_name);
        self.publish(events, node.metadata.uid.clone()).await;
    }

    /// A bootstrapping node booted into another OS image (`booted`) than the config it joined
    /// on is rebased to it and rebooted, the bootstrap left to finish on the next boot
    /// (upstream's bootstrap pivot). `None` when the update had nothing to do.
    async fn bootstrap_pivot(
        &mut self,
        full: &DesiredConfig,
        node: &Node,
        booted: String,
    ) -> Result<Option<Synced>, AgentError> {
        tracing::info!(from = %booted, to = %full.input.os_image_url, "bootstrap pivot required");
        let mut old = full.clone();
        old.input.os_image_url = booted;
        let opts = ApplyOptions {
            check_drift: false,
            reboot: crate::apply::RebootMode::Deferred,
            drained: true,
            policies: self.policies.as_ref(),
        };
        let out = run_update(&self.root, &mut self.host, &old, full, opts, None);
        for l in &out.log {
            tracing::info!("{l}");
        }
        self.opts.metrics.record_pivot(out.pivot);
        let step = match after_apply(&out) {
            Some(s @ Step::Reboot { .. }) => s,
            Some(s) => {
                self.write(&s, node).await?;
                return Ok(Some(Synced::Retrying));
            }
            None => return Ok(None),
        };
        self.reboot(&step, node).await.map(Some)
    }

    /// The OS image the host booted, when it is known and not `full`'s (a bootstrapping node
    /// then pivots first; unknown is left to the check before Done).
    fn booted_elsewhere(&mut self, full: &DesiredConfig) -> Option<String> {
        let want = &full.input.os_image_url;
        if want.is_empty() {
            return None;
        }
        match crate::firstboot::read_booted_image(&self.root, &mut self.host) {
            Ok(Some(b)) if b != *want => Some(b),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!("bootstrap: the booted OS image is unknown: {e}");
                None
            }
        }
    }

    /// Marks the node Rebooting (`step`, a [`Step::Reboot`]) and reboots the host; a reboot
    /// command that fails degrades the node (upstream's message) and is retried.
    async fn reboot(&mut self, step: &Step, node: &Node) -> Result<Synced, AgentError> {
        let node = self.write(step, node).await?;
        tracing::info!(?step, "rebooting");
        if let Err(e) = self.host.reboot() {
            tracing::error!("reboot failed: {e}");
            self.opts.metrics.reboot_failed();
            let failed = Step::Degraded {
                reason: "reboot command failed, something is seriously wrong".into(),
            };
            self.write(&failed, &node).await?;
            return Ok(Synced::Retrying);
        }
        Ok(Synced::Rebooting)
    }

    /// Records `events` on the Node (`uid`: the Node's, when known), after the ones a failed
    /// request left unsent. Recording never fails a step: when the server cannot take an
    /// Event (away, throttling, failing), it and the ones after it wait (see
    /// [`super::unsent`]); one it refuses is logged.
    async fn publish(&mut self, events: Vec<super::NodeEvent>, uid: Option<String>) {
        use super::unsent::UnsentEvent;
        use kube::runtime::events::{Event, EventType};
        self.unsent
            .queue_events(events.into_iter().map(|event| UnsentEvent {
                event,
                uid: uid.clone(),
                tries: 0,
            }));
        while let Some(e) = self.unsent.next_event(Instant::now()) {
            let reference = k8s_openapi::api::core::v1::ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Node".into()),
                name: Some(self.opts.node_name.clone()),
                uid: e.uid.clone(),
                ..Default::default()
            };
            let event = Event {
                type_: if e.event.warning {
                    EventType::Warning
                } else {
                    EventType::Normal
                },
                reason: e.event.reason.into(),
                note: Some(e.event.note.clone()),
                action: e.event.reason.into(),
                secondary: None,
            };
            match self.recorder.publish(&event, &reference).await {
                Ok(()) => {}
                Err(err) if super::unsent::transient(&err) => {
                    tracing::debug!("event {} not recorded yet: {err}", e.event.reason);
                    self.unsent.event_failed(e, Instant::now());
                    return;
                }
                Err(err) => tracing::warn!("event {} not recorded: {err}", e.event.reason),
            }
        }
    }

    /// What the host runs: the config on disk, else the one the node's `currentConfig` names
    /// with the image its `currentImage` names embedded (upstream's `getCurrentConfigFromNode`).
    async fn current(&mut self, node: &Node) -> Result<DesiredConfig, AgentError> {
        let on_disk = read_current(&self.root)?;
        if !on_disk.name().is_empty() || node.current_config().is_empty() {
            return Ok(on_disk);
        }
        let image = node
            .annotation(mco_render::api::node::CURRENT_IMAGE)
            .unwrap_or("")
            .to_string();
        Ok(self
            .fetch(node.current_config())
            .await?
            .map_or(on_disk, |c| c.with_image(&image)))
    }

    /// Writes the node's MachineConfigNode once the agent starts, idle node or not (as
    /// upstream's daemon does at start-up): spec and configVersion, and on a node idle on its
    /// desired config `Updated` True ([`super::node_conditions::start_phases`]). A failure is
    /// logged and the next sync tries again.
    async fn report_start(&mut self, node: &Node) {
        let phases = super::node_conditions::start_phases(node);
        match self.write_mcn(&phases, node).await {
            Ok(()) => {
                self.mcn_started = true;
                self.mcn_retry = None;
                self.mcn_absences = 0;
            }
            Err(e) => {
                if !matches!(e, AgentError::NotServed(_)) {
                    // Tried again at a later sync, after a delay growing to minutes: an idle
                    // agent does not repeat a failing write at every resync.
                    let failures = self.mcn_retry.map_or(0, |(n, _)| n);
                    let backoff = mco_render::controllers::backoff::Backoff {
                        initial: self.opts.watch.transient.initial,
                        max: self.opts.watch.absent.max,
                    };
                    let at = Instant::now() + backoff.delay(failures);
                    self.mcn_retry = Some((failures.saturating_add(1), at));
                }
                self.mcn_failed(&e, "MachineConfigNode not written at start-up");
            }
        }
    }

    /// Runs steps for `node` until the agent has to wait for someone else.
    pub async fn sync(&mut self, node: Node) -> Result<Synced, AgentError> {
        let retry_due = self.mcn_retry.is_none_or(|(_, at)| Instant::now() >= at);
        if !self.mcn_started && !self.mcn_absent && retry_due {
            self.report_start(&node).await;
        }
        self.send_unsent(&node).await;
        let mut node = node;
        // Back from leaving on-cluster layering: the config's files again, before anything.
        match crate::apply::revert::finish(&self.root, &mut self.host) {
            crate::apply::revert::Finished::Nothing => {}
            crate::apply::revert::Finished::Rewritten(log) => {
                for l in &log {
                    tracing::info!("{l}");
                }
            }
            crate::apply::revert::Finished::Failed(reason) => {
                let reason = super::cap_reason(&reason);
                let same = node.annotation(mco_render::api::node::REASON) == Some(reason.as_str());
                let step = Step::Degraded { reason };
                tracing::error!(?step, "leaving on-cluster layering");
                if !same {
                    self.write(&step, &node).await?;
                }
                return Ok(Synced::Retrying);
            }
        }
        for _ in 0..MAX_STEPS {
            let current = self.current(&node).await?;
            let want = node.desired_config().to_string();
            // On-cluster layering: the image the node's desiredImage names rides in the
            // desired config as its OS image (upstream's embedded OCL image).
            let want_image = super::desired_image(&node).to_string();
            let desired =
                if want.is_empty() || (want == current.name() && want_image == current.image()) {
                    None
                } else {
                    self.fetch(&want).await?.map(|d| d.with_image(&want_image))
                };
            self.cache
                .retain(|k, _| k == current.name() || *k == want || k == node.current_config());
            let initial = crate::firstboot::read_initial_annotations(&self.root)?;
            let kept = if initial.is_none() && node.current_config().is_empty() {
                crate::firstboot::read_kept_annotations(&self.root)?
            } else {
                None
            };
            match super::bootstrap_step(&node, initial.as_ref(), kept.as_ref()) {
                Some(Step::FinishBootstrap { config }) => {
                    let Some(full) = self.fetch(&config).await? else {
                        return Ok(Synced::Idle(format!(
                            "{config}, the config the node joined on, is not available"
                        )));
                    };
                    if let Some(booted) = self.booted_elsewhere(&full) {
                        // The node joins before it pivots, as upstream's: its annotations
                        // first, then the rebase and reboot, the disk finished after it.
                        if let (Some(annotations), "") = (&initial, node.current_config()) {
                            let s = Step::LoadInitialAnnotations {
                                annotations: annotations.clone(),
                            };
                            tracing::info!(node = %self.opts.node_name, "setting the initial node annotations");
                            node = self.write(&s, &node).await?;
                        }
                        if let Some(synced) = self.bootstrap_pivot(&full, &node, booted).await? {
                            return Ok(synced);
                        }
                    }
                    crate::firstboot::finish_bootstrap(&self.root, &full)?;
                    tracing::info!(config = %config, "bootstrap finished: the config is on disk");
                    continue;
                }
                Some(s) => {
                    tracing::info!(node = %self.opts.node_name, "setting the initial node annotations");
                    node = self.write(&s, &node).await?;
                    continue;
                }
                None => {}
            }
            if self.on_disk.as_ref().map(DesiredConfig::name) != Some(current.name()) {
                self.on_disk = Some(current.clone());
            }
            // The force annotation is the API's force file: either skips the drift check.
            let force_asked = node.annotation(FORCE).is_some();
            let force = force_asked || self.root.exists(FORCE_FILE)?;
            let idle_on_current = want == current.name()
                && want_image == current.image()
                && node.current_config() == current.name();
            let found = if idle_on_current {
                crate::drift::check(&self.root, &current.input.config)
            } else {
                Vec::new()
            };
            if let Some(step) = super::drift_step(&node, current.name(), &found, force) {
                match step {
                    Step::Idle { why } => return Ok(Synced::Idle(why)),
                    s => {
                        tracing::warn!(node = %self.opts.node_name, step = ?s, "config drift");
                        node = self.write(&s, &node).await?;
                        continue;
                    }
                }
            }
            // Once per start and config, as upstream validates the on-disk state at start-up:
            // an idle node on its config is checked for the OS image it booted.
            if idle_on_current && found.is_empty() && self.os_checked.as_deref() != Some(&want) {
                self.os_checked = Some(want.clone());
                let done = Step::Done {
                    current: want.clone(),
                    image: current.image().to_string(),
                };
                if let s @ Step::Degraded { .. } = self.check_booted_image(done, &node, &current) {
                    tracing::warn!(node = %self.opts.node_name, step = ?s, "booted OS image");
                    node = self.write(&s, &node).await?;
                    continue;
                }
            }
            let step = decide(&node, &current, desired.as_ref(), self.policies.as_ref());
            tracing::debug!(node = %self.opts.node_name, ?step, "next step");
            match step {
                Step::Idle { why } => {
                    self.waiting = None;
                    return Ok(Synced::Idle(why));
                }
                Step::Wait { request } => return self.wait(request, &node).await,
                Step::Apply { .. } => {
                    self.waiting = None;
                    let Some(desired) = desired else {
                        return Ok(Synced::Idle(format!("{want} is not available")));
                    };
                    if let Some((name, at)) = &self.retry {
                        if *name == want && Instant::now() < *at {
                            return Ok(Synced::Retrying);
                        }
                    }
                    tracing::info!(from = current.name(), to = %want, "applying");
                    // The force file skips the drift check once (upstream's), and goes.
                    let rpm_ostree = crate::rpm_ostree::is_rpm_ostree_host(&self.root)?;
                    let (started, staged) =
                        super::os_update_events(&current.input, &desired.input, rpm_ostree);
                    let uid = self.node_uid.clone();
                    self.publish(started.into_iter().collect(), uid.clone())
                        .await;
                    let opts = ApplyOptions {
                        check_drift: !force,
                        reboot: crate::apply::RebootMode::Deferred,
                        drained: true,
                        policies: self.policies.as_ref(),
                    };
                    let out =
                        run_update(&self.root, &mut self.host, &current, &desired, opts, None);
                    for l in &out.log {
                        tracing::info!("{l}");
                    }
                    self.opts.metrics.record_pivot(out.pivot);
                    let applied = after_apply(&out);
                    if matches!(applied, None | Some(Step::Reboot { .. })) {
                        // Committed.
                        self.publish(staged.into_iter().collect(), uid).await;
                        if force {
                            let mut dirty = std::collections::BTreeSet::new();
                            self.root.remove(FORCE_FILE, &mut dirty)?;
                        }
                        if force_asked {
                            node = self.clear_force().await?;
                        }
                        self.report(&step, &node).await;
                    }
                    match applied {
                        None => self.retry = None,
                        Some(s @ Step::Reboot { .. }) => {
                            self.retry = None;
                            let synced = self.reboot(&s, &node).await?;
                            if synced == Synced::Retrying {
                                self.retry = Some((want, Instant::now() + self.opts.retry_after));
                            }
                            return Ok(synced);
                        }
                        Some(s) => {
                            tracing::error!(?s, "update failed");
                            self.write(&s, &node).await?;
                            self.retry = Some((want, Instant::now() + self.opts.retry_after));
                            return Ok(Synced::Retrying);
                        }
                    }
                }
                s => {
                    self.waiting = None;
                    let s = self.check_booted_image(s, &node, &current);
                    if let Step::Idle { why } = s {
                        return Ok(Synced::Idle(why));
                    }
                    tracing::info!(node = %self.opts.node_name, step = ?s, "writing");
                    node = self.write(&s, &node).await?;
                }
            }
        }
        Ok(Synced::Idle("too many steps in one sync".into()))
    }

    /// Holds back the uncordon and Done of an update while the host is booted into another
    /// OS image than `current` names ([`super::os_check`]); hosts without `/run/ostree-booted`
    /// are not rpm-ostree hosts and are not checked, nor are hosts that only print commands.
    fn check_booted_image(&mut self, step: Step, node: &Node, current: &DesiredConfig) -> Step {
        if !matches!(step, Step::Done { .. } | Step::RequestUncordon { .. })
            || current.input.os_image_url.is_empty()
        {
            return step;
        }
        if !crate::rpm_ostree::status_readable(&self.root, &self.host).unwrap_or(false) {
            tracing::debug!(node = %self.opts.node_name, "the booted OS image is not checked: not an rpm-ostree host");
            return step;
        }
        let status = crate::rpm_ostree::query(&mut self.host).map_err(|e| e.to_string());
        super::os_check::before_completing(&step, node, current, Some(status)).unwrap_or(step)
    }

    async fn wait(&mut self, request: String, node: &Node) -> Result<Synced, AgentError> {
        let now = Instant::now();
        let (since, reported) = match &self.waiting {
            Some((r, since, reported)) if *r == request => (*since, *reported),
            _ => (now, false),
        };
        let (limit, reason) = if request.starts_with(DRAIN) {
            (
                self.opts.drain_timeout,
                drain_timeout_reason(&self.opts.node_name, node.annotation(DRAIN_FAILURE)),
            )
        } else if request.starts_with(UNCORDON) {
            (
                self.opts.uncordon_timeout,
                uncordon_timeout_reason(&self.opts.node_name),
            )
        } else {
            (Duration::MAX, String::new())
        };
        let mut reported = reported;
        if !reported && now.duration_since(since) > limit {
            self.write(&Step::Degraded { reason }, node).await?;
            reported = true;
        }
        self.waiting = Some((request.clone(), since, reported));
        Ok(Synced::Waiting(request))
    }

    /// Watches the node and syncs on every change and at least every
    /// [`AgentOptions::resync`], until the watch ends or the host reboots.
    pub async fn run(mut self) -> Result<(), AgentError> {
        // What upstream's daemon reports of its host once it starts.
        let facts = super::host_facts::collect(&self.root, &mut self.host);
        tracing::info!(os = %facts.os.os, version = %facts.os.version, unsupported_packages = ?facts.unsupported_packages, "host");
        self.opts
            .metrics
            .set_host_facts(&self.opts.node_name, &facts);
        let cfg = self.opts.watch.named(&self.opts.node_name);
        // A 410 lists again at once; other failures wait (`watches::relist`).
        let nodes = self.nodes.clone();
        let mut events = relisting(self.opts.watch.retry(), move || {
            watcher(nodes.clone(), cfg.clone())
        })
        .boxed();
        let mut policies = watch_policies(
            self.machine_configurations.clone(),
            Crd::of(&self.client, &machine_configuration_resource()),
            self.opts.watch,
        );
        let mcn_served = self.mcn_served.clone();
        let mut latest: Option<Node> = None;
        // The resourceVersion our last write produced, until its watch event arrives.
        let mut echo: Option<String> = None;
        let mut stale_tick = false;
        // The resourceVersion of the node in `latest`.
        let mut seen: Option<String> = None;
        let mut drift = super::drift_watch::DriftWatch::new();
        let mut tick = tokio::time::interval(self.opts.resync);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                ev = events.next() => match ev {
                    None => return Ok(()),
                    Some(Ok(watcher::Event::Apply(n))) => {
                        let rv = n.metadata.resource_version.clone();
                        match &echo {
                            // The node before our last write: syncing on it would repeat
                            // that write (and `latest` is already the node it left).
                            Some(want) if rv.as_ref() != Some(want) => continue,
                            Some(_) => echo = None,
                            None => {}
                        }
                        self.feed(Some(Some(&n)));
                        latest = Some(convert(&format!("Node {}", self.opts.node_name), &n)?);
                        seen = rv;
                    }
                    Some(Ok(watcher::Event::Init)) => {
                        // A (re-)list begins: the node last seen is stale (a 410, or a watch
                        // that failed), and nothing is decided from it until the list is in.
                        latest = None;
                        self.feed(None);
                        continue;
                    }
                    Some(Ok(watcher::Event::InitApply(n))) => {
                        // A re-list shows the node as it is now.
                        echo = None;
                        seen = n.metadata.resource_version.clone();
                        self.feed(Some(Some(&n)));
                        latest = Some(convert(&format!("Node {}", self.opts.node_name), &n)?);
                    }
                    Some(Ok(watcher::Event::InitDone)) => {
                        if latest.is_none() {
                            self.feed(Some(None));
                        }
                        continue;
                    }
                    Some(Ok(watcher::Event::Delete(_))) => {
                        self.feed(Some(None));
                        latest = None;
                    }
                    Some(Err(e)) => {
                        tracing::warn!("watch error: {e}");
                        continue;
                    }
                },
                changed = policies.changed() => {
                    if changed.is_ok() {
                        self.policies = policies.borrow_and_update().clone();
                    }
                    continue;
                }
                () = mcn_served.notified() => {
                    // The MachineConfigNode API may be served now: the sync writes the
                    // start-up record.
                    self.mcn_absent = false;
                }
                _ = drift.changed() => {
                    // Our own write's echo is on its way: it syncs, on a node that is current.
                    if echo.is_some() {
                        continue;
                    }
                }
                _ = tick.tick() => {
                    // The resync works on the node as last seen, which is stale while the
                    // echo of our last write is on its way; a lost echo (it cannot be: a
                    // broken watch re-lists) is given up on at the next tick.
                    if echo.is_some() {
                        if !stale_tick {
                            stale_tick = true;
                            continue;
                        }
                        echo = None;
                    }
                }
            }
            let Some(n) = latest.clone() else { continue };
            let before = self.written_version();
            match self.sync(n).await {
                Ok(Synced::Rebooting) if !self.opts.continue_after_reboot => return Ok(()),
                Ok(s) => tracing::debug!(?s, "synced"),
                Err(e) => tracing::warn!("sync failed: {e}"),
            }
            stale_tick = false;
            if let Some(c) = &self.on_disk {
                drift.follow(&self.root, c.name(), &c.input.config);
            }
            // A write that changed nothing keeps the resourceVersion and sends no event.
            let written = self.written_version();
            if written != before && written != seen {
                // Until its echo arrives, the node is the one our write returned: a resync on
                // the node last seen (its watch perhaps cut, re-listing after backoff) would
                // write the same step again.
                if let Some(n) = &self.written {
                    latest = Some(convert(&format!("Node {}", self.opts.node_name), n)?);
                }
                seen = written.clone();
                echo = written;
            }
        }
    }
}

/// Watches the `cluster` MachineConfiguration into a channel (`None`: the built-in policies,
/// when it does not exist or the server does not serve the API; an absent API is waited for
/// on its CRD, see [`super::watches`]).
fn watch_policies(
    api: Api<DynamicObject>,
    crd: Option<Crd>,
    opts: WatchOptions,
) -> tokio::sync::watch::Receiver<Option<MachineConfiguration>> {
    let (tx, rx) = tokio::sync::watch::channel(None);
    tokio::spawn(async move {
        let decode = |o: &DynamicObject| {
            convert::<MachineConfiguration, _>("MachineConfiguration cluster", o)
                .map_err(|e| tracing::warn!("{e}; keeping the previous policies"))
                .ok()
        };
        // What a (re-)list found, until it is done.
        let mut listed: Option<Option<MachineConfiguration>> = None;
        follow(
            api,
            crd,
            opts.named("cluster"),
            opts,
            "MachineConfiguration",
            |seen| {
                let update = match seen {
                    Seen::Event(watcher::Event::Init) => {
                        listed = Some(None);
                        return true;
                    }
                    Seen::Event(watcher::Event::InitApply(o)) => {
                        if let Some(m) = decode(&o) {
                            listed = Some(Some(m));
                        }
                        return true;
                    }
                    Seen::Event(watcher::Event::InitDone) => match listed.take() {
                        Some(p) => p,
                        None => return true,
                    },
                    Seen::Event(watcher::Event::Apply(o)) => match decode(&o) {
                        Some(m) => Some(m),
                        None => return true,
                    },
                    Seen::Event(watcher::Event::Delete(_)) | Seen::Absent => None,
                };
                tx.send_if_modified(|held| {
                    let changed = *held != update;
                    *held = update;
                    changed
                });
                !tx.is_closed()
            },
        )
        .await;
    });
    rx
}

mod irreconcilable;
#[cfg(test)]
mod tests;

/// Now, as Kubernetes writes times (`YYYY-MM-DDTHH:MM:SSZ`).
fn now_rfc3339() -> String {
    k8s_openapi::jiff::fmt::strtime::format(
        "%Y-%m-%dT%H:%M:%SZ",
        k8s_openapi::jiff::Timestamp::now(),
    )
    .unwrap_or_default()
}
