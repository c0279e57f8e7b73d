//! Rendered names of real clusters: the dumps of `oc adm upgrade status`'s examples that hold
//! MachineConfigs with their specs (OpenShift 4.16 to 4.20 clusters). For each pool, its
//! sources (`spec.configuration.source`) rendered as the cluster's release (read from the
//! rendered config's `release-image-version`, as `mco-render` reads a dump) and controller
//! version must give the name the cluster's MCO chose, byte for byte.
//!
//! A dump whose stored rendered spec does not hash to its own name cannot be matched by any
//! renderer (the stored object is not what was named); there the rendered spec must equal the
//! stored one, and the test says which.
//!
//! The dumps belong to the `oc` repository and hold upstream's template MachineConfigs, so they
//! are not copied here: point `OC_STATUS_EXAMPLES` at `pkg/cli/admin/upgrade/status/examples`
//! of a clone of openshift/oc. Without it the test says so loudly and checks nothing.

use mco_render::api::machine_config::RELEASE_IMAGE_VERSION_ANNOTATION;
use mco_render::api::{ControllerConfigSpec, MachineConfig, MachineConfigPool};
use mco_render::release::Release;
use mco_render::render::name::rendered_name;
use mco_render::{render_pool, RenderOptions};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn items(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: Value =
        serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    v["items"].as_array().cloned().unwrap_or_default()
}

/// One pool's check: `Ok(true)` when the name matches, `Ok(false)` when the cluster's stored
/// spec does not hash to its own name but ours equals it; `Err` otherwise.
fn check_pool(pool: &Value, by_name: &[Value]) -> Result<bool, String> {
    let target = pool["spec"]["configuration"]["name"].as_str().unwrap_or("");
    let find = |n: &str| by_name.iter().find(|m| m["metadata"]["name"] == n);
    let rendered = find(target).ok_or_else(|| format!("{target} is not in the dump"))?;
    let annotations = &rendered["metadata"]["annotations"];
    let version = annotations[RELEASE_IMAGE_VERSION_ANNOTATION]
        .as_str()
        .unwrap_or("");
    let release = Release::parse(version).map_err(|e| e.to_string())?;
    let controller_version = annotations
        ["machineconfiguration.openshift.io/generated-by-controller-version"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let mut sources = Vec::new();
    for s in pool["spec"]["configuration"]["source"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let name = s["name"].as_str().unwrap_or("");
        let mc = find(name).ok_or_else(|| format!("source {name} is not in the dump"))?;
        let mut mc: MachineConfig =
            serde_json::from_value(mc.clone()).map_err(|e| e.to_string())?;
        // Selected by the pool as its sources were: one label they all carry here.
        mc.metadata
            .labels
            .insert("select.test/pool".into(), "yes".into());
        sources.push(mc);
    }
    let mut p: MachineConfigPool =
        serde_json::from_value(pool.clone()).map_err(|e| e.to_string())?;
    p.spec.machine_config_selector = Some(
        serde_json::from_value(serde_json::json!({"matchLabels": {"select.test/pool": "yes"}}))
            .map_err(|e| e.to_string())?,
    );
    // The ControllerConfig's images, as the rendered config took them.
    let cc = ControllerConfigSpec {
        base_os_container_image: rendered["spec"]["osImageURL"].as_str().unwrap_or("").into(),
        base_os_extensions_container_image: rendered["spec"]["baseOSExtensionsContainerImage"]
            .as_str()
            .unwrap_or("")
            .into(),
        ..ControllerConfigSpec::default()
    };
    let opts = RenderOptions {
        release,
        controller_version,
        ..RenderOptions::default()
    };
    let r = render_pool(&p, &sources, &cc, &opts).map_err(|f| f.to_string())?;
    let name = r.machine_config.metadata.name.clone();
    if name == target {
        return Ok(true);
    }
    let pool_name = p.metadata.name.as_str();
    let stored_hash = rendered_name(pool_name, &rendered["spec"]);
    if stored_hash != target && r.spec() == rendered["spec"] {
        return Ok(false);
    }
    Err(format!(
        "rendered {name} as {release}, the cluster named it {target} (its stored spec hashes to {stored_hash})"
    ))
}

#[test]
fn real_clusters_rendered_names_are_reproduced_under_their_release() {
    let Some(dir) = std::env::var_os("OC_STATUS_EXAMPLES").map(PathBuf::from) else {
        eprintln!(
            "SKIP: OC_STATUS_EXAMPLES is not set; real clusters' rendered names were not checked"
        );
        return;
    };
    let mut dumps: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with("-mc.yaml"))
        .collect();
    dumps.sort();
    let (mut matched, mut altered, mut failures) = (Vec::new(), Vec::new(), Vec::new());
    for mc_file in &dumps {
        let mcs = items(mc_file);
        // Dumps trimmed to metadata only hold no specs to render.
        if mcs.is_empty() || mcs.iter().any(|m| m.get("spec").is_none()) {
            continue;
        }
        let stem = mc_file
            .to_string_lossy()
            .trim_end_matches("-mc.yaml")
            .to_string();
        let example = Path::new(&stem)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for pool in items(Path::new(&format!("{stem}-mcp.yaml"))) {
            let what = format!(
                "{example}/{}",
                pool["metadata"]["name"].as_str().unwrap_or("")
            );
            match check_pool(&pool, &mcs) {
                Ok(true) => matched.push(what),
                Ok(false) => altered.push(what),
                Err(e) => failures.push(format!("{what}: {e}")),
            }
        }
    }
    eprintln!(
        "real clusters: {} pools' rendered names reproduced ({}); {} whose stored spec does not hash to its name rendered to that spec ({})",
        matched.len(),
        matched.join(", "),
        altered.len(),
        altered.join(", ")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        !matched.is_empty(),
        "no dump with MachineConfig specs in {}",
        dir.display()
    );
}
