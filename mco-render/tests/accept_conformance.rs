//! Every Accept header of `testdata/conformance/accept-headers.json` negotiates like upstream.

use mco_render::serve::accept::negotiate;
use serde_json::Value;

const TABLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../testdata/conformance/accept-headers.json"
);

#[test]
fn accept_header_table() {
    let table: Vec<Value> = serde_json::from_slice(&std::fs::read(TABLE).unwrap()).unwrap();
    assert_eq!(table.len(), 200);
    let mut failures = Vec::new();
    for entry in &table {
        let header = entry["header"].as_str().unwrap();
        let expected = (
            entry["expected"]["version"].as_str().map(str::to_string),
            entry["expected"]["error"].as_str().map(str::to_string),
        );
        let got = match negotiate(Some(header)) {
            Ok(v) => (Some(v.as_str().to_string()), None),
            Err(e) => (None, Some(e.to_string())),
        };
        if got != expected {
            failures.push(format!("{header:?}: got {got:?}, expected {expected:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
