//! Arbitrary bytes read as a manifest file, then every pool found rendered. Whatever decodes is
//! written back as one JSON list and read again, so both the YAML and the JSON readers run.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mco_render::manifests::Manifests;
use mco_render::render::{render_pool, RenderOptions};
use serde_json::Value;

fn render_all(m: &Manifests) {
    let controller = m
        .controller_config
        .as_ref()
        .map(|(_, c)| c.spec.clone())
        .unwrap_or_default();
    let configs = m.configs();
    for (_, pool) in &m.pools {
        if let Ok(r) = render_pool(pool, &configs, &controller, &RenderOptions::default()) {
            let _ = serde_json::to_vec(&r.machine_config);
        }
    }
}

fn as_json_list(m: &Manifests) -> Option<String> {
    let mut items: Vec<Value> = Vec::new();
    for (_, p) in &m.pools {
        items.push(serde_json::to_value(p).ok()?);
    }
    for (_, mc) in &m.machine_configs {
        items.push(serde_json::to_value(mc).ok()?);
    }
    if let Some((_, c)) = &m.controller_config {
        items.push(serde_json::to_value(c).ok()?);
    }
    serde_json::to_string(&items).ok()
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut m = Manifests::default();
    if m.add_file("fuzz", text).is_err() {
        return;
    }
    render_all(&m);
    if let Some(json) = as_json_list(&m) {
        let mut again = Manifests::default();
        if again.add_file("fuzz.json", &json).is_ok() {
            render_all(&again);
        }
    }
});
