//! The operator: keeps the controller, server and agent deployed from the manifests at one
//! image and version, keeps the fields it owns in the `machine-config-controller`
//! ControllerConfig built from the cluster's config objects, the release's OS images (the
//! `machine-config-osimageurl` ConfigMap in its namespace) and the CA ConfigMaps upstream
//! reads (`mco_render::controllers::operator::certificates`), creates the built-in pools when
//! missing, keeps one MachineConfigNode per Node (`machine_config_nodes`), keeps the Secrets
//! on-cluster layering builds read while a pool is layered (`layering`) and seeds the
//! `machine-config-operator-images` ConfigMap they run from, and reports in the
//! `machine-config` ClusterOperator.
//!
//! The decisions are `mco_render::controllers::operator`'s; this module reads the cluster, applies the
//! desired objects in order (create when missing, JSON merge patch when a field the operator
//! owns differs, see `mco_render::controllers::operator::ownership`) and writes the status subresource
//! when it changed.
//!
//! The running operator ([`run`]) reads everything from watch caches ([`caches`]), each kind
//! listed once at start-up, and is woken by the changes that concern it: a pass over a
//! cluster that has not changed makes no request. A one-off pass ([`Operator::sync_once`] on
//! an operator made with [`Operator::new`]) reads the API server at once ([`reads`]).

pub mod apply;
pub mod caches;
pub mod embedded;
pub mod kinds;
pub mod layering;
pub mod machine_config_nodes;
pub mod reads;

use crate::reflect::Registry;
use apply::Applied;
use caches::Caches;
use kinds::kind_info;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use mco_render::controllers::backoff::Backoff;
use mco_render::controllers::build::request::GLOBAL_PULL_SECRET_COPY;
use mco_render::controllers::operator::certificates::{
    ca_configmaps, ca_fields, kubeconfig_data, CaError, CaSources, ConfigMapRef,
};
use mco_render::controllers::operator::desired::is_workload;
use mco_render::controllers::operator::layering as layering_consts;
use mco_render::controllers::operator::status::{task_name, Workload};
use mco_render::controllers::operator::{
    compute_status, desired_objects, os_images_from_configmap, parse_manifests,
    ClusterConfigObjects, ClusterOperatorStatus, DesiredOptions, OsImagesError, StatusInput,
    SyncFailure, CLUSTER_OPERATOR_NAME, NAMESPACE, OS_IMAGE_URL_CONFIGMAP,
};
use reads::Reader;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::sync::mpsc;

/// How the operator runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// The manifest files (name, text), in apply-file order.
    pub manifests: Vec<(String, String)>,
    /// The image for the workloads.
    pub image: String,
    /// The version deployed and reported.
    pub version: String,
    /// Seconds between full resyncs when nothing changes.
    pub resync: Duration,
    /// The wait after a change before syncing.
    pub debounce: Duration,
}

/// Why the operator cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// A manifest does not decode.
    #[error(transparent)]
    Manifest(#[from] mco_render::controllers::operator::ManifestsError),
    /// The API server refused or failed a request.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// A manifest holds a kind the operator cannot address.
    #[error("the operator does not know where {0:?} objects are served")]
    UnknownKind(String),
    /// An object did not convert to or from JSON.
    #[error("encoding: {0}")]
    Encode(serde_json::Error),
    /// The release's OS images ConfigMap is refused.
    #[error(transparent)]
    OsImages(#[from] OsImagesError),
    /// A CA ConfigMap is refused.
    #[error(transparent)]
    Certificates(#[from] CaError),
    /// An object read from the cluster does not decode.
    #[error("{kind} {name:?}: {message}")]
    Decode {
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
        /// What is wrong with it.
        message: String,
    },
    /// A watch cache has not listed its kind (the API server refuses or fails the watch).
    #[error("the watch of {0} objects has not listed yet")]
    NotListed(String),
}

/// What one sync pass did.
#[derive(Debug, Clone, Default)]
pub struct SyncReport {
    /// Objects created.
    pub created: usize,
    /// Objects patched.
    pub patched: usize,
    /// MachineConfigNodes created, patched or deleted.
    pub machine_config_nodes: usize,
    /// Layering Secrets (the pull secret copy, entitlement copies) written.
    pub layering_secrets: usize,
    /// Whether the ClusterOperator (or its status) was written.
    pub status_written: bool,
    /// The first task that failed.
    pub failure: Option<SyncFailure>,
    /// The status now reported.
    pub status: ClusterOperatorStatus,
}

impl SyncReport {
    /// Whether the pass wrote anything.
    pub fn wrote(&self) -> bool {
        self.created > 0
            || self.patched > 0
            || self.machine_config_nodes > 0
            || self.layering_secrets > 0
            || self.status_written
    }
}

/// The sync task an object belongs to (used in failure reasons).
fn task_of(obj: &Value) -> String {
    let kind = obj.pointer("/kind").and_then(Value::as_str).unwrap_or("");
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    match kind {
        "Deployment" | "DaemonSet" | "Service" => task_name(name),
        "ControllerConfig" => "RenderConfig".to_string(),
        "MachineConfigPool" => "MachineConfigPools".to_string(),
        "CustomResourceDefinition" => "CustomResourceDefinitions".to_string(),
        _ => "Resources".to_string(),
    }
}

/// The operator bound to a cluster.
pub struct Operator {
    client: Client,
    opts: Options,
    manifests: Vec<Value>,
    caches: Option<Caches>,
}

fn api_all(client: &Client, kind: &str) -> Result<Api<DynamicObject>, OperatorError> {
    let info = kind_info(kind).ok_or_else(|| OperatorError::UnknownKind(kind.to_string()))?;
    Ok(Api::all_with(client.clone(), &info.resource))
}

/// The namespace an object is applied in: its own, or the operator's for a namespaced kind
/// that names none; `None` for a cluster-scoped kind (or one the operator does not know).
fn namespace_of(obj: &Value) -> Option<String> {
    let info = kind_info(obj.pointer("/kind").and_then(Value::as_str).unwrap_or(""))?;
    info.namespaced.then(
        || match obj.pointer("/metadata/namespace").and_then(Value::as_str) {
            Some(ns) if !ns.is_empty() => ns.to_string(),
            _ => NAMESPACE.to_string(),
        },
    )
}

impl Operator {
    /// Decodes the manifests; fails on a manifest that does not decode. Its passes read the
    /// API server at once.
    pub fn new(client: Client, opts: Options) -> Result<Self, OperatorError> {
        let manifests = parse_manifests(&opts.manifests)?;
        Ok(Operator {
            client,
            opts,
            manifests,
            caches: None,
        })
    }

    /// [`Operator::new`], its passes reading the watches of `registry` (started as they are
    /// needed), each change that concerns the operator sending into `wake`.
    pub fn watching(
        registry: &Registry,
        opts: Options,
        wake: mpsc::Sender<()>,
    ) -> Result<Self, OperatorError> {
        let mut op = Operator::new(registry.client().clone(), opts)?;
        op.caches = Some(Caches::new(registry, wake));
        Ok(op)
    }

    fn reader(&self) -> Reader<'_> {
        match &self.caches {
            Some(c) => Reader::Caches(c),
            None => Reader::Api(&self.client),
        }
    }

    /// Starts, without waiting for them, the watches a pass reads: those of the manifests'
    /// objects and of what the operator reads besides (none without caches).
    pub fn prestart(&self) {
        let Some(caches) = &self.caches else { return };
        let namespaces: Vec<(String, Option<String>, String)> = self
            .manifests
            .iter()
            .map(|o| {
                (
                    o.pointer("/kind")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    namespace_of(o),
                    o.pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                )
            })
            .collect();
        caches.prestart(
            namespaces
                .iter()
                .map(|(k, ns, n)| (k.as_str(), ns.as_deref(), n.as_str())),
        );
        let mut reads: Vec<(&str, Option<&str>, &str)> = vec![
            ("ConfigMap", Some(NAMESPACE), OS_IMAGE_URL_CONFIGMAP),
            ("Secret", Some(NAMESPACE), GLOBAL_PULL_SECRET_COPY),
            (
                "Secret",
                Some(layering_consts::PULL_SECRET_NAMESPACE),
                layering_consts::PULL_SECRET,
            ),
            (
                "Secret",
                Some(layering_consts::ENTITLEMENT_NAMESPACE),
                layering_consts::ENTITLEMENT_SECRET,
            ),
            ("ClusterOperator", None, CLUSTER_OPERATOR_NAME),
            ("MachineConfigPool", None, ""),
            ("Node", None, ""),
            ("MachineConfigNode", None, ""),
            ("MachineOSConfig", None, ""),
            ("Deployment", Some(NAMESPACE), ""),
            ("DaemonSet", Some(NAMESPACE), ""),
        ];
        for kind in ["Infrastructure", "Network", "DNS", "Proxy", "Image"] {
            reads.push((kind, None, "cluster"));
        }
        let cas: Vec<ConfigMapRef> = ca_configmaps(None, None);
        reads.extend(
            cas.iter()
                .map(|r| ("ConfigMap", Some(r.namespace.as_str()), r.name.as_str())),
        );
        caches.prestart(reads);
    }

    /// The cluster's config.openshift.io `cluster` objects and the release's OS images (the
    /// `machine-config-osimageurl` ConfigMap in the operator's namespace). A missing object
    /// (or API group) is absent; any other error, or a ConfigMap for another release, fails
    /// the pass.
    async fn cluster_config(
        &self,
        reader: &Reader<'_>,
    ) -> Result<ClusterConfigObjects, OperatorError> {
        let get = |kind: &'static str| reader.get(kind, None, "cluster");
        let os_images = match reader
            .get("ConfigMap", Some(NAMESPACE), OS_IMAGE_URL_CONFIGMAP)
            .await?
        {
            Some(cm) => os_images_from_configmap(&cm, &self.opts.version)?,
            None => Default::default(),
        };
        let proxy = get("Proxy").await?;
        let image = get("Image").await?;
        let mut configmaps = std::collections::BTreeMap::new();
        for r in ca_configmaps(proxy.as_ref(), image.as_ref()) {
            if let Some(cm) = reader.get("ConfigMap", Some(&r.namespace), &r.name).await? {
                configmaps.insert(r, cm);
            }
        }
        let sources = CaSources {
            configmaps,
            proxy: proxy.clone(),
            image,
        };
        let certificates = ca_fields(&sources)?;
        let kubeconfig_data = kubeconfig_data(&sources);
        Ok(ClusterConfigObjects {
            infrastructure: get("Infrastructure").await?,
            network: get("Network").await?,
            dns: get("DNS").await?,
            proxy,
            os_images,
            certificates,
            kubeconfig_data,
        })
    }

    /// The objects this pass applies, in order.
    pub async fn desired(&self) -> Result<Vec<Value>, OperatorError> {
        self.desired_from(&self.reader()).await
    }

    async fn desired_from(&self, reader: &Reader<'_>) -> Result<Vec<Value>, OperatorError> {
        let cluster = self.cluster_config(reader).await?;
        let mut objects = desired_objects(
            &self.manifests,
            &DesiredOptions {
                image: self.opts.image.clone(),
                version: self.opts.version.clone(),
            },
            &cluster,
        );
        if let Some(ca) = Self::webhook_ca(reader).await {
            for o in &mut objects {
                mco_render::admission::set_ca_bundle(o, &ca);
            }
        }
        Ok(objects)
    }

    /// The webhook certificate Secret's `ca.crt` (base64), when it has one (cert-manager's
    /// do; OpenShift's service CA fills `caBundle` itself). Unreadable means none.
    async fn webhook_ca(reader: &Reader<'_>) -> Option<String> {
        let secret = reader
            .get(
                "Secret",
                Some(NAMESPACE),
                mco_render::admission::WEBHOOK_TLS_SECRET,
            )
            .await
            .ok()??;
        let ca = secret.pointer("/data/ca.crt")?.as_str()?;
        (!ca.is_empty()).then(|| ca.to_string())
    }

    /// One pass: apply every object in order (stopping at the first failure), then read the
    /// workloads and pools back and write the ClusterOperator status if it changed. With
    /// caches, only what they say is missing or differs is asked of the API server.
    pub async fn sync_once(&self) -> Result<SyncReport, OperatorError> {
        let reader = self.reader();
        let mut report = SyncReport::default();
        let desired = match self.desired_from(&reader).await {
            Ok(d) => d,
            Err(e) => {
                report.failure = Some(SyncFailure {
                    task: "RenderConfig".to_string(),
                    message: e.to_string(),
                });
                Vec::new()
            }
        };
        if report.failure.is_none() {
            for obj in &desired {
                match reader.apply(&self.client, obj).await {
                    Ok(Applied::Created) => report.created += 1,
                    Ok(Applied::Patched) => report.patched += 1,
                    Ok(Applied::Unchanged) => {}
                    Err(e) => {
                        report.failure = Some(SyncFailure {
                            task: task_of(obj),
                            message: e.to_string(),
                        });
                        break;
                    }
                }
            }
        }
        // After the manifests (the MachineConfigNode CRD among them), as upstream orders it.
        if report.failure.is_none() {
            match machine_config_nodes::sync(&self.client, &reader).await {
                Ok(n) => report.machine_config_nodes = n,
                Err(e) => {
                    report.failure = Some(SyncFailure {
                        task: machine_config_nodes::TASK.to_string(),
                        message: e.to_string(),
                    })
                }
            }
        }
        if report.failure.is_none() {
            match layering::sync(&self.client, &reader).await {
                Ok(n) => report.layering_secrets = n,
                Err(e) => {
                    report.failure = Some(SyncFailure {
                        task: layering::TASK.to_string(),
                        message: e.to_string(),
                    })
                }
            }
        }
        let mut workloads = Vec::new();
        for obj in desired.iter().filter(|o| is_workload(o)) {
            let kind = obj["kind"].as_str().unwrap_or("");
            let name = obj
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let namespace = namespace_of(obj);
            workloads.push(Workload {
                kind: kind.to_string(),
                name: name.to_string(),
                observed: reader.get(kind, namespace.as_deref(), name).await?,
            });
        }
        let pools = machine_config_nodes::pools(&reader).await?;
        let co_api = api_all(&self.client, "ClusterOperator")?;
        let cached = reader
            .get("ClusterOperator", None, CLUSTER_OPERATOR_NAME)
            .await?;
        let seen = match &self.caches {
            Some(c) => c.cluster_operator(cached.clone()),
            None => cached.clone(),
        };
        let live = match seen {
            Some(l) => l,
            None => {
                let co = json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
                                "metadata": {"name": CLUSTER_OPERATOR_NAME}, "spec": {}});
                let obj: DynamicObject =
                    serde_json::from_value(co).map_err(OperatorError::Encode)?;
                report.status_written = true;
                let created =
                    serde_json::to_value(co_api.create(&PostParams::default(), &obj).await?)
                        .map_err(OperatorError::Encode)?;
                if let Some(c) = &self.caches {
                    c.wrote_cluster_operator(cached.as_ref(), created.clone());
                }
                created
            }
        };
        // A status this project cannot read is replaced.
        let previous: Option<ClusterOperatorStatus> = live
            .get("status")
            .and_then(|s| serde_json::from_value(s.clone()).ok());
        let now = crate::controller::pool_sync::now_rfc3339();
        let status = compute_status(&StatusInput {
            version: &self.opts.version,
            namespace: NAMESPACE,
            workloads: &workloads,
            pools: &pools,
            failure: report.failure.as_ref(),
            previous: previous.as_ref(),
            now: &now,
        });
        if previous.as_ref() != Some(&status) {
            let body = json!({ "status": status });
            let written = co_api
                .patch_status(
                    CLUSTER_OPERATOR_NAME,
                    &PatchParams::default(),
                    &Patch::Merge(&body),
                )
                .await?;
            if let Some(c) = &self.caches {
                let written = serde_json::to_value(&written).map_err(OperatorError::Encode)?;
                c.wrote_cluster_operator(cached.as_ref(), written);
            }
            report.status_written = true;
        }
        report.status = status;
        Ok(report)
    }
}

/// Runs the operator until the process stops: a pass at start, then one after every change
/// that concerns it (the workloads, pools, Nodes, MachineConfigNodes, MachineOSConfigs, the
/// objects it applies, the cluster config objects, the ConfigMaps and Secrets it reads), and
/// every `resync` (after a failed pass sooner, 1 s doubling to 30 s). Everything is read from
/// watch caches, each kind listed once at start-up.
pub async fn run(client: Client, opts: Options) -> Result<(), OperatorError> {
    run_with(&Registry::new(client), opts).await
}

/// [`run`] on the watches of `registry`.
pub async fn run_with(registry: &Registry, opts: Options) -> Result<(), OperatorError> {
    let (tx, mut rx) = mpsc::channel::<()>(1);
    let operator = Operator::watching(registry, opts.clone(), tx)?;
    operator.prestart();
    // Failed passes in a row: the next comes after a growing delay, or a change.
    let mut failures = 0u32;
    loop {
        let failed = match operator.sync_once().await {
            Ok(r) => {
                if let Some(f) = &r.failure {
                    tracing::warn!(task = %f.task, "sync failed: {}", f.message);
                }
                if r.wrote() {
                    tracing::info!(
                        created = r.created,
                        patched = r.patched,
                        machine_config_nodes = r.machine_config_nodes,
                        layering_secrets = r.layering_secrets,
                        status = r.status_written,
                        "synced"
                    );
                }
                r.failure.is_some()
            }
            Err(e) => {
                tracing::warn!("sync failed: {e}");
                true
            }
        };
        let wait = if failed {
            failures = failures.saturating_add(1);
            Backoff::TRANSIENT.delay(failures - 1).min(opts.resync)
        } else {
            failures = 0;
            opts.resync
        };
        let _ = tokio::time::timeout(wait, rx.recv()).await;
        tokio::time::sleep(opts.debounce).await;
        while rx.try_recv().is_ok() {}
    }
}
