// Shared by the corpus tests of generated MachineConfigs, included with `#[path]`: how a
// generated MachineConfig differs from the expected one.
#![allow(dead_code)]

use serde_json::Value;

/// The decoded contents of an Ignition file entry (empty when they do not decode).
pub fn file_text(f: &Value) -> String {
    let src = f["contents"]["source"].as_str().unwrap_or("");
    mco_ignition::dataurl::decode_contents(src, None)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// How a generated MachineConfig differs from the expected one, after `head`: the file
/// paths, the first differing line of each file, everything outside `spec.config`, and else
/// the Ignition version.
pub fn describe_mc_diff(head: &str, got: &Value, want: &Value) -> String {
    let files = |v: &Value| -> Vec<Value> {
        v.pointer("/spec/config/storage/files")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let (gf, wf) = (files(got), files(want));
    let mut out = format!("{head} differs");
    let paths = |fs: &[Value]| fs.iter().map(|f| f["path"].clone()).collect::<Vec<_>>();
    if paths(&gf) != paths(&wf) {
        out.push_str(&format!(
            " files: got {:?}, want {:?}",
            paths(&gf),
            paths(&wf)
        ));
    }
    for (g, w) in gf.iter().zip(&wf) {
        let (gt, wt) = (file_text(g), file_text(w));
        if gt != wt {
            let gl: Vec<&str> = gt.lines().collect();
            let wl: Vec<&str> = wt.lines().collect();
            for i in 0..gl.len().max(wl.len()) {
                let (a, b) = (gl.get(i), wl.get(i));
                if a != b {
                    out.push_str(&format!(
                        "\n    {} line {}: got {:?}, want {:?}",
                        w["path"],
                        i + 1,
                        a,
                        b
                    ));
                    break;
                }
            }
        }
    }
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(c) = v.pointer_mut("/spec/config") {
            *c = Value::Null;
        }
        v
    };
    if strip(got) != strip(want) {
        out.push_str(&format!(
            "\n    got {}\n    want {}",
            strip(got),
            strip(want)
        ));
    } else if got != want {
        let (gc, wc) = (&got["spec"]["config"], &want["spec"]["config"]);
        if gc["ignition"] != wc["ignition"] {
            out.push_str(&format!(
                "\n    ignition: got {}, want {}",
                gc["ignition"], wc["ignition"]
            ));
        }
    }
    out
}
