//! The image signature policies in the registries MachineConfig: what upstream's
//! container-runtime-config controller writes from the ClusterImagePolicies and
//! ImagePolicies (`config.openshift.io`, [`crate::api::image_policy`]) when the
//! `SigstoreImageVerification` feature gate is on (`getValidScopePolicies`,
//! `policyItemFromSpec`, the image-policy part of `updatePolicyJSON`,
//! `updateNamespacedPolicyJSONs`, `generateSigstoreRegistriesdConfig`):
//!
//! - `/etc/containers/policy.json`: a `sigstoreSigned` requirement per cluster scope;
//! - `/etc/crio/policies/<namespace>.json`: that policy plus the namespace's own scopes;
//! - `/etc/containers/registries.d/sigstore-registries.yaml`: `use-sigstore-attachments` for
//!   every scope and the mirrors images of that scope are pulled from.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

use super::registries::{
    loaded_registries, longest_matching_registry, pull_source_names, scope_is_nested_inside_scope,
    RegistriesConf,
};
use crate::api::image_policy::{match_policy, policy_type, ImagePolicy, SigstorePolicy};
use crate::gocompat::reference::parse_named;
use crate::gocompat::yaml::to_go_yaml;

/// The feature gate that turns the policies on.
pub const FEATURE_GATE: &str = "SigstoreImageVerification";
/// The registries.d file enabling sigstore attachments.
pub const SIGSTORE_REGISTRIES_PATH: &str = "/etc/containers/registries.d/sigstore-registries.yaml";
/// The folder of CRI-O's per-namespace policies.
pub const CRIO_POLICIES_DIR: &str = "/etc/crio/policies";
/// The condition reason an ImagePolicy with a scope a ClusterImagePolicy covers gets.
pub const REASON_CONFLICT_SCOPES: &str = "ConflictScopes";

/// A scope's requirements, in the order the policies were read.
pub type Requirements = Vec<Value>;

/// The requirements per scope of the cluster, and per scope and namespace of the
/// namespaced policies (upstream's `getValidScopePolicies`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScopePolicies {
    /// Scope to requirements, from the ClusterImagePolicies.
    pub cluster: BTreeMap<String, Requirements>,
    /// Scope to namespace to requirements, from the ImagePolicies (without the scopes a
    /// cluster scope holds).
    pub namespaced: BTreeMap<String, BTreeMap<String, Requirements>>,
    /// The ImagePolicies (namespace, name) with scopes left out because a cluster scope
    /// holds them, and those scopes: upstream marks them `Pending` (`ConflictScopes`).
    pub conflicts: Vec<ScopeConflict>,
}

impl ScopePolicies {
    /// Whether there is no policy at all.
    pub fn is_empty(&self) -> bool {
        self.cluster.is_empty() && self.namespaced.is_empty()
    }
}

/// An ImagePolicy's scopes a ClusterImagePolicy already covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeConflict {
    /// The ImagePolicy's namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The scopes left out, in the policy's order.
    pub scopes: Vec<String>,
}

impl ScopeConflict {
    /// The message of the ImagePolicy's `Pending` condition, in upstream's words.
    pub fn message(&self) -> String {
        let quoted: Vec<String> = self
            .scopes
            .iter()
            .map(|s| crate::gocompat::quote::go_quote(s))
            .collect();
        format!(
            "has conflicting scope(s) [{}] that equal to or nest inside existing clusterimagepolicy, only policy from clusterimagepolicy scope(s) will be applied",
            quoted.join(" ")
        )
    }
}

/// How a release builds requirements (from its [`crate::release::Profile`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ItemRules {
    /// The `v1alpha1` kinds: an empty `matchPolicy` is the default one.
    pub v1alpha1: bool,
    /// `pki` written with all six fields.
    pub pki_every_field: bool,
}

impl ItemRules {
    /// The rules of `release`.
    pub fn of(release: &crate::release::Profile) -> ItemRules {
        ItemRules {
            v1alpha1: release.image_policies_v1alpha1,
            pki_every_field: release.sigstore_pki_every_field,
        }
    }
}

fn identity(policy: &SigstorePolicy, v1alpha1: bool) -> Result<Value, String> {
    let Some(id) = &policy.signed_identity else {
        return Ok(json!({"type": "matchRepoDigestOrExact"}));
    };
    match id.match_policy.as_str() {
        "" if v1alpha1 => Ok(json!({"type": "matchRepoDigestOrExact"})),
        match_policy::REMAP_IDENTITY => {
            let remap = id.remap_identity.clone().unwrap_or_default();
            for p in [&remap.prefix, &remap.signed_prefix] {
                if !valid_remap_prefix(p) {
                    return Err(format!(
                        "error getting signedIdentity for {}: prefix {} is not valid",
                        match_policy::REMAP_IDENTITY,
                        crate::gocompat::quote::go_quote(p)
                    ));
                }
            }
            Ok(
                json!({"type": "remapIdentity", "prefix": remap.prefix, "signedPrefix": remap.signed_prefix}),
            )
        }
        match_policy::EXACT_REPOSITORY => {
            let repo = id.exact_repository.clone().unwrap_or_default().repository;
            if parse_named(&repo).is_none() {
                return Err(format!(
                    "error getting signedIdentity for {}: Invalid format of dockerRepository {}",
                    match_policy::EXACT_REPOSITORY,
                    crate::gocompat::quote::go_quote(&repo)
                ));
            }
            Ok(json!({"type": "exactRepository", "dockerRepository": repo}))
        }
        match_policy::MATCH_REPOSITORY => Ok(json!({"type": "matchRepository"})),
        match_policy::MATCH_REPO_DIGEST_OR_EXACT => Ok(json!({"type": "matchRepoDigestOrExact"})),
        other => Err(format!("unknown signedIdentity match policy: {other}")),
    }
}

/// A host (with a port) or a host and path, as a remapped identity's prefix must be.
fn valid_remap_prefix(p: &str) -> bool {
    !p.is_empty()
        && !p.contains(['@', ' '])
        && parse_named(&format!("{p}{}", if p.contains('/') { "" } else { "/x" })).is_some()
}

/// Upstream's `policyItemFromSpec`: the `sigstoreSigned` requirement of a policy, its keys in
/// the order containers/image writes them, by the release's `rules`.
pub fn policy_item(policy: &SigstorePolicy, rules: ItemRules) -> Result<Value, String> {
    let root = &policy.root_of_trust;
    let mut item = Map::new();
    item.insert("type".into(), json!("sigstoreSigned"));
    let mut rekor: Option<String> = None;
    let mut sources = 0;
    match root.policy_type.as_str() {
        policy_type::PUBLIC_KEY => {
            let key = root.public_key.clone().unwrap_or_default();
            if !key.key_data.is_empty() {
                item.insert("keyData".into(), json!(key.key_data));
                sources += 1;
            }
            if !key.rekor_key_data.is_empty() {
                rekor = Some(key.rekor_key_data);
            }
        }
        policy_type::FULCIO_CA_WITH_REKOR => {
            let f = root.fulcio_ca_with_rekor.clone().unwrap_or_default();
            if f.fulcio_ca_data.is_empty() {
                return Err("At least one of caPath and caData must be specified".into());
            }
            if f.fulcio_subject.oidc_issuer.is_empty() {
                return Err("oidcIssuer not specified".into());
            }
            if f.fulcio_subject.signed_email.is_empty() {
                return Err("subjectEmail not specified".into());
            }
            item.insert(
                "fulcio".into(),
                json!({
                    "caData": f.fulcio_ca_data,
                    "oidcIssuer": f.fulcio_subject.oidc_issuer,
                    "subjectEmail": f.fulcio_subject.signed_email,
                }),
            );
            sources += 1;
            if !f.rekor_key_data.is_empty() {
                rekor = Some(f.rekor_key_data);
            }
        }
        policy_type::PKI => {
            let p = root.pki.clone().unwrap_or_default();
            if p.ca_roots_data.is_empty() {
                return Err("At least one of caRootsPath and caRootsData must be specified".into());
            }
            let subject = &p.pki_certificate_subject;
            if subject.email.is_empty() && subject.hostname.is_empty() {
                return Err(
                    "At least one of subjectEmail, subjectHostname must be specified".into(),
                );
            }
            let mut pki = Map::new();
            let every = rules.pki_every_field;
            let data = |d: &str| if d.is_empty() { Value::Null } else { json!(d) };
            if every {
                pki.insert("caRootsPath".into(), json!(""));
            }
            pki.insert("caRootsData".into(), json!(p.ca_roots_data));
            if every {
                pki.insert("caIntermediatesPath".into(), json!(""));
            }
            if every || !p.ca_intermediates_data.is_empty() {
                pki.insert("caIntermediatesData".into(), data(&p.ca_intermediates_data));
            }
            if every || !subject.email.is_empty() {
                pki.insert("subjectEmail".into(), json!(subject.email));
            }
            if every || !subject.hostname.is_empty() {
                pki.insert("subjectHostname".into(), json!(subject.hostname));
            }
            item.insert("pki".into(), Value::Object(pki));
            sources += 1;
        }
        _ => {}
    }
    let signed_identity = identity(policy, rules.v1alpha1)?;
    if sources != 1 {
        return Err(
            "exactly one of keyPath, keyPaths, keyData, keyDatas, fulcio, and pki must be specified"
                .into(),
        );
    }
    if root.policy_type == policy_type::FULCIO_CA_WITH_REKOR && rekor.is_none() {
        return Err("At least one of rekorPublickeyPath, rekorPublicKeyPaths, rekorPublickeyData and rekorPublicKeyDatas must be specified if fulcio is used".into());
    }
    // containers/image's field order: keys, fulcio, the Rekor key, pki, signedIdentity.
    let mut out = Map::new();
    for k in ["type", "keyData", "fulcio"] {
        if let Some(v) = item.remove(k) {
            out.insert(k.into(), v);
        }
    }
    if let Some(r) = rekor {
        out.insert("rekorPublicKeyData".into(), json!(r));
    }
    if let Some(v) = item.remove("pki") {
        out.insert("pki".into(), v);
    }
    out.insert("signedIdentity".into(), signed_identity);
    Ok(Value::Object(out))
}

/// Upstream's `getValidScopePolicies`: every ClusterImagePolicy's requirement under each of
/// its scopes, then every ImagePolicy's under each of its scopes and its namespace, except
/// scopes equal to or inside a cluster scope (reported as conflicts). `Err`: the first
/// policy whose requirement cannot be built.
pub fn valid_scope_policies(
    cluster_policies: &[ImagePolicy],
    image_policies: &[ImagePolicy],
    rules: ItemRules,
) -> Result<ScopePolicies, String> {
    let mut out = ScopePolicies::default();
    for p in cluster_policies {
        let item = policy_item(&p.spec.policy, rules)?;
        for scope in &p.spec.scopes {
            out.cluster
                .entry(scope.clone())
                .or_default()
                .push(item.clone());
        }
    }
    for p in image_policies {
        let item = policy_item(&p.spec.policy, rules)?;
        let mut conflicts = Vec::new();
        for scope in &p.spec.scopes {
            if out
                .cluster
                .keys()
                .any(|c| scope_is_nested_inside_scope(scope, c))
            {
                conflicts.push(scope.clone());
                continue;
            }
            out.namespaced
                .entry(scope.clone())
                .or_default()
                .entry(p.namespace.clone())
                .or_default()
                .push(item.clone());
        }
        if !conflicts.is_empty() {
            out.conflicts.push(ScopeConflict {
                namespace: p.namespace.clone(),
                name: p.name.clone(),
                scopes: conflicts,
            });
        }
    }
    Ok(out)
}

/// Upstream's `validateImagePolicyWithAllowedBlockedRegistries` for one kind of scopes:
/// with allowed registries, each scope must be inside one; no scope may be inside a
/// blocked one. `what` is `clusterimagePolicy` or `imagePolicy`.
pub fn check_against_registries<'a>(
    scopes: impl Iterator<Item = &'a String> + Clone,
    what: &str,
    allowed: &[String],
    blocked: &[String],
) -> Result<(), String> {
    if allowed.is_empty() && blocked.is_empty() {
        return Ok(());
    }
    for scope in scopes.clone() {
        if !allowed.is_empty()
            && !allowed
                .iter()
                .any(|a| scope_is_nested_inside_scope(scope, a))
        {
            return Err(format!(
                "{what} configured for the scope {scope} is not nested inside allowedRegistries"
            ));
        }
    }
    for scope in scopes {
        if blocked
            .iter()
            .any(|b| scope_is_nested_inside_scope(scope, b))
        {
            return Err(format!(
                "{what} configured for the scope {scope} is nested inside blockedRegistries"
            ));
        }
    }
    Ok(())
}

/// Adds `scope`'s requirements to a transports map's `docker` and (for scopes with fewer than
/// three `/`) `atomic` entries, after what they hold.
fn add_to_transports(transports: &mut Map<String, Value>, scopes: &BTreeMap<String, Requirements>) {
    for (transport, filter) in [("docker", false), ("atomic", true)] {
        let entry = transports
            .entry(transport.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        let Some(map) = entry.as_object_mut() else {
            continue;
        };
        for (scope, reqs) in scopes {
            if filter && scope.matches('/').count() >= 3 {
                continue;
            }
            let list = map
                .entry(scope.clone())
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(a) = list {
                a.extend(reqs.iter().cloned());
            } else {
                *list = Value::Array(reqs.clone());
            }
        }
    }
}

/// A policy object's transports and each transport's scopes with sorted keys, as Go writes
/// maps.
pub fn sorted_transports(transports: &Map<String, Value>) -> Map<String, Value> {
    let mut keys: Vec<&String> = transports.keys().collect();
    keys.sort();
    keys.into_iter()
        .map(|k| {
            let v = match &transports[k] {
                Value::Object(o) => {
                    let mut ks: Vec<&String> = o.keys().collect();
                    ks.sort();
                    Value::Object(ks.into_iter().map(|s| (s.clone(), o[s].clone())).collect())
                }
                other => other.clone(),
            };
            (k.clone(), v)
        })
        .collect()
}

/// Upstream's `updateNamespacedPolicyJSONs`: per namespace, the cluster's policy.json with the
/// namespace's scopes added. `Err` when a namespaced scope is outside the allowed registries
/// or inside a blocked one.
pub fn namespaced_policy_jsons(
    cluster_policy: &[u8],
    blocked: &[String],
    allowed: &[String],
    policies: &ScopePolicies,
) -> Result<BTreeMap<String, Vec<u8>>, String> {
    if cluster_policy.is_empty() {
        return Err("cluster override policy is empty".into());
    }
    check_against_registries(policies.namespaced.keys(), "imagePolicy", allowed, blocked)?;
    let mut per_namespace: BTreeMap<&str, BTreeMap<String, Requirements>> = BTreeMap::new();
    for (scope, namespaces) in &policies.namespaced {
        for (ns, reqs) in namespaces {
            per_namespace
                .entry(ns)
                .or_default()
                .entry(scope.clone())
                .or_default()
                .extend(reqs.iter().cloned());
        }
    }
    let mut out = BTreeMap::new();
    for (ns, scopes) in per_namespace {
        let policy: Value = serde_json::from_slice(cluster_policy)
            .map_err(|e| format!("error decoding policy json for namespaced policies: {e}"))?;
        let default = policy.get("default").cloned().unwrap_or(Value::Null);
        let mut transports = policy
            .get("transports")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        add_to_transports(&mut transports, &scopes);
        let mut obj = Map::new();
        obj.insert("default".into(), default);
        obj.insert(
            "transports".into(),
            Value::Object(sorted_transports(&transports)),
        );
        let text = crate::gocompat::json::to_go_indented(&Value::Object(obj), "  ");
        out.insert(ns.to_string(), text.into_bytes());
    }
    Ok(out)
}

/// The cluster scopes' requirements added to a policy's transports (the image-policy part of
/// upstream's `updatePolicyJSON`).
pub fn add_cluster_scopes(transports: &mut Map<String, Value>, policies: &ScopePolicies) {
    add_to_transports(transports, &policies.cluster);
}

/// The mirror endpoints images of `scope` are pulled from, by digest and by tag, as
/// upstream's `addScopeMirrorsSigstoreRegistriesdConfig` finds them.
fn scope_mirrors(
    scope: &str,
    reg: &crate::api::registries_conf::Registry,
    out: &mut BTreeSet<String>,
) -> Result<(), String> {
    let mut s = scope.to_string();
    if s.starts_with("*.") {
        s = s.replacen('*', "matched", 1);
    }
    let added_dummy = !s.contains('/');
    if added_dummy {
        s.push_str("/a");
    }
    let named = parse_named(&s).ok_or_else(|| format!("error parsing scope {s}"))?;
    let digest = format!("{}@sha256:{}", named.name, "a".repeat(64));
    let tag = format!("{}:aaa", named.name);
    for r in [digest, tag] {
        let r = parse_named(&r).ok_or_else(|| format!("error parsing scope {s}"))?;
        for name in pull_source_names(reg, &r)? {
            let name = if added_dummy {
                name.strip_suffix("/a").unwrap_or(&name).to_string()
            } else {
                name
            };
            out.insert(name);
        }
    }
    Ok(())
}

/// Upstream's `generateSigstoreRegistriesdConfig`: `use-sigstore-attachments: true` for every
/// policy scope and, when the registries file was written, for the mirrors of each scope and
/// of the registries nested inside it. `None` without policies.
pub fn sigstore_registries_d(
    policies: &ScopePolicies,
    registries_toml: Option<&[u8]>,
) -> Result<Option<Vec<u8>>, String> {
    if policies.is_empty() {
        return Ok(None);
    }
    let scopes: BTreeSet<&String> = policies
        .cluster
        .keys()
        .chain(policies.namespaced.keys())
        .collect();
    let mut names: BTreeSet<String> = BTreeSet::new();
    let conf = match registries_toml {
        Some(t) => Some(
            RegistriesConf::decode(&String::from_utf8_lossy(t))
                .map_err(|e| format!("error decoding registries config: {e}"))?,
        ),
        None => None,
    };
    let loaded = conf.as_ref().map(loaded_registries);
    for scope in scopes {
        names.insert(scope.clone());
        let (Some(conf), Some(loaded)) = (&conf, &loaded) else {
            continue;
        };
        let wrap = |e: String| {
            format!("error adding clusterimagepolicy scope {scope} relevant mirrors: {e}")
        };
        if let Some(reg) = longest_matching_registry(loaded, scope) {
            scope_mirrors(scope, reg, &mut names).map_err(wrap)?;
        }
        for reg in &conf.registries {
            let nested = if reg.prefix.is_empty() {
                &reg.endpoint.location
            } else {
                &reg.prefix
            };
            if nested != scope && scope_is_nested_inside_scope(nested, scope) {
                if let Some(r) = longest_matching_registry(loaded, nested) {
                    scope_mirrors(nested, r, &mut names).map_err(wrap)?;
                }
            }
        }
    }
    let docker: Map<String, Value> = names
        .into_iter()
        .map(|n| (n, json!({"use-sigstore-attachments": true})))
        .collect();
    Ok(Some(to_go_yaml(&json!({ "docker": docker })).into_bytes()))
}

/// Where a namespace's CRI-O policy goes.
pub fn namespace_policy_path(namespace: &str) -> String {
    format!("{CRIO_POLICIES_DIR}/{namespace}.json")
}
