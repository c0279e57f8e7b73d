//! The example cluster on the test API server, and what the pure library renders from it.

use super::apiserver::{resource, ApiServer};
use super::yaml_docs;
use mco_render::api::{ControllerConfig, MachineConfig, MachineConfigPool};
use mco_render::controllers::render_sync::sync_pool;
use mco_render::RenderOptions;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `examples/cluster` of the repository.
pub fn examples() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/cluster")).into()
}

/// A path of the repository.
pub fn repo(path: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join(path)
}

/// Controller options for the generating controllers' tests: quick passes, no garbage
/// collection, the repository's templates.
pub fn generating_options() -> mco_k8s::controller::Options {
    let templates = mco_k8s::controller::templates::read_tree(&repo("templates"))
        .unwrap_or_else(|e| panic!("templates: {e}"));
    mco_k8s::controller::Options {
        debounce: std::time::Duration::from_millis(20),
        resync: std::time::Duration::from_secs(1),
        gc_keep: None,
        templates: Some(templates),
        ..mco_k8s::controller::Options::default()
    }
}

/// The render controller and the generating controllers, as machine-config-controller runs
/// them, with [`generating_options`].
pub fn start_all_controllers(client: kube::Client) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let generators = mco_k8s::controller::generators::run(client.clone(), generating_options());
        tokio::select! {
            r = mco_k8s::controller::run(client, generating_options()) => {
                if let Err(e) = r {
                    panic!("controller stopped: {e}");
                }
            }
            () = generators => {}
        }
    })
}

/// Decodes a stored object into the project's model.
pub fn decode<T: serde::de::DeserializeOwned>(v: &Value) -> T {
    serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("decoding {v}: {e}"))
}

/// Stores the example cluster's pools, ControllerConfig and MachineConfigs.
pub fn seed_examples(server: &ApiServer) {
    let mut files: Vec<PathBuf> = std::fs::read_dir(examples())
        .unwrap_or_else(|e| panic!("examples: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    for f in files {
        for obj in yaml_docs(&f) {
            let plural = match obj["kind"].as_str() {
                Some("MachineConfigPool") => "machineconfigpools",
                Some("MachineConfig") => "machineconfigs",
                Some("ControllerConfig") => "controllerconfigs",
                _ => continue,
            };
            let def = resource(plural).unwrap_or_else(|| panic!("{plural} not served"));
            server
                .store
                .create(def, "", obj)
                .unwrap_or_else(|e| panic!("{}: {e:?}", f.display()));
        }
    }
}

/// The rendered MachineConfig the controller will make for `pool` from what the server holds.
pub fn expected_rendered(server: &ApiServer, pool: &str, opts: &RenderOptions) -> MachineConfig {
    let mcs: Vec<MachineConfig> = server
        .store
        .list("machineconfigs")
        .iter()
        .map(decode)
        .collect();
    let p: MachineConfigPool = decode(
        &server
            .store
            .get("machineconfigpools", "", pool)
            .unwrap_or_else(|| panic!("pool {pool} missing")),
    );
    let cc: ControllerConfig = decode(
        &server
            .store
            .get("controllerconfigs", "", "machine-config-controller")
            .unwrap_or_else(|| panic!("ControllerConfig missing")),
    );
    let rs = sync_pool(&p, &mcs, Some(&cc), opts, "now");
    assert!(rs.error.is_none(), "{:?}", rs.error);
    rs.create
        .unwrap_or_else(|| panic!("no rendered config for {pool}"))
}
