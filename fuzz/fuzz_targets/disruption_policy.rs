//! Arbitrary bytes as a `MachineConfiguration` (its node disruption policies and
//! reconcilability overrides), alone or in a plan case (`{"old", "new", "machineConfiguration"}`
//! as in `testdata/conformance/plan`). The policies are merged with the built-in ones and the
//! actions computed for the user's own paths and units, and for the case's MachineConfigs the
//! whole update plan. The merged policies keep every user entry; every action has its triggers;
//! a file's closest policy covers it; a MachineConfiguration reads back as written.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mco_render::api::MachineConfig;
use mco_render::plan::input::rendered_input;
use mco_render::plan::policy::{actions_for_changes, closest_file_policy, merge_cluster_policies};
use mco_render::plan::{compute, MachineConfiguration};
use serde_json::Value;

fn check_policies(mc: &MachineConfiguration) {
    let back: MachineConfiguration =
        serde_json::from_value(serde_json::to_value(mc).expect("serialises"))
            .expect("a MachineConfiguration reads back");
    assert_eq!(&back, mc);
    let user = &mc.spec.node_disruption_policy;
    let merged = merge_cluster_policies(user);
    for f in &user.files {
        assert!(
            merged.files.iter().any(|m| m.path == f.path),
            "{} lost",
            f.path
        );
    }
    for u in &user.units {
        assert!(
            merged.units.iter().any(|m| m.name == u.name),
            "{} lost",
            u.name
        );
    }
    let files: Vec<String> = user
        .files
        .iter()
        .map(|f| format!("{}/x", f.path))
        .chain(user.files.iter().map(|f| f.path.clone()))
        .chain([
            "/etc/containers/registries.conf".to_string(),
            "/etc/motd".to_string(),
        ])
        .collect();
    for f in &files {
        if let Some(p) = closest_file_policy(f, &merged.files) {
            let dir = format!("{}/", mco_render::plan::policy::clean_path(&p.path));
            assert!(
                p.path == *f || mco_render::plan::policy::clean_path(f).starts_with(&dir),
                "{f} matched policy {}",
                p.path
            );
        }
    }
    let units: Vec<String> = user.units.iter().map(|u| u.name.clone()).collect();
    for ssh in [false, true] {
        let traced = actions_for_changes(ssh, &files, &units, &merged);
        assert_eq!(traced.actions.len(), traced.triggers.len());
        let traced = actions_for_changes(ssh, &[], &units, &merged);
        assert_eq!(traced.actions.len(), traced.triggers.len());
    }
}

fn machine_config(v: &Value) -> Option<MachineConfig> {
    serde_json::from_value(v.clone()).ok()
}

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let (policies, old, new) = if v.get("old").is_some() {
        (
            v.get("machineConfiguration")
                .cloned()
                .unwrap_or(Value::Null),
            v.get("old").and_then(machine_config),
            v.get("new").and_then(machine_config),
        )
    } else {
        (v, None, None)
    };
    let mc = if policies.is_null() {
        None
    } else {
        match serde_json::from_value::<MachineConfiguration>(policies) {
            Ok(mc) => Some(mc),
            Err(_) => return,
        }
    };
    if let Some(mc) = &mc {
        check_policies(mc);
    }
    let (Some(old), Some(new)) = (old, new) else {
        return;
    };
    let (Ok(old), Ok(new)) = (
        rendered_input(&old.metadata.name, &old.spec),
        rendered_input(&new.metadata.name, &new.spec),
    ) else {
        return;
    };
    let plan = compute(&old, &new, mc.as_ref());
    assert_eq!(
        plan.node_disruption.actions.len(),
        plan.node_disruption.triggers.len()
    );
    let again = compute(&old, &new, mc.as_ref());
    assert_eq!(
        plan.node_disruption, again.node_disruption,
        "the plan is deterministic"
    );
});
