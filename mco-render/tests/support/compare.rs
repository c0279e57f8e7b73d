// Shared by the conformance tests, included with `#[path]`: how two JSON values differ, said by
// JSON path, for failure messages that point at the field.
#![allow(dead_code)]

use serde_json::Value;

/// The paths where `got` and `want` differ (at most five), each with both values shortened:
/// `configMaps/1/data: got ... want ...`. Empty when they are equal.
pub fn differences(got: &Value, want: &Value, path: &str) -> Vec<String> {
    let mut out = Vec::new();
    walk(got, want, path, &mut out);
    out
}

fn walk(got: &Value, want: &Value, path: &str, out: &mut Vec<String>) {
    if out.len() >= 5 || got == want {
        return;
    }
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            for k in g.keys().chain(w.keys().filter(|k| !g.contains_key(*k))) {
                match (g.get(k), w.get(k)) {
                    (Some(a), Some(b)) => walk(a, b, &format!("{path}/{k}"), out),
                    // An absent key is not `null`.
                    (a, b) => out.push(format!(
                        "{path}/{k}: got {} want {}",
                        a.map_or("(absent)".into(), short),
                        b.map_or("(absent)".into(), short)
                    )),
                }
            }
        }
        (Value::Array(g), Value::Array(w)) if g.len() == w.len() => {
            for (i, (a, b)) in g.iter().zip(w).enumerate() {
                walk(a, b, &format!("{path}/{i}"), out);
            }
        }
        _ => out.push(format!("{path}: got {} want {}", short(got), short(want))),
    }
}

fn short(v: &Value) -> String {
    v.to_string().chars().take(300).collect()
}

/// `Err` with the differences of `got` from `want` under `what`, `Ok` when equal.
pub fn same(what: &str, got: &Value, want: &Value) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(differences(got, want, what).join("\n  "))
    }
}
