//! The ConfigMaps a build mounts: the Containerfile, the gzipped MachineConfig, the
//! additional trust bundle, and `/etc/containers` policy and registries files.

use super::containerfile::containerfile;
use super::error::BuildError;
use super::request::RequestOpts;
use crate::api::MachineConfig;
use crate::gocompat::{base64, gzip};
use serde_json::{json, Value};

/// The key holding the gzipped, base64-encoded MachineConfig.
pub const MACHINE_CONFIG_KEY: &str = "machineconfig.json.gz";
/// The key holding the trust bundle.
pub const TRUST_BUNDLE_KEY: &str = "openshift-config-user-ca-bundle.crt";

/// The MachineConfig as Go encodes it. `kernelArguments` and `extensions` are `null` where the
/// object as read (`source`) had none (Go's nil slices survive the API server's round trip) and
/// `[]` where it had an empty list. Without the object as read they are the typed value's lists
/// (`[]` when empty): a rendered config holds `[]`, never `null`, since upstream's merge starts
/// both lists empty rather than nil.
pub fn go_machine_config(mc: &MachineConfig, source: Option<&Value>) -> Result<Value, BuildError> {
    let mut v = serde_json::to_value(mc).map_err(|e| BuildError::Encode(e.to_string()))?;
    let Some(source) = source else {
        return Ok(v);
    };
    for key in ["kernelArguments", "extensions"] {
        let nil = source
            .get("spec")
            .and_then(|s| s.get(key))
            .is_none_or(Value::is_null);
        if nil {
            if let Some(spec) = v.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert(key.to_string(), Value::Null);
            }
        }
    }
    Ok(v)
}

/// The contents of the rendered config's file at `path`, keyed by its name under
/// `/etc/containers/`, if it has one.
fn etc_containers_file(mc: &MachineConfig, path: &str) -> Result<Option<Value>, BuildError> {
    let files = mc
        .spec
        .config
        .as_ref()
        .and_then(|c| c.pointer("/storage/files"))
        .and_then(Value::as_array);
    let Some(file) = files
        .into_iter()
        .flatten()
        .find(|f| f["path"].as_str() == Some(path))
    else {
        return Ok(None);
    };
    let Some(source) = file["contents"]["source"].as_str() else {
        return Err(BuildError::Encode(format!("nil source for {path}")));
    };
    let compression = file["contents"]["compression"]
        .as_str()
        .filter(|c| !c.is_empty());
    let bytes = mco_ignition::dataurl::decode_contents(source, compression)
        .map_err(|e| BuildError::Encode(format!("error decoding {path}: {e}")))?;
    let key = path.trim_start_matches("/etc/containers/");
    Ok(Some(json!({ key: String::from_utf8_lossy(&bytes) })))
}

/// The ConfigMaps, in upstream's order.
pub fn config_maps(opts: &RequestOpts<'_>) -> Result<Vec<Value>, BuildError> {
    let inputs = &opts.inputs;
    let build = &opts.mosb.metadata.name;
    let text = containerfile(opts.mosb, inputs.mosc, inputs.rendered)?;
    let mc = go_machine_config(inputs.rendered, inputs.rendered_source)?;
    let mc_json = mco_ignition::gocompat::json::to_go_compact(&mc);
    let encoded = base64::std_encode(&gzip::gzip_best(mc_json.as_bytes()));
    // Bytes in Kubernetes JSON: base64 text, `null` when unset, as read.
    let bundle = inputs
        .controller_config
        .spec
        .extra
        .get("additionalTrustBundle")
        .cloned()
        .unwrap_or(Value::Null);
    let mut out = vec![
        json!({
            "metadata": opts.object_meta(&format!("containerfile-{build}")),
            "data": { "Containerfile": text },
        }),
        json!({
            "metadata": opts.object_meta(&format!("mc-{build}")),
            "data": { MACHINE_CONFIG_KEY: encoded },
        }),
        json!({
            "metadata": opts.object_meta(&format!("additionaltrustbundle-{build}")),
            "binaryData": { TRUST_BUNDLE_KEY: bundle },
        }),
    ];
    for (prefix, path) in [
        ("etc-policy", "/etc/containers/policy.json"),
        ("etc-registries", "/etc/containers/registries.conf"),
    ] {
        if let Some(data) = etc_containers_file(inputs.rendered, path)? {
            out.push(json!({
                "metadata": opts.object_meta(&format!("{prefix}-{build}")),
                "data": data,
            }));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(spec: Value) -> (MachineConfig, Value) {
        let v = json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfig",
            "metadata": {"name": "rendered-worker-0"},
            "spec": spec,
        });
        (
            serde_json::from_value(v.clone()).expect("a MachineConfig"),
            v,
        )
    }

    fn lists(v: &Value) -> (Value, Value) {
        (
            v["spec"]["kernelArguments"].clone(),
            v["spec"]["extensions"].clone(),
        )
    }

    #[test]
    fn without_the_object_as_read_empty_lists_stay_empty() {
        let (mc, _) = rendered(json!({"kernelArguments": [], "extensions": []}));
        let got = go_machine_config(&mc, None).expect("encodes");
        assert_eq!(lists(&got), (json!([]), json!([])));
    }

    #[test]
    fn the_object_as_read_tells_nil_from_empty() {
        let (mc, src) = rendered(json!({"kernelArguments": []}));
        let got = go_machine_config(&mc, Some(&src)).expect("encodes");
        assert_eq!(lists(&got), (json!([]), Value::Null));
        let (mc, src) = rendered(json!({"kernelArguments": null, "extensions": ["usbguard"]}));
        let got = go_machine_config(&mc, Some(&src)).expect("encodes");
        assert_eq!(lists(&got), (Value::Null, json!(["usbguard"])));
    }
}
