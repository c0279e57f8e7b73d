// Shared helpers for the conformance tests (included with `#[path]`).

use mco_ignition::model::Config;
use mco_render::reconcile::RenderedInput;
use serde_json::Value;

pub fn corpus_dir() -> std::path::PathBuf {
    std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/conformance"
    ))
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Builds a rendered input from a name and an MC spec; `Err` when the config does not decode.
pub fn rendered_input(name: &str, spec: &Value) -> Result<RenderedInput, String> {
    let s = |k: &str| {
        spec.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let config = match spec.get("config") {
        Some(c) if !c.is_null() => Config::from_value(c).map_err(|e| e.to_string())?,
        _ => Config::default(),
    };
    Ok(RenderedInput {
        name: name.to_string(),
        os_image_url: s("osImageURL"),
        base_os_extensions_container_image: s("baseOSExtensionsContainerImage"),
        fips: spec.get("fips").and_then(Value::as_bool).unwrap_or(false),
        kernel_arguments: strings(spec.get("kernelArguments")),
        extensions: strings(spec.get("extensions")),
        kernel_type: s("kernelType"),
        config,
    })
}
