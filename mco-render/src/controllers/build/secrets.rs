//! The canonical pull and push secrets: each input secret's credentials, in
//! `kubernetes.io/dockerconfigjson` form, under the build's name.

use super::error::BuildError;
use super::request::RequestOpts;
use crate::gocompat::base64;
use serde_json::{json, Map, Value};

/// One registry's credentials, in Go's field order.
fn entry(host: &str, v: &Value) -> Result<Value, String> {
    let Some(obj) = v.as_object() else {
        return Err(format!(
            "json: cannot unmarshal {} into Go struct field DockerConfig.{host} of type secrets.DockerConfigEntry",
            json_kind(v)
        ));
    };
    let mut out = Map::new();
    for key in ["username", "password", "email", "auth"] {
        match obj.get(key) {
            Some(Value::String(s)) if !s.is_empty() => {
                out.insert(key.to_string(), Value::String(s.clone()));
            }
            Some(Value::String(_)) | Some(Value::Null) | None => {}
            Some(other) => {
                return Err(format!(
                    "json: cannot unmarshal {} into Go struct field DockerConfigEntry.{key} of type string",
                    json_kind(other)
                ))
            }
        }
    }
    Ok(Value::Object(out))
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The `{"auths": ...}` document a `.dockerconfigjson` or legacy `.dockercfg` value holds.
pub fn normalize_docker_config(bytes: &[u8]) -> Result<Value, String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let Value::Object(top) = doc else {
        return Err("dockerconfig is not a JSON object".to_string());
    };
    let (auths, legacy) = match top.get("auths") {
        Some(Value::Object(a)) => (a.clone(), false),
        _ => (top.clone(), true),
    };
    let mut hosts: Vec<(&String, &Value)> = auths.iter().collect();
    hosts.sort_by(|a, b| a.0.cmp(b.0));
    let mut out = Map::new();
    for (host, v) in hosts {
        let e = entry(host, v).map_err(|e| {
            if legacy {
                format!(
                    "decoding DockerConfig / DockerConfigJSON: could not decode DockerConfig: {e}"
                )
            } else {
                e
            }
        })?;
        out.insert(host.clone(), e);
    }
    Ok(json!({ "auths": out }))
}

fn secret_bytes(secret: &Value) -> Vec<u8> {
    let data = &secret["data"];
    let key = match secret["type"].as_str() {
        Some("kubernetes.io/dockercfg") => ".dockercfg",
        _ => ".dockerconfigjson",
    };
    data[key]
        .as_str()
        .and_then(base64::std_decode)
        .unwrap_or_default()
}

fn canonical(opts: &RequestOpts<'_>, name: String, secret: &Value) -> Result<Value, BuildError> {
    let original = secret["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let auths = normalize_docker_config(&secret_bytes(secret))
        .map_err(|e| BuildError::Canonicalize(original.clone(), name.clone(), e))?;
    let text = mco_ignition::gocompat::json::to_go_compact(&auths);
    let mut metadata = opts.object_meta(&name);
    let prefix = "machineconfiguration.openshift.io";
    let labels = &mut metadata["labels"];
    labels[format!("{prefix}/canonicalizedSecret")] = json!("");
    labels[format!("{prefix}/originalSecretName")] = json!(original);
    labels[format!("{prefix}/on-cluster-layering")] = json!("");
    Ok(json!({
        "metadata": metadata,
        "data": { ".dockerconfigjson": base64::std_encode(text.as_bytes()) },
        "type": "kubernetes.io/dockerconfigjson",
    }))
}

/// The base image pull secret, then the final image push secret.
pub fn secrets(opts: &RequestOpts<'_>) -> Result<Vec<Value>, BuildError> {
    let build = &opts.mosb.metadata.name;
    Ok(vec![
        canonical(opts, format!("base-{build}"), opts.base_pull_secret)?,
        canonical(opts, format!("final-{build}"), opts.push_secret)?,
    ])
}
