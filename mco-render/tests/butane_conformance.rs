//! Butane conformance: every case of `testdata/conformance/butane/` (the config, its files,
//! Butane v0.29's output, exit status and messages) translated by `mco_render::butane` and
//! compared as JSON values, stderr as text.
//!
//! Cases whose expected output holds gzip data URLs depend on Go's `compress/flate` bytes:
//! `gocompat::gzip::gzip_best` writes them, so those match exactly too.

use mco_render::butane::{translate, FileSet, Options};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

struct Outcome {
    exit: i64,
    output: Value,
    stderr: String,
}

fn run(case: &Value) -> Outcome {
    let config = case["butane"].as_str().unwrap_or_default();
    let args: Vec<&str> = case["args"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let strict = args.contains(&"--strict");
    let files = args.contains(&"--files-dir").then(|| {
        let mut set = FileSet::new("{files}");
        for (path, text) in case["files"].as_object().into_iter().flatten() {
            set.insert(
                path,
                text.as_str().unwrap_or_default().as_bytes().to_vec(),
                0o644,
            );
        }
        set
    });
    match translate(config.as_bytes(), files.as_ref(), Options { strict }) {
        Ok(t) => {
            // What the command prints reads back to the same MachineConfig.
            let yaml = mco_render::butane::emit::to_yaml(&t.machine_config);
            let back: Value = serde_yaml_ng::from_str(&yaml).unwrap_or_default();
            assert_eq!(back, t.machine_config, "the YAML of {}", case["name"]);
            Outcome {
                exit: 0,
                output: t.machine_config,
                stderr: t.report.render("config.bu", config),
            }
        }
        Err(f) => Outcome {
            exit: 1,
            output: Value::Null,
            stderr: f.stderr("config.bu", config),
        },
    }
}

/// The bytes a `contents` object holds (its data URL decoded, gunzipped when it says gzip).
fn decoded(contents: &serde_json::Map<String, Value>) -> Option<Vec<u8>> {
    let source = contents.get("source")?.as_str()?;
    let compression = contents
        .get("compression")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty());
    mco_ignition::dataurl::decode_contents(source, compression).ok()
}

fn first_difference(a: &Value, b: &Value, path: &str) -> String {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) if p == q => {}
                    (Some(p), Some(q)) => return first_difference(p, q, &format!("{path}.{k}")),
                    (p, q) => return format!("{path}.{k}: expected {p:?}, got {q:?}"),
                }
            }
            String::new()
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                if p != q {
                    return first_difference(p, q, &format!("{path}.{i}"));
                }
            }
            String::new()
        }
        _ => format!("{path}: expected {a}, got {b}"),
    }
}

#[test]
fn every_case_translates_as_butane_does() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/conformance/butane");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("the corpus")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 150, "the corpus holds 150 cases");
    let mut failures: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut matched = 0;
    for path in &names {
        let case: Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("readable")).expect("JSON");
        let name = case["name"].as_str().unwrap_or_default().to_string();
        let expected = &case["expected"];
        let got = run(&case);
        let exit_ok = expected["exit"].as_i64() == Some(got.exit);
        let stderr_ok = expected["stderr"].as_str() == Some(got.stderr.as_str());
        let output_ok = expected["output"] == got.output;
        if exit_ok && stderr_ok && output_ok {
            matched += 1;
            continue;
        }
        if !exit_ok {
            failures
                .entry("exit status")
                .or_default()
                .push(format!("{name}: {}", got.stderr));
        } else if !stderr_ok {
            failures.entry("stderr").or_default().push(format!(
                "{name}:\n--- expected\n{}--- got\n{}",
                expected["stderr"].as_str().unwrap_or(""),
                got.stderr
            ));
        } else {
            failures.entry("output").or_default().push(format!(
                "{name}: {}",
                first_difference(&expected["output"], &got.output, "$")
            ));
        }
    }
    eprintln!(
        "butane conformance: {matched} of {} cases match exactly",
        names.len()
    );
    for (category, list) in &failures {
        eprintln!("\n== {} mismatches in {category}", list.len());
        for f in list {
            eprintln!("{f}");
        }
    }
    assert_eq!(matched, names.len(), "cases that differ from Butane's");
}

/// Every `contents` object (with `source`) under `v`.
fn contents_objects<'a>(v: &'a Value, out: &mut Vec<&'a serde_json::Map<String, Value>>) {
    match v {
        Value::Object(m) => {
            if m.contains_key("source") && m.contains_key("compression") {
                out.push(m);
            }
            m.values().for_each(|c| contents_objects(c, out));
        }
        Value::Array(a) => a.iter().for_each(|c| contents_objects(c, out)),
        _ => {}
    }
}

/// Given Go's gzip bytes (taken from the expected URL), the choice picks exactly Butane's URL:
/// the gzip cases turn exact as soon as `gzip_best` writes those bytes.
#[test]
fn given_gos_gzip_bytes_the_choice_is_butanes() {
    use base64::Engine;
    use mco_render::butane::contents::make_data_url_with;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/conformance/butane");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir)
        .expect("the corpus")
        .filter_map(Result::ok)
    {
        if entry.path().extension().is_none_or(|e| e != "json") {
            continue;
        }
        let case: Value =
            serde_json::from_str(&std::fs::read_to_string(entry.path()).expect("readable"))
                .expect("JSON");
        let mut found = Vec::new();
        contents_objects(&case["expected"]["output"], &mut found);
        for c in found {
            if c.get("compression").and_then(Value::as_str) != Some("gzip") {
                continue;
            }
            let source = c["source"].as_str().unwrap_or_default();
            let gz = base64::engine::general_purpose::STANDARD
                .decode(source.trim_start_matches("data:;base64,"))
                .expect("base64");
            let Some(bytes) = decoded(c) else {
                panic!("{}: undecodable", case["name"])
            };
            let url = make_data_url_with(&bytes, None, true, |_| gz.clone());
            assert_eq!(url.source, source, "{}", case["name"]);
            assert_eq!(url.compression, Some("gzip"), "{}", case["name"]);
            checked += 1;
        }
    }
    assert!(checked > 50, "{checked} gzip URLs checked");
}
