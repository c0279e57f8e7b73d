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

use kube::api::{ApiResource, DynamicObject};
use kube::runtime::watcher;
use kube::{Api, Client};
use mco_render::api::ControllerConfigSpec;
use mco_render::controllers::backoff::Backoff;
use mco_render::controllers::operator::certificates::configmap_bytes;
use mco_render::controllers::operator::{CONTROLLER_CONFIG_NAME, NAMESPACE};
use tokio::sync::watch;

use super::watches::{follow, Crd, Seen, WatchOptions};
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
/// not exist, or while the server does not serve its API), re-watching after errors (see
/// [`super::watches`]).
fn watch_one(
    api: Api<DynamicObject>,
    crd: Option<Crd>,
    name: &str,
    opts: WatchOptions,
    what: &'static str,
) -> watch::Receiver<Option<DynamicObject>> {
    let (tx, rx) = watch::channel(None);
    let cfg = opts.named(name);
    tokio::spawn(async move {
        // What a (re-)list found, until it is done.
        let mut listed: Option<Option<DynamicObject>> = None;
        follow(api, crd, cfg, opts, what, |seen| {
            let update = match seen {
                Seen::Event(watcher::Event::Init) => {
                    listed = Some(None);
                    return true;
                }
                Seen::Event(watcher::Event::InitApply(o)) => {
                    listed = Some(Some(o));
                    return true;
                }
                Seen::Event(watcher::Event::InitDone) => match listed.take() {
                    Some(o) => o,
                    None => return true,
                },
                Seen::Event(watcher::Event::Apply(o)) => Some(o),
                Seen::Event(watcher::Event::Delete(_)) | Seen::Absent => None,
            };
            // Only a new version wakes the writer: a re-list of the same object does not.
            let rv =
                |o: &Option<DynamicObject>| o.as_ref().map(|o| o.metadata.resource_version.clone());
            tx.send_if_modified(|held| {
                let changed = rv(held) != rv(&update);
                *held = update;
                changed
            });
            !tx.is_closed()
        })
        .await;
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
    run_with(client, root, WatchOptions::for_node("")).await
}

/// [`run`] with the agent's watch options.
pub async fn run_with(client: Client, root: HostRoot, opts: WatchOptions) {
    let ccs: Api<DynamicObject> = Api::all_with(client.clone(), &controller_config_resource());
    let cms: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), NAMESPACE, &configmap_resource());
    let mut cc = watch_one(
        ccs,
        Crd::of(&client, &controller_config_resource()),
        CONTROLLER_CONFIG_NAME,
        opts,
        "ControllerConfig",
    );
    let mut kc = watch_one(
        cms,
        None,
        KUBECONFIG_DATA_CONFIGMAP,
        opts,
        "kubeconfig-data ConfigMap",
    );
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
