//! Conformance of down-translation and spec 2.2 handling against the upstream corpus.

use std::path::PathBuf;

use mco_ignition::translate::{down, up};
use mco_ignition::v2;
use mco_ignition::SpecVersion;
use proptest::prelude::*;
use serde_json::{json, Value};

fn corpus_dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/conformance"
    ))
}

fn cases() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(corpus_dir()) else {
        return out;
    };
    let mut paths: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        if !name.ends_with(".json") || name == "accept-headers.json" {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        if let Ok(v) = serde_json::from_str::<Value>(&text) {
            if v.get("expected").is_some() && v.get("machineConfigs").is_some() {
                out.push((name, v));
            }
        }
    }
    out
}

const TARGETS: [(&str, SpecVersion); 6] = [
    ("3.5.0", SpecVersion::V3_5),
    ("3.4.0", SpecVersion::V3_4),
    ("3.3.0", SpecVersion::V3_3),
    ("3.2.0", SpecVersion::V3_2),
    ("3.1.0", SpecVersion::V3_1),
    ("2.2.0", SpecVersion::V2_2),
];

#[test]
fn down_matches_served_configs() {
    let (mut pass, mut skipped, mut fail) = (0, 0, Vec::new());
    for (name, case) in cases() {
        let exp = &case["expected"];
        let Some(config) = exp.get("spec").and_then(|s| s.get("config")) else {
            continue;
        };
        for (key, target) in TARGETS {
            let served = &exp["served"][key];
            let want_err = served["error"].as_str();
            if want_err.is_some_and(|e| e.starts_with("parsing Ignition config spec v3 failed")) {
                skipped += 1;
                continue;
            }
            let got = down(config, target);
            let ok = match (want_err, &got) {
                (Some(e), Err(g)) => g.to_string() == e,
                (None, Ok(g)) => *g == served["config"],
                _ => false,
            };
            if ok {
                pass += 1;
            } else {
                fail.push(format!("{name} {key}: want {served}, got {got:?}"));
            }
        }
    }
    eprintln!(
        "down: {pass} passed, {skipped} skipped (need 3.x validator), {} failed",
        fail.len()
    );
    assert!(
        fail.is_empty(),
        "{}",
        fail[..fail.len().min(5)].join("\n\n")
    );
    assert!(pass > 1000);
}

fn is_v22(mc: &Value) -> bool {
    mc["spec"]["config"]["ignition"]["version"].as_str() == Some("2.2.0")
}

/// The expected errors of the two corpus cases whose failure is a 2.2 validation report.
#[test]
fn v2_validation_errors_match() {
    let mut checked = 0;
    for (name, case) in cases() {
        let Some(want) = case["expected"]["error"].as_str() else {
            continue;
        };
        if !want.starts_with("parsing Ignition spec v2") {
            continue;
        }
        let got: Vec<String> = case["machineConfigs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|mc| is_v22(mc))
            .filter_map(|mc| v2::validate(&mc["spec"]["config"]).err())
            .map(|e| e.to_string())
            .collect();
        assert!(
            got.iter().any(|g| g == want),
            "{name}: want {want:?}, got {got:?}"
        );
        checked += 1;
    }
    eprintln!("v2 validation errors: {checked} matched");
    assert_eq!(checked, 2);
}

/// For successful renders, every file a selected 2.2 MC defines appears in the rendered spec
/// when that MC is the last selected one to define the path; and every selected 2.2 config
/// converts without error.
#[test]
fn v2_conversions_agree_with_rendered_specs() {
    let (mut configs, mut files_checked) = (0, 0);
    for (name, case) in cases() {
        let exp = &case["expected"];
        let Some(spec) = exp.get("spec").filter(|s| !s.is_null()) else {
            continue;
        };
        let source: Vec<&str> = exp["source"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mcs: Vec<&Value> = case["machineConfigs"]
            .as_array()
            .into_iter()
            .flatten()
            .collect();
        let ordered: Vec<&Value> = source
            .iter()
            .filter_map(|n| mcs.iter().copied().find(|mc| mc["metadata"]["name"] == *n))
            .collect();
        let rendered_files = spec["config"]["storage"]["files"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for (idx, mc) in ordered.iter().enumerate() {
            if !is_v22(mc) {
                continue;
            }
            let validated = v2::validate(&mc["spec"]["config"]);
            assert!(validated.is_ok(), "{name}: {validated:?}");
            let converted = v2::to_v3_5(&mc["spec"]["config"]);
            let Ok(conv) = converted else {
                panic!("{name}: {} failed: {converted:?}", mc["metadata"]["name"]);
            };
            configs += 1;
            assert_eq!(conv["ignition"]["version"], "3.5.0");
            for f in conv["storage"]["files"].as_array().into_iter().flatten() {
                let path = f["path"].as_str().unwrap_or("");
                let later = ordered[idx + 1..].iter().any(|m| {
                    m["spec"]["config"]
                        .to_string()
                        .contains(&format!("\"{path}\""))
                        || m["spec"]["config"]["storage"].to_string().contains(path)
                });
                if later || f.get("append").is_some() {
                    continue;
                }
                let r = rendered_files.iter().find(|r| r["path"] == path);
                let Some(r) = r else {
                    panic!("{name}: {path} from a 2.2 MC missing in the rendered spec");
                };
                // Merge keeps an earlier verification hash when the later file has none, so
                // only the source is compared.
                assert_eq!(
                    r["contents"].get("source"),
                    f["contents"].get("source"),
                    "{name} {path}"
                );
                if f.get("mode").is_some() {
                    assert_eq!(r.get("mode"), f.get("mode"), "{name} {path}");
                }
                files_checked += 1;
            }
        }
    }
    eprintln!("v2 conversions: {configs} configs, {files_checked} files checked");
    assert!(configs > 50);
}

#[test]
fn v2_prepass_and_conversion_shapes() {
    let cfg = json!({
        "ignition": {"version": "2.2.0"},
        "passwd": {"users": [
            {"name": "core", "sshAuthorizedKeys": ["a", "b"]},
            {"name": "core", "sshAuthorizedKeys": ["c", "a"]}
        ]},
        "storage": {"files": [
            {"filesystem": "root", "path": "/etc/x", "mode": 420, "contents": {"source": "data:,1"}},
            {"filesystem": "root", "path": "/etc/y", "mode": 420, "append": true, "contents": {"source": "data:,2"}},
            {"filesystem": "root", "path": "/etc/x", "mode": 384, "contents": {"source": "data:,3"}}
        ]},
        "systemd": {"units": [
            {"name": "a.service", "enable": true, "dropins": [{"name": "1.conf", "contents": "[Unit]\n"}]},
            {"name": "a.service", "contents": "[Unit]\n[Install]\nWantedBy=x\n"}
        ]}
    });
    let out = v2::to_v3_5(&cfg).unwrap_or(Value::Null);
    assert_eq!(
        out,
        json!({
            "ignition": {"version": "3.5.0"},
            "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["c", "a", "b"]}]},
            "storage": {"files": [
                {"path": "/etc/x", "overwrite": true, "mode": 384, "contents": {"source": "data:,3"}},
                {"path": "/etc/y", "overwrite": false, "mode": 420, "append": [{"source": "data:,2"}]}
            ]},
            "systemd": {"units": [{
                "name": "a.service",
                "contents": "[Unit]\n[Install]\nWantedBy=x\n",
                "dropins": [{"name": "1.conf", "contents": "[Unit]\n"}]
            }]}
        })
    );
    let bad = json!({"ignition": {"version": "2.2.0"}, "passwd": {"users": [{"name": "root"}]}});
    assert_eq!(
        v2::to_v3_5(&bad).map_err(|e| e.to_string()),
        Err("unexpected user with name: root. Only core user is supported".to_string())
    );
}

fn arb_config() -> impl Strategy<Value = Value> {
    let file = (
        "/[a-z]{1,8}(/[a-z]{1,8}){0,2}",
        proptest::option::of(prop_oneof![Just(0o644), Just(0o755), Just(0o600)]),
        proptest::option::of(any::<bool>()),
        proptest::option::of("data:,[a-z]{0,10}"),
    )
        .prop_map(|(path, mode, overwrite, src)| {
            let mut f = json!({"path": path});
            if let Some(m) = mode {
                f["mode"] = json!(m);
            }
            if let Some(o) = overwrite {
                f["overwrite"] = json!(o);
            }
            if let Some(s) = src {
                f["contents"] = json!({"source": s});
            }
            f
        });
    let unit = ("[a-z]{1,8}\\.service", proptest::option::of(any::<bool>())).prop_map(
        |(name, enabled)| {
            let mut u = json!({"name": name, "contents": "[Unit]\n"});
            if let Some(e) = enabled {
                u["enabled"] = json!(e);
            }
            u
        },
    );
    let link =
        ("/l/[a-z]{1,8}", "/t/[a-z]{1,8}").prop_map(|(p, t)| json!({"path": p, "target": t}));
    (
        proptest::collection::vec(file, 0..4),
        proptest::collection::vec(unit, 0..3),
        proptest::collection::vec(link, 0..2),
    )
        .prop_map(|(files, units, links)| {
            let mut c = json!({"ignition": {"version": "3.5.0"}});
            if !files.is_empty() {
                c["storage"]["files"] = Value::Array(files);
            }
            if !links.is_empty() {
                c["storage"]["links"] = Value::Array(links);
            }
            if !units.is_empty() {
                c["systemd"]["units"] = Value::Array(units);
            }
            c
        })
}

proptest! {
    /// Up then down is the identity for every 3.x version down can reach.
    #[test]
    fn up_then_down_is_identity(cfg in arb_config()) {
        for v in [SpecVersion::V3_1, SpecVersion::V3_2, SpecVersion::V3_3, SpecVersion::V3_4] {
            let lower = down(&cfg, v).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let raised = up(&lower, v, SpecVersion::V3_5);
            let again = down(&raised, v).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&again, &lower);
            prop_assert_eq!(&raised, &cfg);
        }
    }
}
