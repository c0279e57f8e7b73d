//! `parse_owned` gives exactly what `parse_value` gives, on every config of the conformance
//! corpus, on their normalised forms (which take the no-copy path) and on edited variants.

use mco_ignition::emit::Layout;
use mco_ignition::parse::{parse_owned_in, parse_value, parse_value_in};
use serde_json::{json, Value};
use std::path::Path;

fn corpus_configs() -> Vec<Value> {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/conformance"
    ));
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .expect("corpus folder")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    names.sort();
    let mut out = Vec::new();
    for p in names {
        let case: Value =
            serde_json::from_slice(&std::fs::read(&p).expect("read case")).expect("case is JSON");
        if let Some(mcs) = case.get("machineConfigs").and_then(Value::as_array) {
            for mc in mcs {
                if let Some(c) = mc.pointer("/spec/config") {
                    out.push(c.clone());
                }
            }
        }
    }
    out
}

fn same(raw: &Value) {
    for layout in [Layout::Sorted, Layout::Struct] {
        let borrowed = parse_value_in(raw, layout);
        let owned = parse_owned_in(raw.clone(), layout);
        match (&borrowed, &owned) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.config, b.config, "{raw}");
                assert_eq!(
                    format!("{:?}", a.report),
                    format!("{:?}", b.report),
                    "{raw}"
                );
            }
            _ => assert_eq!(format!("{borrowed:?}"), format!("{owned:?}"), "{raw}"),
        }
    }
}

#[test]
fn owned_parse_matches_borrowed_parse_on_the_corpus() {
    let configs = corpus_configs();
    assert!(configs.len() > 1000, "{} configs", configs.len());
    let mut normalised = 0;
    for raw in &configs {
        same(raw);
        if let Ok(p) = parse_value(raw) {
            let tree = p.config.into_value();
            same(&tree);
            normalised += 1;
            // Variants that must leave the no-copy path or change its report.
            let mut with_unknown = tree.clone();
            with_unknown["extra"] = json!(1);
            same(&with_unknown);
            let mut with_null = tree.clone();
            with_null["passwd"] = Value::Null;
            same(&with_null);
            let mut reordered = serde_json::Map::new();
            if let Value::Object(m) = &tree {
                for (k, v) in m.iter().rev() {
                    reordered.insert(k.clone(), v.clone());
                }
            }
            same(&Value::Object(reordered));
        }
    }
    assert!(normalised > 1000, "{normalised} parsed");
}

#[test]
fn owned_parse_reports_positions_on_the_no_copy_path() {
    let dup = json!({
        "ignition": {"version": "3.2.0"},
        "storage": {"files": [
            {"path": "/etc/a", "mode": 420},
            {"path": "/etc/a", "mode": 420},
            {"path": "relative"}
        ]}
    });
    same(&dup);
    let upper = json!({"ignition": {"version": "3.2.0"}, "Storage": {}});
    same(&upper);
    let zero_mode = json!({"ignition": {"version": "3.4.0"}, "storage": {"files": [{"path": "/a", "overwrite": false}]}});
    same(&zero_mode);
    let float = json!({"ignition": {"version": "3.4.0"}, "storage": {"files": [{"path": "/a", "mode": 1.5}]}});
    same(&float);
}
