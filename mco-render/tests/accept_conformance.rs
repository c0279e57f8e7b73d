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

/// Each release's table (`releases/4.NN/accept-headers.json`) negotiates as that release does.
#[test]
fn each_release_negotiates_as_that_release() {
    use mco_render::release::Release;
    use mco_render::serve::accept::negotiate_as;
    let mut checked = 0;
    let mut failures = Vec::new();
    for release in Release::all().filter(|r| *r != Release::NEWEST) {
        let path = format!(
            "{}/../testdata/conformance/releases/{release}/accept-headers.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let table: Vec<Value> = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        for entry in &table {
            let header = entry["header"].as_str().unwrap();
            let expected = (
                entry["expected"]["version"].as_str().map(str::to_string),
                entry["expected"]["error"].as_str().map(str::to_string),
            );
            let got = match negotiate_as(Some(header), release.profile().accept) {
                Ok(v) => (Some(v.as_str().to_string()), None),
                Err(e) => (None, Some(e.to_string())),
            };
            checked += 1;
            if got != expected {
                failures.push(format!(
                    "{release} {header:?}: got {got:?}, expected {expected:?}"
                ));
            }
        }
    }
    assert_eq!(checked, 8 * 200);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
