// Shared by the render corpus tests, included with `#[path]`: one render case rendered and
// compared with the upstream result it records.
#![allow(dead_code)]

use mco_ignition::SpecVersion;
use mco_render::api::{ControllerConfigSpec, MachineConfig, MachineConfigPool};
use mco_render::render::render_pool_owned;
use mco_render::serve;
use mco_render::{render_pool, RenderOptions};
use serde_json::Value;

/// Renders one case as the newest release and compares the name, spec, sources and served
/// configs with upstream's.
pub fn run_case(case: &Value) -> Result<(), String> {
    run_case_as(case, &RenderOptions::default(), true)
}

/// Renders one case with `opts` (the release, the controller version) and compares the name,
/// spec and sources, and when `served`, the served configs, with the case's.
pub fn run_case_as(case: &Value, opts: &RenderOptions, served: bool) -> Result<(), String> {
    let pool: MachineConfigPool =
        serde_json::from_value(case["pool"].clone()).map_err(|e| e.to_string())?;
    let mcs: Vec<MachineConfig> =
        serde_json::from_value(case["machineConfigs"].clone()).map_err(|e| e.to_string())?;
    let cc: ControllerConfigSpec =
        serde_json::from_value(case["controllerConfig"].clone()).map_err(|e| e.to_string())?;
    let expected = &case["expected"];
    let got = render_pool(&pool, &mcs, &cc, opts);
    let owned = render_pool_owned(&pool, mcs.clone(), &cc, opts);
    if owned != got {
        return Err("render_pool_owned differs from render_pool".into());
    }
    let bytes = |r: &Result<mco_render::Rendered, _>| {
        r.as_ref()
            .ok()
            .and_then(|r| serde_json::to_vec(&r.machine_config).ok())
    };
    if bytes(&owned) != bytes(&got) {
        return Err("render_pool_owned writes other bytes than render_pool".into());
    }
    let exp_source: Vec<String> =
        serde_json::from_value(expected["source"].clone()).unwrap_or_default();
    match (got, expected["error"].as_str()) {
        (Ok(r), None) => {
            let spec = r.spec();
            if r.source != exp_source {
                return Err(format!("source {:?} != {:?}", r.source, exp_source));
            }
            if spec != expected["spec"] {
                return Err(format!(
                    "spec differs:\n got {}\nwant {}",
                    truncate(&spec.to_string()),
                    truncate(&expected["spec"].to_string())
                ));
            }
            if let Some(served) = expected["served"].as_object().filter(|_| served) {
                for (version, want) in served {
                    let v = SpecVersion::parse(version).ok_or("bad version in corpus")?;
                    let got = serve::convert_for(r.ignition(), v, &opts.release.profile());
                    match (got, want["error"].as_str()) {
                        (Ok(c), None) if c == want["config"] => {}
                        (Err(e), Some(w)) if e == w => {}
                        (got, _) => {
                            return Err(format!(
                                "served {version} differs: got {}\nwant {}",
                                truncate(&format!("{got:?}")),
                                truncate(&want.to_string())
                            ))
                        }
                    }
                }
            }
            let name = r.machine_config.metadata.name.clone();
            if Some(name.as_str()) != expected["renderedName"].as_str() {
                return Err(format!("name {name} != {}", expected["renderedName"]));
            }
            Ok(())
        }
        (Ok(r), Some(e)) => Err(format!(
            "rendered {} but upstream fails: {e}",
            r.machine_config.metadata.name
        )),
        (Err(f), None) => Err(format!("failed but upstream renders: {}", f)),
        (Err(f), Some(e)) => {
            let msg = f.first().map(|e| e.message.clone()).unwrap_or_default();
            if msg != e {
                return Err(format!("error differs:\n got {msg:?}\nwant {e:?}"));
            }
            if f.source != exp_source {
                return Err(format!("error source {:?} != {:?}", f.source, exp_source));
            }
            Ok(())
        }
    }
}

fn truncate(s: &str) -> String {
    s.chars().take(600).collect()
}
