//! Reconcilability along the render corpus chains (`previous` set): `reconcilableFromPrevious`.

#[path = "support/common_input.rs"]
mod common_input;

use common_input::{corpus_dir, rendered_input};
use mco_render::plan::reconcile::is_rendered_config_reconcilable;
use serde_json::{json, Value};

#[test]
fn render_chains() {
    let dir = corpus_dir();
    let mut cases = std::collections::BTreeMap::new();
    for e in std::fs::read_dir(&dir)
        .expect("corpus dir")
        .filter_map(|e| e.ok())
    {
        let p = e.path();
        let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
        if p.extension().is_some_and(|x| x == "json") && stem != "accept-headers" {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            cases.insert(stem, v);
        }
    }
    let (mut passed, mut failures) = (0, Vec::new());
    for (name, case) in &cases {
        let Some(prev) = case.get("previous").and_then(Value::as_str) else {
            continue;
        };
        let want = &case["expected"]["reconcilableFromPrevious"];
        let prev_case = &cases[prev];
        let side = |c: &Value| -> Option<_> {
            let n = c["expected"]["renderedName"].as_str()?;
            Some(rendered_input(n, &c["expected"]["spec"]).expect("rendered spec decodes"))
        };
        let got = match (side(prev_case), side(case)) {
            (Some(old), Some(new)) => match is_rendered_config_reconcilable(&old, &new, &[]) {
                Ok(()) => json!("ok"),
                Err(e) => json!(e.to_string()),
            },
            _ => Value::Null,
        };
        if &got == want {
            passed += 1;
        } else {
            failures.push(format!("{name}: got {got} want {want}"));
        }
    }
    eprintln!("render chains: {passed} passed, {} failed", failures.len());
    assert!(passed >= 30, "expected the corpus' chain cases");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
