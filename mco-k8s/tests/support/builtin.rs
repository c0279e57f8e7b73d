//! Built-in kinds checked as kube-apiserver's own validation checks them, for the rules our
//! components' writes can break: each admission webhook's `clientConfig` names exactly one of
//! `url` and `service` (an edit that adds one while the other stays is refused), a `url` is
//! `https`, webhook names are unique.

use super::apiserver::ResourceDef;
use serde_json::Value;

/// The causes `obj` (of a built-in kind) fails validation for, worded as the API server's
/// field errors; empty when it passes or the kind has no rule here.
pub fn violations(def: &ResourceDef, obj: &Value) -> Vec<String> {
    match def.plural {
        "validatingwebhookconfigurations" | "mutatingwebhookconfigurations" => webhooks(obj),
        _ => Vec::new(),
    }
}

fn webhooks(obj: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (i, hook) in obj["webhooks"].as_array().into_iter().flatten().enumerate() {
        let at = format!("webhooks[{i}]");
        if let Some(name) = hook["name"].as_str() {
            if !seen.insert(name) {
                errs.push(format!("{at}.name: Duplicate value: {name:?}"));
            }
        }
        let cc = &hook["clientConfig"];
        match (cc.get("url"), cc.get("service")) {
            (Some(u), None) if !u.is_null() => {
                let url = u.as_str().unwrap_or_default();
                if !url.starts_with("https://") {
                    errs.push(format!(
                        "{at}.clientConfig.url: Invalid value: {url:?}: 'https' is the only allowed URL scheme"
                    ));
                }
            }
            (None, Some(s)) if !s.is_null() => {}
            _ => errs.push(format!(
                "{at}.clientConfig: Required value: exactly one of url or service is required"
            )),
        }
    }
    errs
}
