//! JSON as upstream's server writes it: the Ignition engine's Go `encoding/json` text
//! (re-exported), and the key orders callers put values in before writing them.

pub use mco_ignition::gocompat::json::{go_json_string, to_go_compact, to_go_indented};
use mco_ignition::schema::{Kind, Obj};
use serde_json::{Map, Value};

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
