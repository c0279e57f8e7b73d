//! The plan corpus (`testdata/conformance/plan`) through the shipped binary, as a user runs it:
//! `mco-render diff -o json OLD NEW [--policies MACHINECONFIGURATION]` on each case's two
//! rendered MachineConfigs and its MachineConfiguration, compared with upstream's decisions as
//! far as the report shows them:
//!
//! - `reconcilable` and `reason`: upstream's `reconcilable` (the daemon's wording);
//! - `diff`: upstream's `diff` as a JSON value;
//! - `drain` and `drainError`: upstream's `drainRequired` and `drainError` (a failed check
//!   drains);
//! - `actions` (type and target, in order): a leading `Drain` when the node drains, then
//!   upstream's `nodeDisruptionActions` other than `Drain`, the target of `Reload` and
//!   `Restart` their service and of `Special` `crio.service`; `reboot` when one is `Reboot`;
//! - the `kargs` step's arguments: upstream's `kargsArgs` (steps are listed only for a
//!   reconcilable update);
//! - a config that does not parse (`diffError`): exit 1 with upstream's parse error.
//!
//! The report does not show the first-boot path (`legacyActions`, `legacyDrainRequired`) nor
//! the merged `clusterPolicies`; `plan_conformance.rs` checks those in the library.

#[path = "support/compare.rs"]
mod compare;
#[path = "support/corpus.rs"]
mod corpus;

use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

/// Upstream's node disruption actions as the report lists them.
fn report_actions(expected: &Value) -> Value {
    let drains = expected["drainRequired"] != json!(false);
    let mut out = Vec::new();
    if drains {
        out.push(json!({"type": "Drain"}));
    }
    for a in expected["nodeDisruptionActions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let kind = a["type"].as_str().unwrap_or("");
        let target = match kind {
            "Drain" => continue,
            "Reload" => a["reload"]["serviceName"].clone(),
            "Restart" => a["restart"]["serviceName"].clone(),
            "Special" => json!("crio.service"),
            _ => Value::Null,
        };
        out.push(match target {
            Value::Null => json!({"type": kind}),
            t => json!({"type": kind, "target": t}),
        });
    }
    Value::Array(out)
}

/// The report's fields that upstream's decisions fix, and upstream's, side by side.
fn shown(report: &Value) -> Value {
    let actions: Vec<Value> = report["actions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            let mut a = a.clone();
            if let Some(o) = a.as_object_mut() {
                o.remove("triggers");
            }
            a
        })
        .collect();
    let kargs = report["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["step"] == "kargs")
        .map(|s| s["args"].clone())
        .unwrap_or(Value::Null);
    json!({
        "reconcilable": report["reconcilable"],
        "reason": report["reason"],
        "diff": report["diff"],
        "drain": report["drain"],
        "drainError": report["drainError"],
        "reboot": report["reboot"],
        "actions": actions,
        "kargs": kargs,
    })
}

fn upstream(expected: &Value) -> Value {
    let reconcilable = expected["reconcilable"] == "ok";
    let reboot = expected["nodeDisruptionActions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|a| a["type"] == "Reboot");
    json!({
        "reconcilable": reconcilable,
        "reason": if reconcilable { Value::Null } else { expected["reconcilable"].clone() },
        "diff": expected["diff"],
        "drain": expected["drainRequired"].as_bool().unwrap_or(true),
        "drainError": expected["drainError"],
        "reboot": reboot,
        "actions": report_actions(expected),
        // Steps, the kargs one among them, are listed for a reconcilable update only.
        "kargs": if reconcilable { expected["kargsArgs"].clone() } else { Value::Null },
    })
}

fn compare_case(case: &Value, dir: &Path) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("case folder");
    let (old, new) = (dir.join("old.json"), dir.join("new.json"));
    std::fs::write(&old, case["old"].to_string()).expect("write old");
    std::fs::write(&new, case["new"].to_string()).expect("write new");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mco-render"));
    cmd.args(["diff", "-o", "json"]).arg(&old).arg(&new);
    if !case["machineConfiguration"].is_null() {
        let p = dir.join("machineconfiguration.json");
        std::fs::write(&p, case["machineConfiguration"].to_string()).expect("write policies");
        cmd.arg("--policies").arg(&p);
    }
    let out = cmd.output().expect("run mco-render");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = &case["expected"];
    if let Some(e) = expected["diffError"].as_str() {
        // `parsing <side> Ignition config failed with error: <upstream's parse error>`
        let parse = e.split_once("failed with error: ").map_or(e, |(_, m)| m);
        return if out.status.code() == Some(1) && stderr.contains(parse.trim_end()) {
            Ok(())
        } else {
            Err(format!(
                "exit {:?}, stderr {stderr:?}, want upstream's {parse:?}",
                out.status.code()
            ))
        };
    }
    if !out.status.success() {
        return Err(format!("exit {:?}: {stderr}", out.status.code()));
    }
    let report: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("stdout is not JSON ({e}): {stderr}"))?;
    compare::same("report", &shown(&report), &upstream(expected))
}

#[test]
fn plan_corpus_through_the_binary() {
    let started = std::time::Instant::now();
    let files = corpus::case_files(&corpus::testdata("plan"), |_| true);
    assert_eq!(files.len(), 150, "the plan corpus holds 150 cases");
    let tmp = std::env::temp_dir().join(format!("mco-plan-cli-{}", std::process::id()));
    let mut failures = Vec::new();
    for p in &files {
        let case = corpus::read(p);
        let name = case["name"].as_str().unwrap_or("?").to_string();
        if let Err(e) = compare_case(&case, &tmp.join(&name)) {
            failures.push(format!("{name}:\n  {e}"));
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    eprintln!(
        "plan through the binary: {}/{} cases ({:.1} s)",
        files.len() - failures.len(),
        files.len(),
        started.elapsed().as_secs_f64()
    );
    for f in failures.iter().take(30) {
        eprintln!("FAIL {f}\n");
    }
    assert!(
        failures.is_empty(),
        "{} of {} plan cases differ",
        failures.len(),
        files.len()
    );
}
