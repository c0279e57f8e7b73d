//! The patch formats the API server accepts: JSON merge patch (RFC 7386) and JSON patch
//! (RFC 6902).

use serde_json::Value;

/// Applies a JSON merge patch to `target` in place.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Default::default());
    }
    if let Value::Object(t) = target {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

/// Why a JSON patch could not be applied.
#[derive(Debug)]
pub struct PatchError(pub String);

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn split(pointer: &str) -> Result<Vec<String>, PatchError> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let rest = pointer
        .strip_prefix('/')
        .ok_or_else(|| PatchError(format!("invalid JSON pointer {pointer:?}")))?;
    Ok(rest.split('/').map(unescape).collect())
}

fn parent<'a>(doc: &'a mut Value, path: &[String]) -> Result<&'a mut Value, PatchError> {
    let mut cur = doc;
    for t in path {
        cur = match cur {
            Value::Object(m) => m
                .get_mut(t)
                .ok_or_else(|| PatchError(format!("missing path element {t:?}")))?,
            Value::Array(a) => {
                let i: usize = t
                    .parse()
                    .map_err(|_| PatchError(format!("bad array index {t:?}")))?;
                a.get_mut(i)
                    .ok_or_else(|| PatchError(format!("array index {i} out of range")))?
            }
            _ => return Err(PatchError(format!("cannot descend into {t:?}"))),
        };
    }
    Ok(cur)
}

fn get(doc: &Value, pointer: &str) -> Result<Value, PatchError> {
    doc.pointer(pointer)
        .cloned()
        .ok_or_else(|| PatchError(format!("no value at {pointer:?}")))
}

fn add(doc: &mut Value, pointer: &str, value: Value) -> Result<(), PatchError> {
    let path = split(pointer)?;
    let Some((last, init)) = path.split_last() else {
        *doc = value;
        return Ok(());
    };
    match parent(doc, init)? {
        Value::Object(m) => {
            m.insert(last.clone(), value);
        }
        Value::Array(a) => {
            if last == "-" {
                a.push(value);
            } else {
                let i: usize = last
                    .parse()
                    .map_err(|_| PatchError(format!("bad array index {last:?}")))?;
                if i > a.len() {
                    return Err(PatchError(format!("array index {i} out of range")));
                }
                a.insert(i, value);
            }
        }
        _ => return Err(PatchError(format!("cannot add at {pointer:?}"))),
    }
    Ok(())
}

fn remove(doc: &mut Value, pointer: &str) -> Result<Value, PatchError> {
    let path = split(pointer)?;
    let (last, init) = path
        .split_last()
        .ok_or_else(|| PatchError("cannot remove the whole document".into()))?;
    match parent(doc, init)? {
        Value::Object(m) => m
            .remove(last)
            .ok_or_else(|| PatchError(format!("no value at {pointer:?}"))),
        Value::Array(a) => {
            let i: usize = last
                .parse()
                .map_err(|_| PatchError(format!("bad array index {last:?}")))?;
            if i >= a.len() {
                return Err(PatchError(format!("array index {i} out of range")));
            }
            Ok(a.remove(i))
        }
        _ => Err(PatchError(format!("no value at {pointer:?}"))),
    }
}

/// Applies a JSON patch (a list of operations) to `doc`; on error `doc` is unchanged.
pub fn json_patch(doc: &mut Value, ops: &Value) -> Result<(), PatchError> {
    let ops = ops
        .as_array()
        .ok_or_else(|| PatchError("a JSON patch must be a list".into()))?;
    let mut work = doc.clone();
    for op in ops {
        let field = |k: &str| {
            op.get(k)
                .and_then(Value::as_str)
                .ok_or_else(|| PatchError(format!("operation without {k:?}")))
        };
        let path = field("path")?;
        let value = || {
            op.get("value")
                .cloned()
                .ok_or_else(|| PatchError("operation without \"value\"".into()))
        };
        match field("op")? {
            "add" => add(&mut work, path, value()?)?,
            "remove" => {
                remove(&mut work, path)?;
            }
            "replace" => {
                remove(&mut work, path)?;
                add(&mut work, path, value()?)?;
            }
            "move" => {
                let v = remove(&mut work, field("from")?)?;
                add(&mut work, path, v)?;
            }
            "copy" => {
                let v = get(&work, field("from")?)?;
                add(&mut work, path, v)?;
            }
            "test" => {
                if get(&work, path)? != value()? {
                    return Err(PatchError(format!("test failed at {path:?}")));
                }
            }
            other => return Err(PatchError(format!("unknown operation {other:?}"))),
        }
    }
    *doc = work;
    Ok(())
}
