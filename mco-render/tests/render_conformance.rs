//! Every render case of the conformance corpus: error or success, source order, rendered
//! spec and rendered name must be upstream's.

#[path = "support/render_case.rs"]
mod render_case;

use mco_ignition::SpecVersion;
use mco_render::api::{ControllerConfigSpec, MachineConfig, MachineConfigPool};
use mco_render::serve;
use mco_render::{render_pool, RenderOptions};
use render_case::run_case;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/conformance")
}

fn cases() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(corpus())
        .expect("corpus folder")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .filter(|p| !p.ends_with("accept-headers.json"))
        .collect();
    entries.sort();
    for p in entries {
        let text = std::fs::read_to_string(&p).expect("case file");
        let v: Value = serde_json::from_str(&text).expect("case JSON");
        out.push((v["name"].as_str().unwrap_or_default().to_string(), v));
    }
    out
}

#[test]
fn render_corpus_matches_upstream() {
    let cases = cases();
    assert!(cases.len() >= 300, "corpus has {} cases", cases.len());
    let mut failures = Vec::new();
    for (name, case) in &cases {
        if let Err(e) = run_case(case) {
            failures.push(format!("{name}: {e}"));
        }
    }
    let passed = cases.len() - failures.len();
    eprintln!("render conformance: {passed}/{} cases pass", cases.len());
    for f in failures.iter().take(30) {
        eprintln!("FAIL {f}\n");
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from upstream",
        failures.len(),
        cases.len()
    );
}

/// The real-content cases (upstream template MachineConfigs), which live only in ../shared;
/// `None` when absent.
fn real_cases() -> Option<Vec<Value>> {
    use std::io::Read;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/real");
    let entries = std::fs::read_dir(&dir).ok()?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
        .collect();
    files.sort();
    let read = |f: &PathBuf| {
        let mut text = String::new();
        let file = std::fs::File::open(f).expect("real case");
        flate2::read::GzDecoder::new(file)
            .read_to_string(&mut text)
            .expect("gzip");
        serde_json::from_str::<Value>(&text).expect("case JSON")
    };
    Some(files.iter().map(read).collect())
}

/// Every real-content case renders as upstream renders it (skipped, loudly, without ../shared).
#[test]
fn real_content_corpus_matches_upstream() {
    let Some(cases) = real_cases() else {
        eprintln!("SKIP: ../shared/conformance/real not present");
        return;
    };
    let mut failures = Vec::new();
    for case in &cases {
        if let Err(e) = run_case(case) {
            failures.push(format!("{}: {e}", case["name"]));
        }
    }
    eprintln!(
        "real conformance: {}/{} cases pass",
        cases.len() - failures.len(),
        cases.len()
    );
    for f in failures.iter().take(10) {
        eprintln!("FAIL {f}\n");
    }
    assert!(failures.is_empty(), "{} real cases differ", failures.len());
}

/// Every 3.1-3.3 config served for the real-content cases passes Ignition's own validator
/// (`ignition-validate`, Debian's `ignition` package, which `.ci/run` installs); skipped, loudly,
/// without the tool or the corpus.
#[test]
fn served_real_configs_pass_ignition_validate() {
    let tool = std::process::Command::new("ignition-validate")
        .arg("--version")
        .output();
    if tool.is_err() {
        eprintln!("SKIP: ignition-validate is not installed");
        return;
    }
    let Some(cases) = real_cases() else {
        eprintln!("SKIP: ../shared/conformance/real not present");
        return;
    };
    let tmp = std::env::temp_dir().join(format!("mco-ignition-validate-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temp dir");
    let (mut checked, mut failures) = (0, Vec::new());
    for case in &cases {
        let (Ok(pool), Ok(mcs), Ok(cc)) = (
            serde_json::from_value::<MachineConfigPool>(case["pool"].clone()),
            serde_json::from_value::<Vec<MachineConfig>>(case["machineConfigs"].clone()),
            serde_json::from_value::<ControllerConfigSpec>(case["controllerConfig"].clone()),
        ) else {
            continue;
        };
        let Ok(r) = render_pool(&pool, &mcs, &cc, &RenderOptions::default()) else {
            continue;
        };
        for v in [SpecVersion::V3_1, SpecVersion::V3_2, SpecVersion::V3_3] {
            let Ok(config) = serve::convert(r.ignition(), v) else {
                continue;
            };
            let path = tmp.join(format!(
                "{}-{}.json",
                case["name"].as_str().unwrap_or("case"),
                v
            ));
            std::fs::write(&path, config.to_string()).expect("write config");
            let out = std::process::Command::new("ignition-validate")
                .arg(&path)
                .output()
                .expect("run ignition-validate");
            checked += 1;
            if !out.status.success() {
                failures.push(format!(
                    "{}: {}{}",
                    path.display(),
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    eprintln!("ignition-validate: {checked} served configs checked");
    assert!(checked > 0, "no served config was checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
