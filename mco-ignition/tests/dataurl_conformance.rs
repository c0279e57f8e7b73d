//! File sources of the conformance corpus: every source failure found here is one upstream
//! reported for that case, and every other data URL decodes.

use mco_ignition::dataurl::{check_hash, decode_contents, validate_source_url};
use serde_json::Value;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/conformance");

#[test]
fn corpus_file_sources() {
    let (mut checked, mut failures) = (0, 0);
    for entry in std::fs::read_dir(CORPUS).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !name.starts_with('c') || !name.ends_with(".json") {
            continue;
        }
        let case: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let expected = case["expected"]["error"].as_str().unwrap_or("");
        for mc in case["machineConfigs"].as_array().unwrap() {
            let config = &mc["spec"]["config"];
            let version = config["ignition"]["version"].as_str().unwrap_or("");
            let Some(minor) = version
                .strip_prefix("3.")
                .and_then(|r| r.split('.').next())
                .and_then(|m| m.parse::<u64>().ok())
            else {
                continue;
            };
            let files = config["storage"]["files"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for file in files {
                let contents = &file["contents"];
                let Some(source) = contents["source"].as_str() else {
                    continue;
                };
                checked += 1;
                let result = validate_source_url(source, minor)
                    .map_err(|e| e.to_string())
                    .and_then(|()| match contents["verification"]["hash"].as_str() {
                        Some(h) if h.split_once('-').is_none() => {
                            check_hash(h, b"").map_err(|e| e.to_string())
                        }
                        _ => Ok(()),
                    });
                match result {
                    Err(e) => {
                        failures += 1;
                        assert!(expected.contains(&e), "{name}: {source:?}: {e}");
                    }
                    Ok(()) if source.starts_with("data:") => {
                        let compression = contents["compression"].as_str();
                        decode_contents(source, compression).unwrap_or_else(|e| {
                            panic!("{name}: {source:.60}: {e}");
                        });
                    }
                    Ok(()) => {}
                }
            }
        }
    }
    assert!(checked > 1000, "{checked}");
    assert!(failures >= 3, "{failures}");
}
