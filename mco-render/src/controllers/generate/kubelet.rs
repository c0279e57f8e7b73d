//! The KubeletConfig controller: validation, the merged `kubelet.conf`, and the generated
//! MachineConfig `99-<pool>-generated-kubelet[-N]`.

use std::collections::BTreeMap;

use serde_json::Value;

use super::kubelet_types::{drop_unknown_fields, KUBELET_CONFIGURATION as KC, KUBELET_TY};
use super::names::{self, Kind};
use super::{
    base_config, find_file, ign_config, ign_file, machine_config_values, pools_for,
    resource_condition, template_role, FeatureGates, GenerateInput, GenerateOutcome, Pool, Sync,
    Unmet,
};
use crate::gocompat::duration::parse_duration;
use crate::gocompat::gostruct::{
    decode, field, field_mut, go_fmt, marshal, merge, str_field, strings_field, GoVal,
};
use crate::gocompat::json::{sorted, to_go_indented};
use crate::release::{
    KubeletConditions, KubeletConfEncoding, KubeletTls, LogLevelRule, MessageCase, Profile,
    StaticPodPathRule, UpToDateRule,
};
use crate::render::name::to_go_yaml;

/// The error when a KubeletConfig selects no pool.
const NO_POOL: &str = "could not find any MachineConfigPool set for KubeletConfig";
/// The node label that marks control-plane nodes.
const MASTER_LABEL: &str = "node-role.kubernetes.io/master";
/// Where the merged kubelet configuration goes.
pub const KUBELET_CONF_PATH: &str = "/etc/kubernetes/kubelet.conf";
/// The kubelet log-level drop-in.
pub const LOG_LEVEL_PATH: &str = "/etc/systemd/system/kubelet.service.d/20-logging.conf";
/// The node-sizing environment file.
pub const NODE_SIZING_PATH: &str = "/etc/node-sizing-enabled.env";
/// What stands for the address Go prints for a pointer to the log level (releases before
/// 4.22 print `%v` of an `*int32`, an address that differs on every run).
pub const GO_POINTER: &str = "0xc000010000";

/// Compact JSON with object keys sorted, as the API server hands the raw
/// `spec.kubeletConfig` to the controller.
pub fn raw_text(v: &Value) -> String {
    serde_json::to_string(&sorted(v)).unwrap_or_default()
}

/// The user's `spec.kubeletConfig`, when present and not null.
fn user_raw(cfg: &Value) -> Option<Value> {
    cfg.pointer("/spec/kubeletConfig")
        .filter(|v| !v.is_null())
        .map(sorted)
}

/// Decodes a KubeletConfiguration as `release` reads it: fields its kubelet types lack are
/// dropped.
fn decode_kubelet(raw: &Value, release: &Profile) -> Result<GoVal, String> {
    let mut raw = raw.clone();
    drop_unknown_fields(&mut raw, release.kubelet_types);
    decode(KUBELET_TY, &raw).map_err(|e| e.0)
}

/// Upstream's `validateUserKubeletConfig` of the newest release: the log level range, and
/// the fields a user may not set.
pub fn validate_user_kubelet_config(cfg: &Value) -> Result<(), String> {
    validate_user_kubelet_config_as(cfg, &Profile::default())
}

/// Upstream's `validateUserKubeletConfig` as `release` checks a KubeletConfig.
pub fn validate_user_kubelet_config_as(cfg: &Value, release: &Profile) -> Result<(), String> {
    if let Some(level) = cfg.pointer("/spec/logLevel").and_then(Value::as_i64) {
        match release.kubelet_log_level {
            LogLevelRule::ZeroToTen if !(0..=10).contains(&level) => {
                return Err(format!(
                    "KubeletConfig's LogLevel is not valid [0,10]: {level}"
                ));
            }
            LogLevelRule::OneToTenPointer if !(1..=10).contains(&level) => {
                return Err(format!(
                    "KubeletConfig's LogLevel is not valid [1,10]: {GO_POINTER}"
                ));
            }
            _ => {}
        }
    }
    let Some(raw) = user_raw(cfg) else {
        return Ok(());
    };
    let kc = decode_kubelet(&raw, release)
        .map_err(|e| format!("KubeletConfig could not be unmarshalled, err: {e}"))?;
    let s = |k| str_field(&kc, &KC, k);
    if !s("cgroupDriver").is_empty() {
        return Err(format!(
            "KubeletConfiguration: cgroupDriver is not allowed to be set, but contains: {}",
            s("cgroupDriver")
        ));
    }
    if let Some(v @ GoVal::Slice(items)) = field(&kc, &KC, "clusterDNS") {
        if !items.is_empty() {
            return Err(format!(
                "KubeletConfiguration: clusterDNS is not allowed to be set, but contains: {}",
                go_fmt(v)
            ));
        }
    }
    if !s("clusterDomain").is_empty() {
        return Err(format!(
            "KubeletConfiguration: clusterDomain is not allowed to be set, but contains: {}",
            s("clusterDomain")
        ));
    }
    if let Some(v @ GoVal::Map(m)) = field(&kc, &KC, "featureGates") {
        if !m.is_empty() {
            return Err(format!(
                "KubeletConfiguration: featureGates is not allowed to be set, but contains: {}",
                go_fmt(v)
            ));
        }
    }
    if release.static_pod_path == StaticPodPathRule::Refused {
        let spp = s("staticPodPath");
        if !spp.is_empty() {
            return Err(format!(
                "KubeletConfiguration: staticPodPath is not allowed to be set, but contains: {spp}"
            ));
        }
    }
    if release.swap_settings_refused {
        if let Some(GoVal::Ptr(b)) = field(&kc, &KC, "failSwapOn") {
            return Err(format!(
                "KubeletConfiguration: failSwapOn is not allowed to be set, but contains: {}",
                go_fmt(b)
            ));
        }
        if let Some(GoVal::Struct(swap)) = field(&kc, &KC, "memorySwap") {
            if let Some(GoVal::Str(b)) = swap.first() {
                if !b.is_empty() {
                    return Err(format!(
                        "KubeletConfiguration: swapBehavior is not allowed to be set, but contains: {b}"
                    ));
                }
            }
        }
    }
    let auto_sizing = cfg
        .pointer("/spec/autoSizingReserved")
        .and_then(Value::as_bool)
        == Some(true);
    if let Some(GoVal::Map(m)) = field(&kc, &KC, "systemReserved") {
        if !m.is_empty() && auto_sizing {
            return Err(
                "KubeletConfiguration: autoSizingReserved and systemdReserved cannot be set together"
                    .into(),
            );
        }
    }
    let (src, sc) = (s("systemReservedCgroup"), s("systemCgroups"));
    if release.system_reserved_cgroup_rules && !src.is_empty() && !sc.is_empty() && src != sc {
        return Err(format!(
            "KubeletConfiguration: systemReservedCgroup ({src}) must match systemCgroups ({sc})"
        ));
    }
    Ok(())
}

/// Whether a pool runs on control-plane nodes (by name or by its node selector).
fn is_control_plane(pool: &Pool) -> bool {
    if pool.name == "master" || pool.name == "arbiter" {
        return true;
    }
    let Some(sel) = &pool.node_selector else {
        return false;
    };
    sel.match_labels.contains_key(MASTER_LABEL)
        || sel
            .match_expressions
            .iter()
            .any(|e| e.key == MASTER_LABEL && (e.operator == "Exists" || e.operator == "In"))
}

/// Upstream's `validateStaticPodPathGivenPool` (4.22).
fn validate_static_pod_path(cfg: &Value, pool: &Pool, release: &Profile) -> Result<(), String> {
    if release.static_pod_path != StaticPodPathRule::PerPool {
        return Ok(());
    }
    let Some(raw) = user_raw(cfg) else {
        return Ok(());
    };
    if is_control_plane(pool) {
        if raw_text(&raw).contains("\"staticPodPath\"") {
            return Err(format!(
                "KubeletConfiguration: staticPodPath is not allowed to be set for control plane pool \"{}\"",
                pool.name
            ));
        }
        return Ok(());
    }
    let kc = decode_kubelet(&raw, release)
        .map_err(|e| format!("KubeletConfig could not be unmarshalled, err: {e}"))?;
    let spp = str_field(&kc, &KC, "staticPodPath");
    if !spp.is_empty() {
        return Err(format!(
            "KubeletConfiguration: staticPodPath must be empty for pool \"{}\", but contains: {spp}",
            pool.name
        ));
    }
    Ok(())
}

/// Decodes a kubelet.conf (YAML or JSON) as upstream does.
fn decode_kubelet_conf(bytes: &[u8], release: &Profile) -> Result<GoVal, String> {
    let text = String::from_utf8_lossy(bytes);
    let yaml: Value = serde_yaml_ng::from_str(&text).map_err(|e| e.to_string())?;
    let coerced = crate::gocompat::gostruct::coerce_yaml_scalars(KUBELET_TY, &yaml);
    decode_kubelet(&coerced, release)
}

/// The base kubelet configuration of a role with every known feature gate set (but those
/// the release leaves out, [`Profile::kubelet_gates_excluded`]).
pub(crate) fn original_kubelet_config(
    feature_gates: &FeatureGates,
    base: &[Value],
    role: &str,
    release: &Profile,
) -> Result<GoVal, String> {
    let name = format!("01-{role}-kubelet");
    let mc = base_config(base, &name)
        .ok_or_else(|| "could not generate the original Kubelet config ignition: could not generate old kubelet config".to_string())?;
    let bytes = find_file(&[mc], KUBELET_CONF_PATH)
        .ok_or_else(|| "could not generate the original Kubelet config ignition: could not generate old kubelet config".to_string())?;
    let mut kc = decode_kubelet_conf(&bytes, release)
        .map_err(|e| format!("could not deserialize the Kubelet source: {e}"))?;
    let mut gates = BTreeMap::new();
    for g in &feature_gates.enabled {
        gates.insert(g.clone(), GoVal::Bool(true));
    }
    for g in &feature_gates.disabled {
        gates.insert(g.clone(), GoVal::Bool(false));
    }
    for g in release.kubelet_gates_excluded {
        gates.remove(*g);
    }
    if let Some(fg) = field_mut(&mut kc, &KC, "featureGates") {
        let mut m = match std::mem::replace(fg, GoVal::Nil) {
            GoVal::Map(m) => m,
            _ => BTreeMap::new(),
        };
        m.extend(gates);
        *fg = GoVal::Map(m);
    }
    Ok(kc)
}

/// Applies the Node object's worker latency profile (only for the `worker` pool).
pub(crate) fn apply_node_config(node: Option<&Value>, kc: &mut GoVal) {
    let profile = node
        .and_then(|n| n.pointer("/spec/workerLatencyProfile"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let freq = match profile {
        "MediumUpdateAverageReaction" => "20s",
        "LowUpdateSlowReaction" => "1m",
        "Default" => "10s",
        _ => return,
    };
    if let (Some(f), Ok(d)) = (
        field_mut(kc, &KC, "nodeStatusUpdateFrequency"),
        parse_duration(freq),
    ) {
        *f = GoVal::Duration(d);
    }
}

fn set_str(kc: &mut GoVal, k: &str, v: &str) {
    if let Some(f) = field_mut(kc, &KC, k) {
        *f = GoVal::Str(v.to_string());
    }
}

fn set_strings(kc: &mut GoVal, k: &str, v: &[String]) {
    if let Some(f) = field_mut(kc, &KC, k) {
        *f = GoVal::Slice(v.iter().map(|s| GoVal::Str(s.clone())).collect());
    }
}

/// What upstream's kubelet codec writes for a KubeletConfiguration: YAML, or until 4.16
/// JSON (fields in struct order) indented by two spaces ([`Profile::kubelet_conf_encoding`]);
/// only the fields of the release's kubelet types.
pub(crate) fn encode_kubelet_conf(kc: &GoVal, release: &Profile) -> String {
    let mut v = marshal(kc, KUBELET_TY);
    if let Value::Object(o) = &mut v {
        o.insert("apiVersion".into(), "kubelet.config.k8s.io/v1beta1".into());
        o.insert("kind".into(), "KubeletConfiguration".into());
    }
    drop_unknown_fields(&mut v, release.kubelet_types);
    match release.kubelet_conf_encoding {
        KubeletConfEncoding::Yaml => to_go_yaml(&v),
        KubeletConfEncoding::IndentedJson => {
            // The codec writes the kind first (the struct's embedded TypeMeta), ends the
            // document with a newline, and json.Indent keeps it.
            if let Value::Object(o) = &mut v {
                let rest = std::mem::take(o);
                o.insert("kind".into(), "KubeletConfiguration".into());
                o.insert("apiVersion".into(), "kubelet.config.k8s.io/v1beta1".into());
                o.extend(
                    rest.into_iter()
                        .filter(|(k, _)| k != "kind" && k != "apiVersion"),
                );
            }
            to_go_indented(&v, "  ") + "\n"
        }
    }
}

/// The generated files: node sizing, log level and kubelet.conf (each when present).
fn generate_files(
    cfg: &Value,
    original: &mut GoVal,
    release: &Profile,
) -> Result<Vec<Value>, String> {
    let mut reserved: BTreeMap<&str, String> = BTreeMap::new();
    if let Some(raw) = user_raw(cfg) {
        let mut spec = decode_kubelet(&raw, release)
            .map_err(|e| format!("could not deserialize the new Kubelet config: {e}"))?;
        if let Some(GoVal::Map(m)) = field_mut(&mut spec, &KC, "systemReserved") {
            for key in ["memory", "cpu", "ephemeral-storage"] {
                if let Some(GoVal::Str(v)) = m.remove(key) {
                    reserved.insert(key, v);
                }
            }
        }
        if let Some(fg) = field_mut(&mut spec, &KC, "featureGates") {
            *fg = GoVal::Nil;
        }
        if raw_text(&raw).contains("\"protectKernelDefaults\":false") {
            if let Some(p) = field_mut(original, &KC, "protectKernelDefaults") {
                *p = GoVal::Bool(false);
            }
        }
        merge(original, &spec, KUBELET_TY);
        let enforce = strings_field(&spec, &KC, "enforceNodeAllocatable");
        if release.system_reserved_cgroup_rules
            && str_field(&spec, &KC, "systemReservedCgroup").is_empty()
            && !enforce.is_empty()
            && !enforce
                .iter()
                .any(|v| v == "system-reserved" || v == "system-reserved-compressible")
        {
            set_str(original, "systemReservedCgroup", "");
        }
    }
    if release.system_reserved_cgroup_rules
        && !str_field(original, &KC, "reservedSystemCPUs").is_empty()
    {
        set_str(original, "systemReservedCgroup", "");
        let mut filtered: Vec<String> = strings_field(original, &KC, "enforceNodeAllocatable")
            .into_iter()
            .filter(|v| v != "system-reserved" && v != "system-reserved-compressible")
            .collect();
        if !filtered.iter().any(|v| v == "pods") {
            filtered.insert(0, "pods".into());
        }
        set_strings(original, "enforceNodeAllocatable", &filtered);
    }
    let (src, sc) = (
        str_field(original, &KC, "systemReservedCgroup").to_string(),
        str_field(original, &KC, "systemCgroups").to_string(),
    );
    if release.system_reserved_cgroup_rules && !src.is_empty() && !sc.is_empty() && src != sc {
        return Err(format!(
            "invalid merged configuration: systemReservedCgroup ({src}) must match systemCgroups ({sc})"
        ));
    }
    let kubelet = ign_file(
        KUBELET_CONF_PATH,
        encode_kubelet_conf(original, release).as_bytes(),
    );
    let log_level = cfg
        .pointer("/spec/logLevel")
        .and_then(Value::as_i64)
        .map(|l| {
            ign_file(
                LOG_LEVEL_PATH,
                format!("[Service]\nEnvironment=\"KUBELET_LOG_LEVEL={l}\"\n").as_bytes(),
            )
        });
    let auto = cfg
        .pointer("/spec/autoSizingReserved")
        .and_then(Value::as_bool);
    let sizing = |auto: Option<bool>| {
        let pick = |k: &str, d: &str| {
            reserved
                .get(k)
                .filter(|v| !v.is_empty())
                .cloned()
                .unwrap_or_else(|| d.to_string())
        };
        let text = format!(
            "NODE_SIZING_ENABLED={}\nSYSTEM_RESERVED_MEMORY={}\nSYSTEM_RESERVED_CPU={}\nSYSTEM_RESERVED_ES={}\n",
            auto.unwrap_or(false),
            pick("memory", "1Gi"),
            pick("cpu", "500m"),
            pick("ephemeral-storage", "1Gi"),
        );
        ign_file(NODE_SIZING_PATH, text.as_bytes())
    };
    let node_sizing = if !reserved.is_empty() {
        Some(sizing(None))
    } else if cfg
        .pointer("/spec/autoSizingReserved")
        .is_some_and(|v| !v.is_null())
    {
        Some(sizing(auto))
    } else {
        None
    };
    Ok(node_sizing
        .into_iter()
        .chain(log_level)
        .chain(std::iter::once(kubelet))
        .collect())
}

/// Records a status update the way the KubeletConfig controller does: one condition (at
/// most three kept, a repeated message not added again): `Accepted`, followed by the legacy
/// `Success`/`Failure` condition (4.22), or until 4.21 `Success` or `Failure` (False) alone.
fn set_status(sync: &mut Sync, err: Option<&str>, message: Option<String>, release: &Profile) {
    let (status, default_msg) = match err {
        Some(e) => ("False", format!("Error: {e}")),
        None => ("True", "Success".to_string()),
    };
    let msg = message.unwrap_or(default_msg);
    let legacy_only = release.kubelet_conditions == KubeletConditions::SuccessOrFailure;
    let kind = match (legacy_only, err) {
        (false, _) => "Accepted",
        (true, None) => "Success",
        (true, Some(_)) => "Failure",
    };
    let conds = &mut sync.after.conditions;
    if !legacy_only {
        conds.retain(|c| c.type_ != "Success" && c.type_ != "Failure");
    }
    if conds.last().map(|c| c.message()) != Some(msg.as_str()) {
        conds.push(resource_condition(kind, status, msg.clone()));
    }
    if conds.len() > 3 {
        let excess = conds.len() - 3;
        conds.drain(..excess);
    }
    if legacy_only {
        return;
    }
    let legacy = if status == "True" {
        "Success"
    } else {
        "Failure"
    };
    conds.push(resource_condition(legacy, "True", msg));
}

/// Whether the feature gates in an existing generated MachineConfig's `kubelet.conf` are those
/// of the base configuration (upstream's check before skipping an up-to-date pool). A
/// MachineConfig without any config matches when the base has no gates; one whose config has
/// no `kubelet.conf`, or one that does not decode, is an error.
fn feature_gates_match(
    existing: &Value,
    original: &GoVal,
    release: &Profile,
) -> Result<bool, String> {
    let gates = |kc: &GoVal| match field(kc, &KC, "featureGates") {
        Some(GoVal::Map(m)) => Some(m.clone()),
        _ => None,
    };
    let has_config = existing
        .pointer("/spec/config")
        .is_some_and(|c| !c.is_null());
    if !has_config {
        return Ok(gates(original).is_none_or(|m| m.is_empty()));
    }
    let cased = |m: String| match release.kubelet_error_case {
        MessageCase::Lower => m,
        MessageCase::Capitalised => {
            let mut c = m.chars();
            c.next()
                .map(|first| first.to_uppercase().chain(c).collect())
                .unwrap_or_default()
        }
    };
    let Some(bytes) = find_file(&[existing], KUBELET_CONF_PATH) else {
        return Err(cased(
            "error finding kubelet config: could not find Kubelet Config".into(),
        ));
    };
    let kc = decode_kubelet_conf(&bytes, release)
        .map_err(|e| cased(format!("error decoding actual kubelet config: {e}")))?;
    Ok(gates(&kc) == gates(original))
}

/// Whether the resource's last sync succeeded and nothing changed since (until 4.21 only a
/// last `Success` condition counts).
fn last_sync_succeeded(sync: &Sync, release: &Profile) -> bool {
    let accepted = release.kubelet_conditions == KubeletConditions::AcceptedAndLegacy;
    let last_ok = sync.cfg.conditions.last().is_some_and(|c| {
        (accepted && c.type_ == "Accepted" && c.status == "True") || c.type_ == "Success"
    });
    last_ok && sync.cfg.observed_generation >= sync.cfg.generation
}

/// The controller-version annotation of a MachineConfig.
fn version_of(mc: &Value) -> &str {
    mc.pointer("/metadata/annotations")
        .and_then(|a| a.get(super::GENERATED_BY_ANNOTATION))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// One sync of the KubeletConfig controller, as the input's release runs it.
pub fn sync(input: &GenerateInput) -> GenerateOutcome {
    let release = input.release.profile();
    let release = &release;
    let mut sync = match Sync::new(input) {
        Ok(s) => s,
        Err(e) => {
            return GenerateOutcome {
                error: Some(e.to_string()),
                ..GenerateOutcome::default()
            }
        }
    };
    let object = input.object.to_json();
    let cfg = &object;
    let base = machine_config_values(&input.base_machine_configs);
    let version = input.controller_version.as_str();
    macro_rules! fail {
        ($err:expr, $msg:expr) => {{
            let err: String = $err;
            set_status(&mut sync, Some(&err), $msg, release);
            return sync.finish(Some(err));
        }};
    }
    if sync.cfg.deleting {
        sync.cascade_delete(true);
        return sync.finish(None);
    }
    if let Err(e) = validate_user_kubelet_config_as(cfg, release) {
        fail!(e, None);
    }
    let pools = match pools_for(sync.cfg.selector.as_ref(), &sync.pools, NO_POOL) {
        Ok(p) => p,
        Err(e) => {
            sync.unmet = e.unmet();
            fail!(e.to_string(), None)
        }
    };
    for pool in &pools {
        if release.unconfigured_pool_fails && !pool.configured {
            // Returned as is: no status is written.
            let err = format!(
                "Pool {} is unconfigured, pausing 5s for renderer to initialize",
                pool.name
            );
            return sync.finish(Some(err));
        }
        if let Err(e) = validate_static_pod_path(cfg, pool, release) {
            fail!(e, None);
        }
        let all = sync.all.clone();
        let own = sync.cfg.clone();
        let key = match names::managed_key(Kind::Kubelet, pool, &all, &own, &mut sync.cluster) {
            Ok(k) => k,
            Err(e) => {
                let e = e.to_string();
                let msg = format!("could not get kubelet config key: {e}");
                fail!(e, Some(msg));
            }
        };
        let existing = sync.cluster.machine_configs.get(&key).cloned();
        if let (UpToDateRule::Generation, Some(mc)) = (release.kubelet_up_to_date, &existing) {
            if last_sync_succeeded(&sync, release) && version_of(mc) == version {
                // The sync ends here, the resource's status untouched.
                return sync.finish(None);
            }
        }
        let role = template_role(&pool.name);
        let mut original = match original_kubelet_config(&input.feature_gates, &base, role, release)
        {
            Ok(o) => o,
            Err(e) => {
                if base_config(&base, &format!("01-{role}-kubelet")).is_none() {
                    sync.unmet = Some(Unmet::BaseConfig);
                }
                let msg = format!("could not get original kubelet config: {e}");
                fail!(e, Some(msg));
            }
        };
        if pool.name == "worker" {
            apply_node_config(input.node_config.as_ref(), &mut original);
        }
        if let (UpToDateRule::GenerationAndGates { next_pool }, Some(mc)) =
            (release.kubelet_up_to_date, &existing)
        {
            let gates_match = match feature_gates_match(mc, &original, release) {
                Ok(m) => m,
                Err(e) => {
                    let msg = format!(
                        "could not check if original and machine config feature gates match: {e}"
                    );
                    fail!(e, Some(msg));
                }
            };
            if gates_match && last_sync_succeeded(&sync, release) && version_of(mc) == version {
                if next_pool {
                    continue;
                }
                return sync.finish(None);
            }
        }
        let profile = cfg
            .pointer("/spec/tlsSecurityProfile")
            .filter(|p| !p.is_null());
        if profile.is_some() || release.kubelet_tls == KubeletTls::ResourceElseIntermediate {
            let (min, ciphers) = super::tls_profile::security_profile_ciphers_as(profile, release);
            set_str(&mut original, "tlsMinVersion", &min);
            set_strings(&mut original, "tlsCipherSuites", &ciphers);
        }
        let files = match generate_files(cfg, &mut original, release) {
            Ok(f) => f,
            Err(e) => fail!(e, None),
        };
        sync.record_suffix(&key);
        sync.write_machine_config(
            pool,
            &key,
            ign_config(files, release),
            "KubeletConfig",
            version,
        );
        let mut fins = sync.after.finalizers.clone();
        if fins.iter().any(|f| !f.contains("kubelet")) {
            fins.clear();
        }
        if !fins.contains(&key) {
            fins.push(key.clone());
        }
        sync.after.finalizers = fins;
    }
    sync.clean_up_duplicates("generated-kubelet", "99", version);
    set_status(&mut sync, None, None, release);
    sync.finish(None)
}
