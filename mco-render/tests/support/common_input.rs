// Shared helpers for the conformance tests, included with `#[path]` (under `support/`, so it is
// no test target of its own).

use mco_render::plan::reconcile::RenderedInput;
use serde_json::Value;

pub fn corpus_dir() -> std::path::PathBuf {
    std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/conformance"
    ))
}

/// Builds a rendered input from a name and an MC spec, parsing the config as the daemon does;
/// `Err` is upstream's parse error text.
pub fn rendered_input(name: &str, spec: &Value) -> Result<RenderedInput, String> {
    let spec: mco_render::api::MachineConfigSpec =
        serde_json::from_value(spec.clone()).map_err(|e| e.to_string())?;
    mco_render::plan::input::rendered_input(name, &spec)
}
