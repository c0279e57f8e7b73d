//! JSON as upstream's server writes it: Go `encoding/json` string escaping, object keys in the
//! order the value holds them (Go writes struct fields in declaration order, which the callers
//! reproduce when they build the value), compact or indented like `json.MarshalIndent`.

use mco_ignition::emit::write_go_string;
use mco_ignition::schema::{Kind, Obj};
use serde_json::{Map, Value};
use std::fmt::Write as _;

/// Compact Go-style JSON, keys in the value's own order.
pub fn to_go_compact(value: &Value) -> String {
    let mut out = String::with_capacity(1024);
    write(&mut out, value, None, 0);
    out
}

/// Go `json.MarshalIndent(v, "", indent)`: keys in the value's own order, empty objects and
/// lists written as `{}` and `[]`, no trailing newline.
pub fn to_go_indented(value: &Value, indent: &str) -> String {
    let mut out = String::with_capacity(1024);
    write(&mut out, value, Some(indent), 0);
    out
}

/// A copy of `value` with every object's keys sorted bytewise, as the API server stores
/// free-form JSON.
pub fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            let mut out = Map::with_capacity(map.len());
            for k in keys {
                if let Some(v) = map.get(k) {
                    out.insert(k.clone(), sorted(v));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// A copy of a spec 3.x config with every object's keys in upstream's struct order (the order
/// Go writes typed configs in); keys the schema does not know keep their place after the rest.
pub fn schema_ordered(value: &Value, obj: &'static Obj) -> Value {
    let Value::Object(map) = value else {
        return value.clone();
    };
    let mut out = Map::with_capacity(map.len());
    for field in obj.fields {
        if let Some(v) = map.get(field.name) {
            let v = match field.kind {
                Kind::Obj(o) => schema_ordered(v, o),
                Kind::ObjList(o) => match v {
                    Value::Array(items) => {
                        Value::Array(items.iter().map(|i| schema_ordered(i, o)).collect())
                    }
                    other => other.clone(),
                },
                _ => v.clone(),
            };
            out.insert(field.name.to_string(), v);
        }
    }
    for (k, v) in map {
        if !out.contains_key(k) {
            out.insert(k.clone(), v.clone());
        }
    }
    Value::Object(out)
}

fn newline(out: &mut String, indent: Option<&str>, depth: usize) {
    if let Some(ind) = indent {
        out.push('\n');
        for _ in 0..depth {
            out.push_str(ind);
        }
    }
}

fn write(out: &mut String, value: &Value, indent: Option<&str>, depth: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Value::String(s) => write_go_string(out, s),
        Value::Array(items) => {
            out.push('[');
            if items.is_empty() {
                out.push(']');
                return;
            }
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent, depth + 1);
                write(out, item, indent, depth + 1);
            }
            newline(out, indent, depth);
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            if map.is_empty() {
                out.push('}');
                return;
            }
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent, depth + 1);
                write_go_string(out, k);
                out.push(':');
                if indent.is_some() {
                    out.push(' ');
                }
                write(out, v, indent, depth + 1);
            }
            newline(out, indent, depth);
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_insertion_order_and_escapes_like_go() {
        let v = json!({"b": "<&>", "a": [1, {}], "c": []});
        assert_eq!(
            to_go_compact(&v),
            r#"{"b":"\u003c\u0026\u003e","a":[1,{}],"c":[]}"#
        );
    }

    #[test]
    fn indents_like_marshal_indent() {
        let v = json!({"k": {"x": [true, null]}, "e": {}});
        assert_eq!(
            to_go_indented(&v, "    "),
            "{\n    \"k\": {\n        \"x\": [\n            true,\n            null\n        ]\n    },\n    \"e\": {}\n}"
        );
    }

    #[test]
    fn orders_configs_like_go_structs() {
        let v = json!({"storage": {"files": [{"mode": 420, "contents": {"source": "data:,"}, "path": "/a", "overwrite": true}]}, "ignition": {"version": "3.5.0"}});
        let o = schema_ordered(&v, &mco_ignition::schema::CONFIG);
        assert_eq!(
            to_go_compact(&o),
            r#"{"ignition":{"version":"3.5.0"},"storage":{"files":[{"overwrite":true,"path":"/a","contents":{"source":"data:,"},"mode":420}]}}"#
        );
    }

    #[test]
    fn sorts_nested_keys() {
        let v = json!({"b": {"z": 1, "a": 2}, "a": [{"y": 1, "x": 2}]});
        assert_eq!(
            to_go_compact(&sorted(&v)),
            r#"{"a":[{"x":2,"y":1}],"b":{"a":2,"z":1}}"#
        );
    }
}
