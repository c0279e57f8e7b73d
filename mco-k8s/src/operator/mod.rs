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

pub mod apply;
pub mod embedded;
pub mod kinds;
pub mod layering;
pub mod machine_config_nodes;

use crate::objects::Model;
use crate::reflect::{wake_on, Wake};
use apply::{apply, Applied};
use kinds::kind_info;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Api, Client};
use mco_render::api::MachineOSConfig;
use mco_render::controllers::build::request::GLOBAL_PULL_SECRET_COPY;
use mco_render::controllers::operator::certificates::{
    ca_configmaps, ca_fields, kubeconfig_data, CaError, CaSources, ConfigMapRef, BOOTSTRAP,
    IMAGE_REGISTRY_CA, KUBE_APISERVER_CLIENT_CA, KUBE_APISERVER_SERVER_CA,
    KUBE_APISERVER_TO_KUBELET_CLIENT_CA, KUBE_CLOUD_CONFIG, MACHINE_CONFIG_SERVER_CA,
    OPENSHIFT_CONFIG, ROOT_CA,
};
use mco_render::controllers::operator::desired::is_workload;
use mco_render::controllers::operator::layering as layering_consts;
use mco_render::controllers::operator::status::{task_name, Workload};
use mco_render::controllers::operator::{
    compute_status, desired_objects, os_images_from_configmap, parse_manifests,
    ClusterConfigObjects, ClusterOperatorStatus, DesiredOptions, OsImagesError, StatusInput,
    SyncFailure, CLUSTER_OPERATOR_NAME, NAMESPACE, OS_IMAGE_URL_CONFIGMAP,
};
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
}

async fn get_value(api: &Api<DynamicObject>, name: &str) -> Result<Option<Value>, OperatorError> {
    match api.get_opt(name).await? {
        Some(o) => Ok(Some(
            serde_json::to_value(&o).map_err(OperatorError::Encode)?,
        )),
        None => Ok(None),
    }
}

fn api_all(client: &Client, kind: &str) -> Result<Api<DynamicObject>, OperatorError> {
    let info = kind_info(kind).ok_or_else(|| OperatorError::UnknownKind(kind.to_string()))?;
    Ok(Api::all_with(client.clone(), &info.resource))
}

impl Operator {
    /// Decodes the manifests; fails on a manifest that does not decode.
    pub fn new(client: Client, opts: Options) -> Result<Self, OperatorError> {
        let manifests = parse_manifests(&opts.manifests)?;
        Ok(Operator {
            client,
            opts,
            manifests,
        })
    }

    /// The cluster's config.openshift.io `cluster` objects and the release's OS images (the
    /// `machine-config-osimageurl` ConfigMap in the operator's namespace). A missing object
    /// (or API group) is absent; any other error, or a ConfigMap for another release, fails
    /// the pass.
    async fn cluster_config(&self) -> Result<ClusterConfigObjects, OperatorError> {
        let absent_if_missing = |r: Result<Option<Value>, OperatorError>| match r {
            Err(OperatorError::Kube(kube::Error::Api(e))) if e.code == 404 => Ok(None),
            other => other,
        };
        let get = |kind: &'static str| async move {
            let api = api_all(&self.client, kind)?;
            absent_if_missing(get_value(&api, "cluster").await)
        };
        let os_images = match kind_info("ConfigMap") {
            Some(info) => {
                let api = Api::namespaced_with(self.client.clone(), NAMESPACE, &info.resource);
                match absent_if_missing(get_value(&api, OS_IMAGE_URL_CONFIGMAP).await)? {
                    Some(cm) => os_images_from_configmap(&cm, &self.opts.version)?,
                    None => Default::default(),
                }
            }
            None => Default::default(),
        };
        let proxy = get("Proxy").await?;
        let image = get("Image").await?;
        let mut configmaps = std::collections::BTreeMap::new();
        if let Some(info) = kind_info("ConfigMap") {
            for r in ca_configmaps(proxy.as_ref(), image.as_ref()) {
                let api = Api::namespaced_with(self.client.clone(), &r.namespace, &info.resource);
                if let Some(cm) = absent_if_missing(get_value(&api, &r.name).await)? {
                    configmaps.insert(r, cm);
                }
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
        let cluster = self.cluster_config().await?;
        let mut objects = desired_objects(
            &self.manifests,
            &DesiredOptions {
                image: self.opts.image.clone(),
                version: self.opts.version.clone(),
            },
            &cluster,
        );
        if let Some(ca) = self.webhook_ca().await {
            for o in &mut objects {
                mco_render::admission::set_ca_bundle(o, &ca);
            }
        }
        Ok(objects)
    }

    /// The webhook certificate Secret's `ca.crt` (base64), when it has one (cert-manager's
    /// do; OpenShift's service CA fills `caBundle` itself). Unreadable means none.
    async fn webhook_ca(&self) -> Option<String> {
        let info = kind_info("Secret")?;
        let api = Api::namespaced_with(self.client.clone(), NAMESPACE, &info.resource);
        let secret = get_value(&api, mco_render::admission::WEBHOOK_TLS_SECRET)
            .await
            .ok()??;
        let ca = secret.pointer("/data/ca.crt")?.as_str()?;
        (!ca.is_empty()).then(|| ca.to_string())
    }

    /// One pass: apply every object in order (stopping at the first failure), then read the
    /// workloads and pools back and write the ClusterOperator status if it changed.
    pub async fn sync_once(&self) -> Result<SyncReport, OperatorError> {
        let mut report = SyncReport::default();
        let desired = match self.desired().await {
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
                match apply(&self.client, obj).await {
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
            match machine_config_nodes::sync(&self.client).await {
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
            match layering::sync(&self.client).await {
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
            let (api, _) = apply::api_for(&self.client, obj)?;
            let name = obj
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            workloads.push(Workload {
                kind: obj["kind"].as_str().unwrap_or("").to_string(),
                name: name.to_string(),
                observed: get_value(&api, name).await?,
            });
        }
        let pools = machine_config_nodes::list_pools(&self.client).await?;
        let co_api = api_all(&self.client, "ClusterOperator")?;
        let live = match get_value(&co_api, CLUSTER_OPERATOR_NAME).await? {
            Some(l) => l,
            None => {
                let co = json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
                                "metadata": {"name": CLUSTER_OPERATOR_NAME}, "spec": {}});
                let obj: DynamicObject =
                    serde_json::from_value(co).map_err(OperatorError::Encode)?;
                report.status_written = true;
                serde_json::to_value(co_api.create(&PostParams::default(), &obj).await?)
                    .map_err(OperatorError::Encode)?
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
            co_api
                .patch_status(
                    CLUSTER_OPERATOR_NAME,
                    &PatchParams::default(),
                    &Patch::Merge(&body),
                )
                .await?;
            report.status_written = true;
        }
        report.status = status;
        Ok(report)
    }
}

/// The CA ConfigMaps watched by name (the `openshift-config` namespace is watched whole: the
/// Proxy and the Image `cluster` name ConfigMaps there).
const WATCHED_CA_CONFIGMAPS: &[(&str, &str)] = &[
    BOOTSTRAP,
    ROOT_CA,
    KUBE_APISERVER_CLIENT_CA,
    KUBE_APISERVER_SERVER_CA,
    IMAGE_REGISTRY_CA,
    KUBE_CLOUD_CONFIG,
    KUBE_APISERVER_TO_KUBELET_CLIENT_CA,
    MACHINE_CONFIG_SERVER_CA,
];

/// Runs the operator until the process stops: a pass at start, then one after every change
/// to the workloads, pools, cluster config objects, the OS images ConfigMap or a CA
/// ConfigMap, and every `resync`.
pub async fn run(client: Client, opts: Options) -> Result<(), OperatorError> {
    let operator = Operator::new(client.clone(), opts.clone())?;
    let (tx, mut rx) = mpsc::channel::<()>(1);
    let mut watchers = Vec::new();
    for kind in ["Deployment", "DaemonSet"] {
        if let Some(info) = kind_info(kind) {
            let api = Api::namespaced_with(client.clone(), NAMESPACE, &info.resource);
            let cfg = watcher::Config::default();
            let ar = info.resource.clone();
            watchers.push(wake_on(api, cfg, ar, "workloads", Wake::Every, tx.clone()));
        }
    }
    if let Some(info) = kind_info("ConfigMap") {
        let api = Api::namespaced_with(client.clone(), NAMESPACE, &info.resource);
        let only =
            watcher::Config::default().fields(&format!("metadata.name={OS_IMAGE_URL_CONFIGMAP}"));
        let ar = info.resource.clone();
        watchers.push(wake_on(api, only, ar, "OS images", Wake::Every, tx.clone()));
        for (namespace, name) in WATCHED_CA_CONFIGMAPS {
            let r = ConfigMapRef {
                namespace: namespace.to_string(),
                name: name.to_string(),
            };
            debug_assert!(ca_configmaps(None, None).contains(&r));
            let api = Api::namespaced_with(client.clone(), namespace, &info.resource);
            let only = watcher::Config::default().fields(&format!("metadata.name={name}"));
            let ar = info.resource.clone();
            watchers.push(wake_on(
                api,
                only,
                ar,
                "CA ConfigMaps",
                Wake::Every,
                tx.clone(),
            ));
        }
        let api = Api::namespaced_with(client.clone(), OPENSHIFT_CONFIG, &info.resource);
        let ar = info.resource.clone();
        watchers.push(wake_on(
            api,
            watcher::Config::default(),
            ar,
            "openshift-config ConfigMaps",
            Wake::Every,
            tx.clone(),
        ));
    }
    for kind in [
        "MachineConfigPool",
        "Infrastructure",
        "Network",
        "DNS",
        "Proxy",
        "Image",
    ] {
        let api = api_all(&client, kind)?;
        let ar = kind_info(kind)
            .map(|i| i.resource.clone())
            .ok_or_else(|| OperatorError::UnknownKind(kind.to_string()))?;
        watchers.push(wake_on(
            api,
            watcher::Config::default(),
            ar,
            kind,
            Wake::Every,
            tx.clone(),
        ));
    }
    // Pools opting into layering and out, and what the layering Secrets copy.
    let moscs = MachineOSConfig::KIND.api_resource();
    watchers.push(wake_on(
        Api::<DynamicObject>::all_with(client.clone(), &moscs),
        watcher::Config::default(),
        moscs,
        "MachineOSConfigs",
        Wake::SpecChanges,
        tx.clone(),
    ));
    let secrets = kube::api::ApiResource::erase::<k8s_openapi::api::core::v1::Secret>(&());
    for (namespace, name) in [
        (
            layering_consts::PULL_SECRET_NAMESPACE,
            layering_consts::PULL_SECRET,
        ),
        (
            layering_consts::ENTITLEMENT_NAMESPACE,
            layering_consts::ENTITLEMENT_SECRET,
        ),
        (NAMESPACE, GLOBAL_PULL_SECRET_COPY),
    ] {
        watchers.push(wake_on(
            Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &secrets),
            watcher::Config::default().fields(&format!("metadata.name={name}")),
            secrets.clone(),
            "layering Secrets",
            Wake::Every,
            tx.clone(),
        ));
    }
    // Nodes joining and leaving: their MachineConfigNodes.
    let nodes = kube::api::ApiResource::erase::<k8s_openapi::api::core::v1::Node>(&());
    watchers.push(wake_on(
        Api::all_with(client.clone(), &nodes),
        watcher::Config::default(),
        nodes,
        "Nodes",
        Wake::SpecChanges,
        tx.clone(),
    ));
    loop {
        match operator.sync_once().await {
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
            }
            Err(e) => tracing::warn!("sync failed: {e}"),
        }
        let _ = tokio::time::timeout(opts.resync, rx.recv()).await;
        tokio::time::sleep(opts.debounce).await;
        while rx.try_recv().is_ok() {}
    }
}
