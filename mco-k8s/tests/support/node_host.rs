//! A machine's disk for the real node agent in tests: a temporary host root already on a
//! rendered config, as the machine booted with it.

use mco_node::apply::{run_update, ApplyOptions};
use mco_node::{DesiredConfig, HostRoot, NodeState, RecordingHost};
use mco_render::api::MachineConfig;

/// A host root already on `mc`, as the machine booted with it.
pub fn root_on(mc: &MachineConfig) -> (tempfile::TempDir, HostRoot) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("etc")).unwrap();
    std::fs::write(
        dir.path().join("etc/passwd"),
        "root:x:0:0::/root:/bin/sh\ncore:x:1000:1000::/home/core:/bin/sh\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("etc/group"), "root:x:0:\ncore:x:1000:\n").unwrap();
    let root = HostRoot::new(dir.path()).unwrap();
    let bytes = serde_json::to_vec(mc).unwrap();
    let config = DesiredConfig::from_bytes(&bytes, mc.name()).unwrap();
    let opts = ApplyOptions {
        check_drift: false,
        reboot: mco_node::apply::RebootMode::Deferred,
        drained: true,
        policies: None,
    };
    let out = run_update(
        &root,
        &mut RecordingHost::new(),
        &DesiredConfig::empty(),
        &config,
        opts,
        None,
    );
    assert_eq!(out.status.state, NodeState::Done, "{:?}", out.log);
    (dir, root)
}
