//! JSON Schema helpers for fields whose shape the API server must not prune or check (the
//! CustomResourceDefinitions are generated from these types' schemas).

use schemars::{json_schema, Schema, SchemaGenerator};

/// Any JSON object, kept as written (Ignition configs, pass-through sections).
pub fn preserve_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true
    })
}

/// An integer or a string such as `"10%"`.
pub fn int_or_string(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "x-kubernetes-int-or-string": true
    })
}
