//! Arbitrary bytes read as a manifest file holding KubeletConfigs, ContainerRuntimeConfigs,
//! pools, base MachineConfigs and cluster config objects; every resource is generated and the
//! results folded into the pools, as `mco-render generate` and `render` do.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mco_render::manifests::expand::{expand_manifests, ClusterOptions};
use mco_render::manifests::Manifests;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut m = Manifests::default();
    if m.add_file("fuzz", text).is_err() {
        return;
    }
    let _ = expand_manifests(&mut m, &ClusterOptions::default());
});
