// Shared by the command-line tests, included with `#[path]` (under `support/`, so it is no test
// target of its own): runs `mco-render` and returns its exit code, stdout and stderr. Each test
// file uses one of the two entry points.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// Runs `mco-render` from the workspace root.
pub fn run(args: &[&str]) -> (i32, String, String) {
    run_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join(".."), args)
}

/// Runs `mco-render` from `dir`.
pub fn run_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mco-render"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run mco-render");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The objects of the `v1 List` that `-o json` prints (render, generate, templates), failing
/// the test when `out` is not one.
pub fn list_items(out: &str) -> Vec<serde_json::Value> {
    let v: serde_json::Value = match serde_json::from_str(out) {
        Ok(v) => v,
        Err(e) => panic!("{e}: {out}"),
    };
    assert_eq!(
        (&v["apiVersion"], &v["kind"]),
        (&"v1".into(), &"List".into()),
        "{out}"
    );
    match v.get("items").and_then(serde_json::Value::as_array) {
        Some(items) => items.clone(),
        None => panic!("a List without items: {out}"),
    }
}

/// The one object `-o json` prints: the object itself (one object asked for by name, as
/// `kubectl get KIND NAME -o json` prints it) or the one item of a `v1 List`, pretty-printed
/// as it was printed on its own.
pub fn only_item(out: &str) -> (serde_json::Value, String) {
    let v: serde_json::Value = serde_json::from_str(out).unwrap_or_default();
    let item = if v["kind"] == "List" {
        let items = list_items(out);
        let [item] = items.as_slice() else {
            panic!("{} items, not one: {out}", items.len());
        };
        item.clone()
    } else {
        v
    };
    let text = serde_json::to_string_pretty(&item).unwrap_or_default() + "\n";
    (item, text)
}
