//! Pool selectors of the conformance corpus: compile errors, the no-match message and the
//! selected MachineConfigs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use mco_render::api::selector::LabelSelector;
use serde_json::Value;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/conformance");
const EMPTY_SELECTOR: &str =
    "This machineconfigpool is selecting all machineconfigs. A non-empty selector is required.";

fn cases() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(Path::new(CORPUS)).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !name.ends_with(".json") || name == "accept-headers.json" {
            continue;
        }
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        out.push((name, v));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn mc_labels(mc: &Value) -> BTreeMap<String, String> {
    mc["metadata"]["labels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn corpus_pool_selectors() {
    let cases = cases();
    assert_eq!(cases.len(), 300);
    let (mut compile_errors, mut empty, mut no_match, mut selections) = (0, 0, 0, 0);
    for (name, case) in &cases {
        let expected_error = case["expected"]["error"].as_str();
        let sel: LabelSelector =
            serde_json::from_value(case["pool"]["spec"]["machineConfigSelector"].clone()).unwrap();
        if sel.is_empty() {
            assert_eq!(expected_error, Some(EMPTY_SELECTOR), "{name}");
            empty += 1;
            continue;
        }
        let compiled = match sel.compile() {
            Ok(c) => c,
            Err(e) => {
                assert_eq!(Some(e.to_string().as_str()), expected_error, "{name}");
                compile_errors += 1;
                continue;
            }
        };
        let selected: BTreeSet<String> = case["machineConfigs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|mc| compiled.matches(&mc_labels(mc)))
            .map(|mc| mc["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        if selected.is_empty() {
            assert_eq!(
                expected_error.map(str::to_string),
                Some(format!(
                    "no MachineConfigs found matching selector {compiled}"
                )),
                "{name}"
            );
            no_match += 1;
            continue;
        }
        if expected_error.is_none() {
            let expected: BTreeSet<String> = case["expected"]["source"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect();
            assert_eq!(selected, expected, "{name}");
            selections += 1;
        }
    }
    assert_eq!((compile_errors, empty, no_match), (3, 1, 1));
    assert!(selections > 250, "{selections}");
}
