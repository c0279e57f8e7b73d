//! The certificate writer: watches the `machine-config-controller` ControllerConfig and the
//! `kubeconfig-data` ConfigMap (the kube-apiserver's serving CA for the node's kubeconfig)
//! and rewrites the node's CA files whenever they change ([`crate::certs::sync`]), as
//! upstream's daemon does in `pkg/daemon/certificate_writer.go`.
//!
//! It runs beside the agent's update loop and shares nothing with it: no update, no drain,
//! no reboot, no host command, and no write to the Node (upstream records the ControllerConfig
//! resourceVersion it synced in a Node annotation; here the files themselves say what was
//! synced, and a write happens only when their bytes change).

use std::time::Duration;

use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::watcher;
use kube::{Api, Client};
use mco_render::api::ControllerConfigSpec;
use mco_render::controllers::backoff::Backoff;
use mco_render::controllers::operator::certificates::configmap_bytes;
use mco_render::controllers::operator::{CONTROLLER_CONFIG_NAME, NAMESPACE};
use tokio::sync::watch;

use crate::certs::{self, CertReport};
use crate::root::HostRoot;

/// The ConfigMap (in the MCO's namespace) whose `ca-bundle.crt` the node's kubeconfig trusts.
pub const KUBECONFIG_DATA_CONFIGMAP: &str = "kubeconfig-data";

/// The ControllerConfig resource (cluster-scoped, `machineconfiguration.openshift.io/v1`).
pub fn controller_config_resource() -> ApiResource {
    ApiResource {
        group: "machineconfiguration.openshift.io".into(),
        version: "v1".into(),
        api_version: "machineconfiguration.openshift.io/v1".into(),
        kind: "ControllerConfig".into(),
        plural: "controllerconfigs".into(),
    }
}

fn configmap_resource() -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
    }
}

/// Keeps the latest state of the object `name` of `api` in a channel (`None` while it does
/// not exist), re-watching with backoff after errors: a few seconds for a transient one,
/// minutes while the API is not served.
fn watch_one(
    api: Api<DynamicObject>,
    name: &str,
    what: &'static str,
) -> watch::Receiver<Option<DynamicObject>> {
    let (tx, rx) = watch::channel(None);
    let cfg = watcher::Config::default().fields(&format!("metadata.name={name}"));
    tokio::spawn(async move {
        let mut stream = watcher(api, cfg).boxed();
        let mut attempt = 0u32;
        while let Some(ev) = stream.next().await {
            let update = match ev {
                Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => Some(Some(o)),
                Ok(watcher::Event::Delete(_)) => Some(None),
                Ok(watcher::Event::Init | watcher::Event::InitDone) => None,
                Err(e) => {
                    let absent = matches!(
                        &e,
                        watcher::Error::InitialListFailed(kube::Error::Api(s)) if s.code == 404
                    );
                    let policy = if absent {
                        Backoff::ABSENT_API
                    } else {
                        Backoff::TRANSIENT
                    };
                    let delay = policy.delay(attempt);
                    attempt = attempt.saturating_add(1);
                    tracing::debug!("{what} watch: {e}; retrying in {delay:?}");
                    tokio::time::sleep(delay).await;
                    continue;
                }
            };
            attempt = 0;
            if let Some(o) = update {
                if tx.send(o).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

/// The spec of a ControllerConfig object.
fn spec_of(obj: &DynamicObject) -> Result<ControllerConfigSpec, String> {
    let spec = obj.data.get("spec").cloned().unwrap_or_default();
    serde_json::from_value(spec).map_err(|e| format!("ControllerConfig spec: {e}"))
}

/// The kubeconfig CA of a `kubeconfig-data` ConfigMap.
fn kubeconfig_ca(obj: &DynamicObject) -> Option<Vec<u8>> {
    let v = serde_json::to_value(obj).ok()?;
    configmap_bytes(&v, "ca-bundle.crt")
}

/// One pass: the files brought to the ControllerConfig's CA data and the kubeconfig CA.
async fn apply(
    root: &HostRoot,
    cc: &DynamicObject,
    kubeconfig: Option<&DynamicObject>,
) -> Result<CertReport, String> {
    let spec = spec_of(cc)?;
    let ca = kubeconfig.and_then(kubeconfig_ca);
    let root = root.clone();
    tokio::task::spawn_blocking(move || certs::sync(&root, &spec, ca.as_deref()))
        .await
        .map_err(|e| format!("certificate writer task: {e}"))?
        .map_err(|e| e.to_string())
}

/// Runs the certificate writer until both watches end (never, while the client works):
/// every change of the `machine-config-controller` ControllerConfig or of the
/// `kubeconfig-data` ConfigMap brings the CA files under `root` up to date. A failed pass is
/// logged and retried with backoff; nothing else on the node is touched.
pub async fn run(client: Client, root: HostRoot) {
    let ccs: Api<DynamicObject> = Api::all_with(client.clone(), &controller_config_resource());
    let cms: Api<DynamicObject> = Api::namespaced_with(client, NAMESPACE, &configmap_resource());
    let mut cc = watch_one(ccs, CONTROLLER_CONFIG_NAME, "ControllerConfig");
    let mut kc = watch_one(cms, KUBECONFIG_DATA_CONFIGMAP, "kubeconfig-data ConfigMap");
    let mut failures = 0u32;
    let mut retry: Option<Duration> = None;
    loop {
        let wait_retry = async {
            match retry {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = cc.changed() => if r.is_err() { return },
            r = kc.changed() => if r.is_err() { return },
            _ = wait_retry => {}
        }
        let current = cc.borrow_and_update().clone();
        let Some(current) = current else {
            retry = None;
            continue;
        };
        let kubeconfig = kc.borrow_and_update().clone();
        let rv = current
            .metadata
            .resource_version
            .clone()
            .unwrap_or_default();
        match apply(&root, &current, kubeconfig.as_ref()).await {
            Ok(report) => {
                failures = 0;
                retry = None;
                for w in &report.warnings {
                    tracing::warn!("certificates: {w}");
                }
                if report.changed() {
                    tracing::info!(
                        written = ?report.written,
                        removed = ?report.removed,
                        "Certificate was synced from controllerconfig resourceVersion {rv}"
                    );
                }
            }
            Err(e) => {
                let delay = Backoff::TRANSIENT.delay(failures);
                failures = failures.saturating_add(1);
                tracing::warn!("certificates from ControllerConfig resourceVersion {rv}: {e}; retrying in {delay:?}");
                retry = Some(delay);
            }
        }
    }
}
