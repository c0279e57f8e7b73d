//! Butane's decoding and validation rules, case by case: YAML 1.1 booleans and other scalars
//! decoded into typed fields, duplicate entries, LUKS with `cex`, and their siblings.
//!
//! Each case in `butane_rules_cases.json` holds a config, its files and arguments, and what
//! Butane v0.29.0-3-gcb34e120 did with it: exit status, the exact YAML it printed and its
//! messages (the input named `config.bu`, the files directory `files`). The translator must
//! give the same bytes.
//!
//! The cases: written by hand for each rule (`bool-*`, `str-*`, `int-*`, `type-*`, `dup-*`,
//! `cex-*`, `luks-*`, `v-*`, `ver-*`, `fips-*`, `clevis-*`, `yaml-*`, ...); corpus configs
//! with their booleans and modes respelled, list entries doubled or the spec version changed
//! (`b*~bools`, `~modes`, `~dup`, `~dupblock`, `~4.N.0`); configs drawn at random, mostly
//! wrong (`rand-*`) or mostly right (`valid-*`), over the other sections (`more-*`: Ignition
//! references, proxies, CAs, disks, RAID, local files, trees, drop-ins, GRUB), or with any
//! scalar or collection in any typed field (`typed-*`).

use mco_render::butane::{emit, translate, FileSet, Options};
use serde_json::Value;
use std::path::Path;

fn run(case: &Value) -> (i64, String, String) {
    let config = case["butane"].as_str().unwrap_or_default();
    let args: Vec<&str> = case["args"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let files = args.contains(&"--files-dir").then(|| {
        let mut set = FileSet::new("files");
        for (path, text) in case["files"].as_object().into_iter().flatten() {
            let bytes = text.as_str().unwrap_or_default().as_bytes().to_vec();
            set.insert(path, bytes, 0o644);
        }
        set
    });
    let options = Options {
        strict: args.contains(&"--strict"),
    };
    match translate(config.as_bytes(), files.as_ref(), options) {
        Ok(t) => (
            0,
            emit::to_yaml(&t.machine_config),
            t.report.render("config.bu", config),
        ),
        Err(f) => (1, String::new(), f.stderr("config.bu", config)),
    }
}

#[test]
fn every_rule_case_translates_as_butane_does() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/butane_rules_cases.json");
    let cases: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(path).expect("the cases")).expect("JSON");
    assert!(cases.len() > 100, "{} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().unwrap_or_default();
        let e = &case["expected"];
        let (exit, stdout, stderr) = run(case);
        let want = (
            e["exit"].as_i64().unwrap_or(-1),
            e["stdout"].as_str().unwrap_or_default(),
            e["stderr"].as_str().unwrap_or_default(),
        );
        if (exit, stdout.as_str(), stderr.as_str()) != want {
            failures.push(format!(
                "== {name} (exit {exit}, Butane {})\n--- Butane stderr\n{}--- ours\n{stderr}--- Butane stdout\n{}\n--- ours\n{stdout}",
                want.0, want.2, want.1
            ));
        }
    }
    for f in &failures {
        eprintln!("{f}");
    }
    eprintln!(
        "butane rules: {} of {} cases match Butane exactly",
        cases.len() - failures.len(),
        cases.len()
    );
    assert!(failures.is_empty(), "{} cases differ", failures.len());
}
