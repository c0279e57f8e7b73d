//! The YAML corpus (testdata/conformance/kube-yaml): each case's text decoded by the built
//! `mco-render decode -o json` must give the documents kubectl's reader gives (the JSON that
//! k8s.io/apimachinery's YAMLOrJSONDecoder and sigs.k8s.io/yaml produce, recorded from Go),
//! and fail where it fails, with its message.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// The outcome of one case: the documents, or the error message.
#[derive(Debug, PartialEq)]
enum Outcome {
    Documents(Vec<Value>),
    Error(String),
}

fn expected(o: &Value) -> Outcome {
    match o["error"].as_str() {
        Some(e) => Outcome::Error(e.to_string()),
        None => Outcome::Documents(o["documents"].as_array().cloned().unwrap_or_default()),
    }
}

/// Runs the binary on one file.
fn decode(file: &Path) -> Outcome {
    let out = match Command::new(env!("CARGO_BIN_EXE_mco-render"))
        .args(["decode", "-o", "json"])
        .arg(file)
        .output()
    {
        Ok(out) => out,
        Err(e) => return Outcome::Error(format!("cannot run mco-render: {e}")),
    };
    if out.status.success() {
        let list: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        Outcome::Documents(list["items"].as_array().cloned().unwrap_or_default())
    } else {
        // `error: <file>: document N, line L: <kubectl's message>`
        let stderr = String::from_utf8_lossy(&out.stderr);
        let message = stderr
            .lines()
            .next()
            .and_then(|l| l.split_once(", line "))
            .and_then(|(_, rest)| rest.split_once(": "))
            .map_or_else(|| format!("?? {stderr}"), |(_, m)| m.to_string());
        Outcome::Error(message)
    }
}

/// Whether `got` is what Go gave: the same documents, or an error with the same message
/// (JSON syntax errors are Go's `encoding/json` texts: only their presence is compared; an
/// unsupported key's message up to the value, which Go prints with `%#v`).
fn matches(got: &Outcome, want: &Outcome) -> bool {
    match (got, want) {
        (Outcome::Documents(g), Outcome::Documents(w)) => g == w,
        (Outcome::Error(g), Outcome::Error(w)) => {
            let json_error = w.starts_with("json: ") || !w.contains(':');
            let key = |s: &str| s.split(", value:").next().map(str::to_string);
            json_error || g == w || (w.contains("unsupported map key") && key(g) == key(w))
        }
        _ => false,
    }
}

/// Cases where the parser (libyaml 0.2.5's grammar, ported) and gopkg.in/yaml.v2's older
/// libyaml port disagree and the decoder does not make up for it, each with the reason (none
/// today: the `\\/` escape and a `:` before a flow indicator are made up for).
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[];

#[test]
fn decodes_every_case_as_kubectl_does() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/conformance/kube-yaml");
    let text = std::fs::read_to_string(dir.join("cases.json")).unwrap_or_default();
    let cases: Vec<Value> = serde_json::from_str(&text).unwrap_or_default();
    assert!(cases.len() >= 400, "{} cases", cases.len());
    let Ok(tmp) = tempfile::tempdir() else {
        panic!("temp dir");
    };
    let mut jobs = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let file = tmp.path().join(format!("c{i:04}.yaml"));
        if let Err(e) = std::fs::write(&file, case["input"].as_str().unwrap_or("")) {
            panic!("{e}");
        }
        jobs.push((case, file));
    }
    let failures: Vec<String> = std::thread::scope(|s| {
        let chunks: Vec<_> = jobs.chunks(jobs.len().div_ceil(4)).collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                s.spawn(move || {
                    let mut failed = Vec::new();
                    for (case, file) in chunk {
                        let got = decode(file);
                        let wants: Vec<Outcome> = match case["anyOf"].as_array() {
                            Some(any) => any.iter().map(expected).collect(),
                            None => vec![expected(&case["expected"])],
                        };
                        let name = case["name"].as_str().unwrap_or("?");
                        let known = KNOWN_DIFFERENCES.iter().any(|(n, _)| *n == name);
                        if !known && !wants.iter().any(|w| matches(&got, w)) {
                            failed.push(format!(
                                "{}: got {got:?}, want {:?}",
                                case["name"].as_str().unwrap_or("?"),
                                wants[0]
                            ));
                        }
                    }
                    failed
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|_| vec!["a thread panicked".into()])
            })
            .collect()
    });
    println!(
        "kube-yaml conformance: {} of {} cases match ({} known differences)",
        cases.len() - failures.len() - KNOWN_DIFFERENCES.len(),
        cases.len(),
        KNOWN_DIFFERENCES.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
