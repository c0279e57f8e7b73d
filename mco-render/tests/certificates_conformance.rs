//! The certificates corpus (testdata/conformance/controller-certificates): each case's CA
//! bundle read by the built `mco-render certificates -o json` must give the subjects, issuers
//! and validity that Go's `encoding/pem` and `crypto/x509` give for it, read the way upstream's
//! template controller reads a bundle (recorded from Go; the corpus README says how).

use serde_json::Value;
use std::process::Command;

const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../testdata/conformance/controller-certificates/cases.json"
);

#[test]
fn every_bundle_reads_as_go_reads_it() {
    let cases: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(CORPUS).expect("corpus")).expect("JSON");
    assert!(cases.len() >= 20, "{} cases", cases.len());
    let dir = tempfile::tempdir().expect("temp dir");
    let mut wrong = Vec::new();
    let mut certs = 0;
    for case in &cases {
        let name = case["name"].as_str().expect("name");
        let file = dir.path().join(format!("{name}.pem"));
        std::fs::write(&file, case["bundle"].as_str().expect("bundle")).expect("write");
        let out = Command::new(env!("CARGO_BIN_EXE_mco-render"))
            .args(["certificates", "-o", "json"])
            .arg(&file)
            .output()
            .expect("run mco-render");
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: Value = serde_json::from_slice(&out.stdout).expect("JSON output");
        let mut want = case["expected"].clone();
        for c in want.as_array_mut().expect("expected list") {
            c["bundleFile"] = Value::String(format!("{name}.pem"));
            certs += 1;
        }
        if got["controllerCertificates"] != want {
            wrong.push(format!(
                "{name}:\n  got  {}\n  want {want}",
                got["controllerCertificates"]
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} differ:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
    assert!(certs >= 20, "{certs} certificates");
}
