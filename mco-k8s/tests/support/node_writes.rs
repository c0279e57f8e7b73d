//! What the ValidatingAdmissionPolicies of `manifests/02-daemon-policy.yaml` would refuse a
//! node's agent: a write of a Node or MachineConfigNode other than its own. The in-process
//! server evaluates no CEL; as [`super::rbac`] checks grants after the fact, tests check here
//! that every write an agent made names its own node, so the policies admit all of them.

use super::apiserver::Logged;
use serde_json::Value;

/// The kinds the policies guard, as the server keys requests (`plural[/subresource]`).
const GUARDED: &[&str] = &[
    "nodes",
    "nodes/status",
    "machineconfignodes",
    "machineconfignodes/status",
];

/// The writes (`POST`, `PUT`, `PATCH`) in `log` by the client with User-Agent `agent` of a
/// Node or MachineConfigNode that is not `node`'s: named otherwise (in the path, or in the
/// body's `metadata.name` for a create), or a MachineConfigNode whose body sets another
/// `spec.node.name`. Each as `METHOD plural name`.
pub fn elsewhere(log: &[Logged], agent: &str, node: &str) -> Vec<String> {
    let mut out = Vec::new();
    for l in log.iter().filter(|l| l.agent == agent) {
        let Some((method, what)) = l.what.split_once(' ') else {
            continue;
        };
        if !matches!(method, "POST" | "PUT" | "PATCH") || !GUARDED.contains(&what) {
            continue;
        }
        let body: Value = serde_json::from_str(&l.body).unwrap_or(Value::Null);
        let name = l
            .name
            .clone()
            .or_else(|| body.pointer("/metadata/name")?.as_str().map(str::to_string));
        let spec_node = body.pointer("/spec/node/name").and_then(Value::as_str);
        let own = name.as_deref() == Some(node)
            && (!what.starts_with("machineconfignodes") || spec_node.is_none_or(|n| n == node));
        if !own {
            out.push(format!(
                "{method} {what} {name:?} (spec.node.name {spec_node:?})"
            ));
        }
    }
    out
}
