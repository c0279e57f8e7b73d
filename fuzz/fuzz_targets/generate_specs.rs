//! Arbitrary bytes as the `spec` of a KubeletConfig or ContainerRuntimeConfig (the first byte
//! picks the kind; YAML or JSON), generated into MachineConfigs by `controllers::generate` over
//! the cluster of `mco-render/tests/generate_fixtures/cluster` (its pools, role templates and
//! feature gates), so the generators run to the end rather than stopping for want of a pool. A
//! spec without a pool selector gets the worker pool's. Every failure names the resource; every
//! generated MachineConfig holds an Ignition config that parses.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mco_render::manifests::expand::{expand_manifests, ClusterOptions};
use mco_render::manifests::Manifests;
use serde_json::{json, Value};

const FIXTURES: [(&str, &str); 3] = [
    (
        "00-pools.yaml",
        include_str!("../../mco-render/tests/generate_fixtures/cluster/00-pools.yaml"),
    ),
    (
        "01-templates.json",
        include_str!("../../mco-render/tests/generate_fixtures/cluster/01-templates.json"),
    ),
    (
        "02-cluster-config.yaml",
        include_str!("../../mco-render/tests/generate_fixtures/cluster/02-cluster-config.yaml"),
    ),
];

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let Ok(mut spec) = serde_yaml_ng::from_str::<Value>(text) else {
        return;
    };
    if let Some(o) = spec.as_object_mut() {
        o.entry("machineConfigPoolSelector").or_insert_with(|| {
            json!({"matchLabels": {"pools.operator.machineconfiguration.openshift.io/worker": ""}})
        });
    }
    let kind = if which & 1 == 0 {
        "KubeletConfig"
    } else {
        "ContainerRuntimeConfig"
    };
    let object = json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": kind,
        "metadata": {"name": "fuzzed"},
        "spec": spec,
    });
    let mut m = Manifests::default();
    for (name, text) in FIXTURES {
        m.add_file(name, text).expect("the fixtures read");
    }
    if m.add_file("fuzzed.json", &object.to_string()).is_err() {
        return;
    }
    let errors = expand_manifests(&mut m, &ClusterOptions::default());
    for e in &errors {
        assert!(!e.message.is_empty(), "an error says what is wrong");
        if e.kind == kind {
            assert_eq!(e.name, "fuzzed", "the error names the resource");
        }
    }
    for (_, mc) in &m.machine_configs {
        if let Some(config) = &mc.spec.config {
            if let Err(e) = mco_ignition::parse::parse_value(config) {
                panic!("generated {} does not parse: {e:?}", mc.metadata.name);
            }
        }
    }
});
