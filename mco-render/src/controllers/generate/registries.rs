//! The registries MachineConfig `99-<pool>-generated-registries` (upstream's
//! `syncImageConfig`): `registries.conf` with the mirror sets, blocked and insecure scopes,
//! `policy.json` with the allowed and blocked registries and the image signature policies
//! ([`super::sigstore`]), and the search-registries drop-in, from the Image `cluster`, the
//! ImageContentSourcePolicies, ImageDigestMirrorSets and ImageTagMirrorSets, the
//! ClusterImagePolicies and ImagePolicies, and the ClusterVersion's release image.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::{json, Map, Value};

use super::cluster_config::{
    name_of, sorted_pools, version_of, with_config, ClusterConfigInput, ConfigError, ConfigOutcome,
    ObjectRef, Store,
};
use super::sigstore::{self, ScopePolicies};
use super::{base_config, find_file, ign_config, ign_file, template_role};
use crate::api::image_policy::ImagePolicy;
use crate::gocompat::json::{sorted, to_go_compact, to_go_indented};
use crate::gocompat::quote::go_quote;
use crate::gocompat::reference::{parse_named, valid_domain, valid_path_component, Named};
use crate::gocompat::toml::{Table, Value as Tv};
use crate::release::{MirrorCheck, Profile};

/// Where the registries configuration goes.
pub const REGISTRIES_CONF_PATH: &str = "/etc/containers/registries.conf";
/// Where the signature policy goes.
pub const POLICY_JSON_PATH: &str = "/etc/containers/policy.json";
/// The drop-in with the search registries.
pub const SEARCH_REGISTRIES_PATH: &str =
    "/etc/containers/registries.conf.d/01-image-searchRegistries.conf";
/// The label of the pools the registries controller handles.
pub const BUILT_IN_LABEL: &str = "machineconfiguration.openshift.io/mco-built-in";
/// The error for a release image that does not parse.
pub const ERR_PARSING_REFERENCE: &str = "error parsing reference of release image";

const DIGEST_ONLY: &str = "digest-only";
const TAG_ONLY: &str = "tag-only";
const NEVER_CONTACT_SOURCE: &str = "NeverContactSource";
const ALLOW_CONTACTING_SOURCE: &str = "AllowContactingSource";

pub use crate::api::registries_conf::{Endpoint, RegistriesConf, Registry};

fn toml_strings(v: Option<&toml::Value>) -> Option<Vec<String>> {
    v.and_then(|v| v.as_array()).map(|a| {
        a.iter()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect()
    })
}

fn toml_endpoint(t: &toml::Table) -> Endpoint {
    let s = |k: &str| t.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
    Endpoint {
        location: s("location"),
        insecure: t.get("insecure").and_then(|v| v.as_bool()).unwrap_or(false),
        pull_from_mirror: s("pull-from-mirror"),
    }
}

impl RegistriesConf {
    /// Decodes registries.conf as Go's TOML decoder fills the struct.
    pub fn decode(text: &str) -> Result<RegistriesConf, String> {
        let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
        let registries = doc
            .get("registry")
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|r| r.as_table())
                    .map(|t| Registry {
                        prefix: t
                            .get("prefix")
                            .and_then(|v| v.as_str())
                            .unwrap_or("")
                            .to_string(),
                        endpoint: toml_endpoint(t),
                        mirrors: t
                            .get("mirror")
                            .and_then(|v| v.as_array())
                            .map(|m| {
                                m.iter()
                                    .filter_map(|e| e.as_table())
                                    .map(toml_endpoint)
                                    .collect()
                            })
                            .unwrap_or_default(),
                        blocked: t.get("blocked").and_then(|v| v.as_bool()).unwrap_or(false),
                        mirror_by_digest_only: t
                            .get("mirror-by-digest-only")
                            .and_then(|v| v.as_bool())
                            .unwrap_or(false),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let s = |k: &str| {
            doc.get(k)
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_string()
        };
        Ok(RegistriesConf {
            registries,
            unqualified_search_registries: toml_strings(doc.get("unqualified-search-registries")),
            credential_helpers: toml_strings(doc.get("credential-helpers")),
            short_name_mode: s("short-name-mode"),
            additional_layer_store_auth_helper: s("additional-layer-store-auth-helper"),
            aliases: doc.get("aliases").and_then(|v| v.as_table()).map(|t| {
                t.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                    .collect()
            }),
        })
    }

    /// The file as Go's BurntSushi TOML encoder writes the struct of the newest release.
    pub fn encode(&self) -> String {
        self.encode_as(&Profile::default())
    }

    /// The file as `release` writes it: its containers/image struct has
    /// `additional-layer-store-auth-helper` from 4.19 ([`Profile::registries_auth_helper`]).
    pub fn encode_as(&self, release: &Profile) -> String {
        let strs = |l: &[String]| Tv::Array(l.iter().map(|s| Tv::Str(s.clone())).collect());
        let mut doc = Table::new();
        if !self.registries.is_empty() {
            doc.tables(
                "registry",
                self.registries.iter().map(encode_registry).collect(),
            );
        }
        if let Some(l) = &self.unqualified_search_registries {
            doc.value("unqualified-search-registries", strs(l));
        }
        if let Some(l) = &self.credential_helpers {
            doc.value("credential-helpers", strs(l));
        }
        doc.str("short-name-mode", &self.short_name_mode);
        if release.registries_auth_helper {
            doc.str(
                "additional-layer-store-auth-helper",
                &self.additional_layer_store_auth_helper,
            );
        }
        if let Some(a) = &self.aliases {
            let mut t = Table::new();
            for (k, v) in a {
                t.str(k, v);
            }
            doc.table("aliases", t);
        }
        doc.encode()
    }
}

fn encode_endpoint(t: &mut Table, e: &Endpoint) {
    if !e.location.is_empty() {
        t.str("location", &e.location);
    }
    if e.insecure {
        t.value("insecure", Tv::Bool(true));
    }
    if !e.pull_from_mirror.is_empty() {
        t.str("pull-from-mirror", &e.pull_from_mirror);
    }
}

fn encode_registry(r: &Registry) -> Table {
    let mut t = Table::new();
    t.str("prefix", &r.prefix);
    encode_endpoint(&mut t, &r.endpoint);
    if !r.mirrors.is_empty() {
        t.tables(
            "mirror",
            r.mirrors
                .iter()
                .map(|m| {
                    let mut mt = Table::new();
                    encode_endpoint(&mut mt, m);
                    mt
                })
                .collect(),
        );
    }
    if r.blocked {
        t.value("blocked", Tv::Bool(true));
    }
    if r.mirror_by_digest_only {
        t.value("mirror-by-digest-only", Tv::Bool(true));
    }
    t
}

/// One source's mirrors in a mirror-set object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MirrorRule {
    /// `source`.
    pub source: String,
    /// `mirrors`.
    pub mirrors: Vec<String>,
    /// `mirrorSourcePolicy` (empty: AllowContactingSource).
    pub policy: String,
}

/// An ImageContentSourcePolicy, ImageDigestMirrorSet or ImageTagMirrorSet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MirrorObject {
    /// Its kind.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its rules.
    pub rules: Vec<MirrorRule>,
}

impl MirrorObject {
    /// Reads an object's `spec.<list>`; ICSP rules carry no policy.
    pub fn from_json(v: &Value, kind: &str, list: &str) -> MirrorObject {
        let rules = v
            .pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|r| MirrorRule {
                        source: r
                            .get("source")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        mirrors: crate::api::value_at::strings_at(r, "/mirrors"),
                        policy: r
                            .get("mirrorSourcePolicy")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        MirrorObject {
            kind: kind.to_string(),
            name: name_of(v).to_string(),
            rules,
        }
    }
}

/// Upstream's `ScopeIsNestedInsideScope`: whether `sub` is `sup`, a namespace or repository
/// inside it, or (for a `*.` wildcard `sup`) a host under it.
pub fn scope_is_nested_inside_scope(sub: &str, sup: &str) -> bool {
    if sub == sup {
        return true;
    }
    if sub.len() > sup.len() && sub.starts_with(sup) && sub.as_bytes()[sup.len()] == b'/' {
        return true;
    }
    if let Some(suffix) = sup.strip_prefix('*') {
        if sup.starts_with("*.") {
            if sub.contains(':') {
                let host = sub.split(':').next().unwrap_or("");
                return host.ends_with(suffix) && !host.contains('/');
            }
            let host = sub.split('/').next().unwrap_or("");
            return host.ends_with(suffix);
        }
    }
    false
}

/// Upstream's `IsValidRegistriesConfScope`: non-empty, and a wildcard only as a `*.` prefix of
/// a host without `/`, `@`, `:` or `*`.
pub fn is_valid_registries_conf_scope(scope: &str) -> bool {
    if scope.is_empty() {
        return false;
    }
    if !scope.contains('*') {
        return true;
    }
    scope
        .strip_prefix("*.")
        .is_some_and(|rest| !rest.contains(['/', '@', ':', '*']))
}

/// A mirror as the API's pattern allows it: a host with optional port, then path components.
pub fn valid_mirror(s: &str) -> bool {
    let (domain, path) = match s.split_once('/') {
        Some((d, p)) => (d, Some(p)),
        None => (s, None),
    };
    valid_domain(domain) && path.is_none_or(|p| p.split('/').all(valid_path_component))
}

/// A source: a mirror pattern, or a `*.` wildcard host.
pub fn valid_source(s: &str) -> bool {
    if let Some(rest) = s.strip_prefix('*') {
        return rest.starts_with('.')
            && rest[1..].split('.').all(|c| {
                let b = c.as_bytes();
                !b.is_empty()
                    && b[0].is_ascii_alphanumeric()
                    && b[b.len() - 1].is_ascii_alphanumeric()
                    && b.iter().all(|x| x.is_ascii_alphanumeric() || *x == b'-')
            });
    }
    valid_mirror(s)
}

/// A scope or mirror-set error, with the objects it is about.
type ScopeResult = Result<(), (String, Vec<ObjectRef>)>;

fn objects_with(objs: &[&MirrorObject], pred: impl Fn(&MirrorRule) -> bool) -> Vec<ObjectRef> {
    let mut out: Vec<ObjectRef> = objs
        .iter()
        .filter(|o| o.rules.iter().any(&pred))
        .map(|o| ObjectRef::new(&o.kind, &o.name))
        .collect();
    out.dedup();
    out
}

/// Whether a mirror-set source passes `release`'s check, and its error otherwise.
fn check_source(source: &str, release: &Profile) -> Result<(), String> {
    match release.mirror_check {
        MirrorCheck::Patterns if !valid_source(source) => {
            Err(format!("invalid format for source {}", go_quote(source)))
        }
        MirrorCheck::NoWildcards if source.is_empty() => {
            Err("invalid empty entry for source configuration".into())
        }
        MirrorCheck::NoWildcards if source.contains('*') => Err(format!(
            "wildcard entries are not supported with mirror configuration {}",
            go_quote(source)
        )),
        _ => Ok(()),
    }
}

/// Whether a mirror passes `release`'s check, and its error otherwise.
fn check_mirror(mirror: &str, release: &Profile) -> Result<(), String> {
    match release.mirror_check {
        MirrorCheck::Patterns if !valid_mirror(mirror) => {
            Err(format!("invalid format for mirror {}", go_quote(mirror)))
        }
        MirrorCheck::NoWildcards if mirror.is_empty() => {
            Err("invalid empty entry for mirror configuration".into())
        }
        MirrorCheck::NoWildcards if mirror.contains('*') => Err(format!(
            "wildcard entries are not supported with mirror configuration {}",
            go_quote(mirror)
        )),
        _ => Ok(()),
    }
}

/// Upstream's `validateRegistriesConfScopes` as `release` checks. `digest` are the
/// ImageDigestMirrorSets followed by the ImageContentSourcePolicies; `tag` the
/// ImageTagMirrorSets.
pub fn validate_registries_conf_scopes(
    insecure: &[String],
    blocked: &[String],
    allowed: &[String],
    digest: &[&MirrorObject],
    tag: &[&MirrorObject],
    release: &Profile,
) -> ScopeResult {
    let image = || vec![ObjectRef::new("Image", "cluster")];
    for (list, what) in [
        (insecure, "insecure"),
        (blocked, "blocked"),
        (allowed, "allowed"),
    ] {
        for scope in list {
            if !is_valid_registries_conf_scope(scope) {
                return Err((
                    format!("invalid entry for {what} registries {}", go_quote(scope)),
                    image(),
                ));
            }
        }
    }
    let all: Vec<&MirrorObject> = digest.iter().chain(tag).copied().collect();
    let mut policies: BTreeMap<&str, &str> = BTreeMap::new();
    for obj in &all {
        for rule in &obj.rules {
            let source = rule.source.as_str();
            if let Err(e) = check_source(source, release) {
                return Err((e, objects_with(&all, |r| r.source == source)));
            }
            let policy = if rule.policy.is_empty() {
                ALLOW_CONTACTING_SOURCE
            } else {
                rule.policy.as_str()
            };
            match policies.get(source) {
                Some(p) if *p != policy => {
                    let lists = if release.mirror_conflict_lists_icsp {
                        "imagedigestmirrorsets, imagetagmirrorsets, or imagecontentsourcepolicies"
                    } else {
                        "imagedigestmirrorsets and/or imagetagmirrorsets"
                    };
                    return Err((
                        format!(
                            "conflicting mirrorSourcePolicy is set for the same source {} in {lists}",
                            go_quote(source)
                        ),
                        objects_with(&all, |r| r.source == source),
                    ));
                }
                Some(_) => {}
                None => {
                    policies.insert(source, policy);
                }
            }
            for mirror in &rule.mirrors {
                if let Err(e) = check_mirror(mirror, release) {
                    let m = mirror.as_str();
                    return Err((e, objects_with(&all, |r| r.mirrors.iter().any(|x| x == m))));
                }
                if policy == NEVER_CONTACT_SOURCE && mirror == source {
                    return Err((
                        format!(
                            "cannot set mirrorSourcePolicy: NeverContactSource if the source {} is one of the mirrors",
                            go_quote(source)
                        ),
                        objects_with(&all, |r| r.source == source),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Upstream's topological sort of mirrors (`topoGraph.Sorted`): predecessors first, ties and
/// cycles broken by byte order.
fn topo_sorted(edges: &[(String, String)]) -> Result<Vec<String>, String> {
    let mut ins: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut outs: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (a, b) in edges {
        ins.entry(a).or_default();
        outs.entry(b).or_default();
        outs.entry(a).or_default().insert(b);
        ins.entry(b).or_default().insert(a);
    }
    let all: Vec<&str> = ins.keys().copied().collect();
    let mut used: BTreeSet<&str> = BTreeSet::new();
    let mut queue: VecDeque<&str> = all
        .iter()
        .copied()
        .filter(|n| ins.get(n).is_some_and(BTreeSet::is_empty))
        .collect();
    let mut res = Vec::new();
    let mut idx = 0;
    while !queue.is_empty() || idx < all.len() {
        let node = if let Some(n) = queue.pop_front() {
            if used.contains(n) {
                return Err(format!(
                    "internal error in topoGraph.Sorted: node {} already used",
                    go_quote(n)
                ));
            }
            n
        } else {
            let n = all[idx];
            idx += 1;
            if used.contains(n) {
                continue;
            }
            n
        };
        used.insert(node);
        res.push(node.to_string());
        let mut batch: Vec<&str> = Vec::new();
        for out in outs.get(node).cloned().unwrap_or_default() {
            if let Some(i) = ins.get_mut(out) {
                i.remove(node);
                if i.is_empty() && !used.contains(out) {
                    batch.push(out);
                }
            }
        }
        batch.sort_unstable();
        queue.extend(batch);
    }
    Ok(res)
}

/// One source's merged mirrors.
#[derive(Debug, Clone)]
struct Merged {
    source: String,
    mirrors: Vec<String>,
    never_contact: bool,
}

/// Upstream's `mergedMirrorSets` over the rules of `objs`: per source (sorted), the mirrors of
/// every set in one order. Sets whose mirrors are only the source are ignored.
fn merged_mirror_sets(objs: &[&MirrorObject]) -> Result<Vec<Merged>, String> {
    let mut sets: BTreeMap<&str, Vec<&[String]>> = BTreeMap::new();
    let mut block: BTreeSet<&str> = BTreeSet::new();
    for obj in objs {
        for rule in &obj.rules {
            if !rule.mirrors.iter().any(|m| *m != rule.source) {
                continue;
            }
            if rule.policy == NEVER_CONTACT_SOURCE {
                block.insert(&rule.source);
            }
            sets.entry(&rule.source).or_default().push(&rule.mirrors);
        }
    }
    let mut out = Vec::new();
    for (source, lists) in sets {
        let mut edges = Vec::new();
        for mirrors in lists {
            for w in mirrors.windows(2) {
                edges.push((w[0].clone(), w[1].clone()));
            }
            if !mirrors.iter().any(|m| m == source) {
                if let Some(last) = mirrors.last() {
                    edges.push((last.clone(), source.to_string()));
                }
            }
        }
        let mut sorted_repos = topo_sorted(&edges)?;
        if sorted_repos.last().is_some_and(|l| l == source) {
            sorted_repos.pop();
        }
        out.push(Merged {
            source: source.to_string(),
            mirrors: sorted_repos,
            never_contact: block.contains(source),
        });
    }
    Ok(out)
}

fn registry_index(conf: &mut RegistriesConf, scope: &str) -> usize {
    if let Some(i) = conf.registries.iter().position(|r| r.scope() == scope) {
        return i;
    }
    let mut reg = Registry::default();
    if scope.starts_with("*.") {
        reg.prefix = scope.to_string();
    } else {
        reg.endpoint.location = scope.to_string();
    }
    conf.registries.push(reg);
    conf.registries.len() - 1
}

/// Upstream's `mirrorsAdjustedForNestedScope`.
fn mirrors_adjusted_for_nested_scope(
    mirrored: &str,
    sub: &str,
    mirrors: &[Endpoint],
) -> Result<Vec<Endpoint>, String> {
    if !scope_is_nested_inside_scope(sub, mirrored) {
        return Err(format!(
            "internal error: mirrorsAdjustedForNestedScope for {} and non-subscope {}",
            go_quote(mirrored),
            go_quote(sub)
        ));
    }
    if mirrored.starts_with("*.") {
        return Err(format!(
            "internal error: mirrorsAdjustedForNestedScope for a wildcard scope {}",
            go_quote(mirrored)
        ));
    }
    let Some(adjustment) = sub.strip_prefix(mirrored) else {
        return Err(format!(
            "internal error: mirrorsAdjustedForNestedScope with unexpected scopes {} and {}",
            go_quote(mirrored),
            go_quote(sub)
        ));
    };
    Ok(mirrors
        .iter()
        .map(|m| Endpoint {
            location: format!("{}{adjustment}", m.location),
            ..m.clone()
        })
        .collect())
}

/// Upstream's runtime-utils `EditRegistriesConfig`: mirrors of the digest sets
/// (`digest-only`), then of the tag sets (`tag-only`), blocked and insecure scopes (also on the
/// entries nested inside them), and mirrors copied to nested entries without their own.
pub fn edit_registries_config(
    conf: &mut RegistriesConf,
    insecure: &[String],
    blocked: &[String],
    digest: &[&MirrorObject],
    tag: &[&MirrorObject],
) -> Result<(), String> {
    let digest_sets = merged_mirror_sets(digest)?;
    let tag_sets = merged_mirror_sets(tag)?;
    for (sets, pull) in [(&digest_sets, DIGEST_ONLY), (&tag_sets, TAG_ONLY)] {
        for m in sets {
            let i = registry_index(conf, &m.source);
            let reg = &mut conf.registries[i];
            if m.never_contact {
                reg.blocked = true;
            }
            for mirror in &m.mirrors {
                reg.mirrors.push(Endpoint {
                    location: mirror.clone(),
                    insecure: false,
                    pull_from_mirror: pull.to_string(),
                });
            }
        }
    }
    for scope in blocked {
        registry_index(conf, scope);
    }
    for scope in insecure {
        let i = registry_index(conf, scope);
        conf.registries[i].endpoint.insecure = true;
        for reg in &mut conf.registries {
            if scope_is_nested_inside_scope(reg.scope(), scope) {
                reg.endpoint.insecure = true;
            }
            for m in &mut reg.mirrors {
                if scope_is_nested_inside_scope(&m.location, scope) {
                    m.insecure = true;
                }
            }
        }
    }
    for scope in blocked {
        let i = registry_index(conf, scope);
        conf.registries[i].blocked = true;
        for reg in &mut conf.registries {
            if scope_is_nested_inside_scope(reg.scope(), scope) {
                reg.blocked = true;
            }
        }
    }
    for m in digest_sets.iter().chain(&tag_sets) {
        let i = registry_index(conf, &m.source);
        let mirrored_scope = conf.registries[i].scope().to_string();
        let mirrored_mirrors = conf.registries[i].mirrors.clone();
        for j in 0..conf.registries.len() {
            let scope = conf.registries[j].scope().to_string();
            if scope != mirrored_scope
                && scope_is_nested_inside_scope(&scope, &mirrored_scope)
                && conf.registries[j].mirrors.is_empty()
            {
                conf.registries[j].mirrors =
                    mirrors_adjusted_for_nested_scope(&mirrored_scope, &scope, &mirrored_mirrors)?;
            }
        }
    }
    Ok(())
}

/// Upstream's `updateRegistriesConfig`: the template file decoded, checked, edited and
/// re-encoded, as `release` does.
pub fn update_registries_config(
    data: &[u8],
    insecure: &[String],
    blocked: &[String],
    digest: &[&MirrorObject],
    tag: &[&MirrorObject],
    release: &Profile,
) -> Result<Vec<u8>, (String, Vec<ObjectRef>)> {
    let text = String::from_utf8_lossy(data);
    let mut conf = RegistriesConf::decode(&text).map_err(|e| {
        (
            format!("error unmarshalling registries config: {e}"),
            vec![],
        )
    })?;
    validate_registries_conf_scopes(insecure, blocked, &[], digest, tag, release)?;
    edit_registries_config(&mut conf, insecure, blocked, digest, tag).map_err(|e| {
        let mut objs = vec![ObjectRef::new("Image", "cluster")];
        let all: Vec<&MirrorObject> = digest.iter().chain(tag).copied().collect();
        for o in &all {
            if o.rules.iter().any(|r| e.contains(&go_quote(&r.source))) {
                objs.push(ObjectRef::new(&o.kind, &o.name));
            }
        }
        (e, objs)
    })?;
    Ok(conf.encode_as(release).into_bytes())
}

/// Upstream's `updatePolicyJSON` (without image policies): the default becomes `reject` with
/// the allowed registries accepted, or `insecureAcceptAnything` with the blocked ones
/// rejected; `docker` gets the scopes and `atomic` those with fewer than three `/` (until
/// 4.15 both even with no scope). Written indented from 4.17, compact before.
pub fn update_policy_json(
    data: &[u8],
    blocked: &[String],
    allowed: &[String],
    release_image: &str,
    release: &Profile,
) -> Result<Vec<u8>, (String, Vec<ObjectRef>)> {
    update_policy_json_with(
        data,
        blocked,
        allowed,
        release_image,
        &ScopePolicies::default(),
        release,
    )
}

/// Upstream's `updatePolicyJSON` with the ClusterImagePolicies' scopes: each scope's
/// `sigstoreSigned` requirements after what the allowed and blocked registries give it (an
/// allowed registry that is also a policy scope is not `insecureAcceptAnything`). A policy
/// scope outside the allowed registries or inside a blocked one is an error. With neither
/// list nor policy scope, `data` is returned as it is.
pub fn update_policy_json_with(
    data: &[u8],
    blocked: &[String],
    allowed: &[String],
    release_image: &str,
    policies: &ScopePolicies,
    release: &Profile,
) -> Result<Vec<u8>, (String, Vec<ObjectRef>)> {
    let image = || vec![ObjectRef::new("Image", "cluster")];
    if !allowed.is_empty() && !blocked.is_empty() {
        let payload = parse_named(release_image).ok_or_else(|| {
            (
                ERR_PARSING_REFERENCE.to_string(),
                vec![ObjectRef::new("ClusterVersion", "version")],
            )
        })?;
        if !(allowed.len() == 1 && allowed[0] == payload.name) {
            return Err((
                "invalid images config: only one of AllowedRegistries or BlockedRegistries may be specified".into(),
                image(),
            ));
        }
    }
    sigstore::check_against_registries(
        policies.cluster.keys(),
        "clusterimagePolicy",
        allowed,
        blocked,
    )
    .map_err(|e| (e, image()))?;
    // Upstream returns the original when both lists are nil and no cluster scope is set. The
    // sync calls this with no list only for namespaced policies; without any policy, empty
    // lists here stand for Go's empty, non-nil lists, which go on.
    if allowed.is_empty()
        && blocked.is_empty()
        && policies.cluster.is_empty()
        && !policies.namespaced.is_empty()
    {
        return Ok(data.to_vec());
    }
    validate_registries_conf_scopes(&[], blocked, allowed, &[], &[], release)?;
    let policy: Value = serde_json::from_slice(data)
        .map_err(|e| (format!("error decoding policy json: {e}"), vec![]))?;
    let mut default = policy.get("default").cloned().unwrap_or(Value::Null);
    let mut transports: Map<String, Value> = policy
        .get("transports")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut scopes: BTreeMap<String, Value> = BTreeMap::new();
    if !allowed.is_empty() {
        default = json!([{"type": "reject"}]);
        for reg in allowed {
            if policies.cluster.contains_key(reg) {
                continue;
            }
            scopes.insert(reg.clone(), json!([{"type": "insecureAcceptAnything"}]));
        }
    }
    if !blocked.is_empty() {
        default = json!([{"type": "insecureAcceptAnything"}]);
        for reg in blocked {
            scopes.insert(reg.clone(), json!([{"type": "reject"}]));
        }
    }
    for (scope, reqs) in &policies.cluster {
        let entry = scopes
            .entry(scope.clone())
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(a) = entry {
            a.extend(reqs.iter().cloned());
        }
    }
    if !scopes.is_empty() || release.policy_transports_always {
        let atomic: Map<String, Value> = scopes
            .iter()
            .filter(|(k, _)| k.matches('/').count() < 3)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        transports.insert("docker".into(), Value::Object(scopes.into_iter().collect()));
        transports.insert("atomic".into(), Value::Object(atomic));
    }
    // Go writes the transports map (and each scope map) with sorted keys.
    let transports: Map<String, Value> = {
        let mut keys: Vec<String> = transports.keys().cloned().collect();
        keys.sort();
        keys.into_iter()
            .map(|k| {
                let v = transports.get(&k).cloned().unwrap_or(Value::Null);
                let v = match v {
                    Value::Object(o) => {
                        let mut ks: Vec<String> = o.keys().cloned().collect();
                        ks.sort();
                        Value::Object(
                            ks.into_iter()
                                .map(|s| {
                                    let r = o.get(&s).cloned().unwrap_or(Value::Null);
                                    (s, r)
                                })
                                .collect(),
                        )
                    }
                    other => other,
                };
                (k, v)
            })
            .collect()
    };
    let mut out = Map::new();
    out.insert("default".into(), default);
    out.insert("transports".into(), Value::Object(transports));
    let out = Value::Object(out);
    let text = if release.policy_json_indented {
        to_go_indented(&out, "  ")
    } else {
        to_go_compact(&out)
    };
    Ok(text.into_bytes())
}

/// Upstream's `updateSearchRegistriesConfig`: a registries.conf with only the search list,
/// as `release` writes it.
pub fn search_registries_dropin(regs: &[String], release: &Profile) -> Vec<u8> {
    RegistriesConf {
        unqualified_search_registries: Some(regs.to_vec()),
        ..RegistriesConf::default()
    }
    .encode_as(release)
    .into_bytes()
}

/// The Image's `spec.registrySources` lists (`None`: absent or null).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistrySources {
    /// `insecureRegistries`.
    pub insecure: Option<Vec<String>>,
    /// `blockedRegistries`.
    pub blocked: Option<Vec<String>>,
    /// `allowedRegistries`.
    pub allowed: Option<Vec<String>>,
    /// `containerRuntimeSearchRegistries`.
    pub search: Option<Vec<String>>,
}

impl RegistrySources {
    /// Reads an Image's `spec.registrySources`.
    pub fn from_image(image: &Value) -> RegistrySources {
        let list = |k: &str| {
            image
                .pointer(&format!("/spec/registrySources/{k}"))
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
        };
        RegistrySources {
            insecure: list("insecureRegistries"),
            blocked: list("blockedRegistries"),
            allowed: list("allowedRegistries"),
            search: list("containerRuntimeSearchRegistries"),
        }
    }
}

/// Go's `refMatchingPrefix` of sysregistriesv2.
fn ref_matching_prefix(r: &str, prefix: &str) -> Option<usize> {
    if let Some(sub) = prefix.strip_prefix('*') {
        let index = r.find(sub)?;
        if r[..index].contains('/') {
            return None;
        }
        let end = index + sub.len();
        if end == r.len() {
            return Some(end);
        }
        return matches!(r.as_bytes()[end], b':' | b'/' | b'@').then_some(end);
    }
    if r.len() < prefix.len() || !r.starts_with(prefix) {
        return None;
    }
    if r.len() == prefix.len() {
        return Some(prefix.len());
    }
    matches!(r.as_bytes()[prefix.len()], b':' | b'/' | b'@').then_some(prefix.len())
}

/// The registries of a registries.conf as containers/image loads them: prefixes default to
/// locations, trailing slashes are trimmed, the first entry of each prefix wins.
pub(crate) fn loaded_registries(conf: &RegistriesConf) -> BTreeMap<String, Registry> {
    let mut regs: BTreeMap<String, Registry> = BTreeMap::new();
    for r in &conf.registries {
        let mut r = r.clone();
        r.endpoint.location = r.endpoint.location.trim_end_matches('/').to_string();
        r.prefix = if r.prefix.is_empty() {
            r.endpoint.location.clone()
        } else {
            r.prefix.trim_end_matches('/').to_string()
        };
        for m in &mut r.mirrors {
            m.location = m.location.trim_end_matches('/').to_string();
        }
        regs.entry(r.prefix.clone()).or_insert(r);
    }
    regs
}

/// containers/image's `FindRegistry`: the registry with the longest prefix matching `name`.
pub(crate) fn longest_matching_registry<'a>(
    regs: &'a BTreeMap<String, Registry>,
    name: &str,
) -> Option<&'a Registry> {
    let mut best: Option<&Registry> = None;
    for r in regs.values() {
        if ref_matching_prefix(name, &r.prefix).is_some()
            && best.is_none_or(|b| r.prefix.len() > b.prefix.len())
        {
            best = Some(r);
        }
    }
    best
}

/// The endpoints containers/image's `PullSourcesFromReference` tries for `r`, in order:
/// the mirrors that apply to a digest or tag reference, then the registry's own endpoint.
fn pull_endpoints<'a>(reg: &'a Registry, r: &Named) -> Vec<&'a Endpoint> {
    let digested = r.digest.is_some();
    let mut endpoints: Vec<&Endpoint> = Vec::new();
    if reg.mirror_by_digest_only {
        if digested {
            endpoints.extend(&reg.mirrors);
        }
    } else {
        for m in &reg.mirrors {
            match m.pull_from_mirror.as_str() {
                DIGEST_ONLY if !digested => continue,
                TAG_ONLY if digested => continue,
                _ => endpoints.push(m),
            }
        }
    }
    endpoints.push(&reg.endpoint);
    endpoints
}

/// The repository `r` is pulled from at an endpoint with a location (its prefix rewritten
/// to the location).
fn rewritten_name(reg: &Registry, ep: &Endpoint, r: &Named) -> Result<String, String> {
    let full = r.to_string_full();
    let Some(len) = ref_matching_prefix(&full, &reg.prefix) else {
        return Err(format!(
            "invalid prefix '{}' for reference '{full}'",
            reg.prefix
        ));
    };
    let rewritten = format!("{}{}", ep.location, &full[len..]);
    Ok(parse_named(&rewritten)
        .ok_or_else(|| format!("rewriting reference: {rewritten}"))?
        .name)
}

/// The repositories of the pull sources of `r` whose endpoint has a location, in order.
pub(crate) fn pull_source_names(reg: &Registry, r: &Named) -> Result<Vec<String>, String> {
    pull_endpoints(reg, r)
        .into_iter()
        .filter(|ep| !ep.location.is_empty())
        .map(|ep| rewritten_name(reg, ep, r))
        .collect()
}

/// Upstream's `payloadRepoHasUnblockedMirror`: whether some pull source of the payload (its
/// digest mirrors, then the payload itself) lies outside every blocked scope.
fn payload_has_unblocked_mirror(
    payload: &Named,
    digest: &[&MirrorObject],
    sources: &RegistrySources,
) -> Result<bool, String> {
    let mut conf = RegistriesConf::default();
    let blocked = sources.blocked.clone().unwrap_or_default();
    edit_registries_config(
        &mut conf,
        &sources.insecure.clone().unwrap_or_default(),
        &blocked,
        digest,
        &[],
    )?;
    let regs = loaded_registries(&conf);
    let Some(reg) = longest_matching_registry(&regs, &payload.name) else {
        return Ok(false);
    };
    for ep in pull_endpoints(reg, payload) {
        let name = if ep.location.is_empty() {
            payload.name.clone()
        } else {
            rewritten_name(reg, ep, payload)?
        };
        if !blocked
            .iter()
            .any(|b| scope_is_nested_inside_scope(&name, b))
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The blocked lists for registries.conf and policy.json and the allowed list, as upstream's
/// `getValidBlockedAndAllowedRegistries` computes them (`None`: Go's nil).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlockedAndAllowed {
    /// Blocked scopes for registries.conf.
    pub registries_blocked: Option<Vec<String>>,
    /// Blocked scopes for policy.json.
    pub policy_blocked: Option<Vec<String>>,
    /// Allowed scopes for policy.json.
    pub allowed: Option<Vec<String>>,
}

fn push(list: &mut Option<Vec<String>>, s: &str) {
    list.get_or_insert_with(Vec::new).push(s.to_string());
}

/// Upstream's `getValidBlockedAndAllowedRegistries`: a blocked scope holding the payload
/// repository is dropped unless the payload has an unblocked digest mirror, in which case it
/// stays blocked in registries.conf and the payload repository is allowed. `Err` only for a
/// release image that does not parse; other problems are logged upstream and leave the lists
/// as computed.
pub fn valid_blocked_and_allowed(
    release_image: &str,
    sources: &RegistrySources,
    digest: &[&MirrorObject],
) -> Result<BlockedAndAllowed, String> {
    let payload = parse_named(release_image).ok_or_else(|| ERR_PARSING_REFERENCE.to_string())?;
    let repo = payload.name.clone();
    let mut out = BlockedAndAllowed::default();
    for reg in sources.blocked.iter().flatten() {
        if scope_is_nested_inside_scope(&repo, reg) {
            match payload_has_unblocked_mirror(&payload, digest, sources) {
                Err(_) => return Ok(BlockedAndAllowed::default()),
                Ok(false) => continue,
                Ok(true) => {
                    push(&mut out.registries_blocked, reg);
                    if repo != *reg {
                        push(&mut out.policy_blocked, reg);
                    }
                    push(&mut out.allowed, &repo);
                    continue;
                }
            }
        }
        push(&mut out.registries_blocked, reg);
        push(&mut out.policy_blocked, reg);
    }
    for a in sources.allowed.iter().flatten() {
        push(&mut out.allowed, a);
    }
    Ok(out)
}

/// The registries files for one role (upstream's `registriesConfigIgnition`), as an
/// Ignition config.
#[allow(clippy::too_many_arguments)]
fn registries_ignition(
    input: &ClusterConfigInput,
    release: &Profile,
    role: &str,
    release_image: &str,
    sources: &RegistrySources,
    lists: &BlockedAndAllowed,
    digest: &[&MirrorObject],
    tag: &[&MirrorObject],
    policies: &ScopePolicies,
) -> Result<Value, (String, Vec<ObjectRef>)> {
    let base_name = format!("01-{role}-container-runtime");
    let base = base_config_value(input, &base_name);
    let original = |path: &str, what: &str| -> Result<Vec<u8>, (String, Vec<ObjectRef>)> {
        base.as_ref()
            .and_then(|mc| find_file(&[mc], path))
            .ok_or_else(|| {
                (
                    format!("could not generate original ContainerRuntime Configs: could not find {what} in {base_name}"),
                    vec![],
                )
            })
    };
    let mut files = Vec::new();
    let mut registries_toml: Option<Vec<u8>> = None;
    if sources.insecure.is_some()
        || lists.registries_blocked.is_some()
        || !input.image_content_source_policies.is_empty()
        || !input.image_digest_mirror_sets.is_empty()
        || !input.image_tag_mirror_sets.is_empty()
    {
        let data = original(REGISTRIES_CONF_PATH, "registries.conf")?;
        let toml = update_registries_config(
            &data,
            sources.insecure.as_deref().unwrap_or(&[]),
            lists.registries_blocked.as_deref().unwrap_or(&[]),
            digest,
            tag,
            release,
        )
        .map_err(|(e, o)| {
            (
                format!("could not update registries config with new changes: {e}"),
                o,
            )
        })?;
        files.push(ign_file(REGISTRIES_CONF_PATH, &toml));
        registries_toml = Some(toml);
    }
    if lists.policy_blocked.is_some() || lists.allowed.is_some() || !policies.is_empty() {
        let data = original(POLICY_JSON_PATH, "policy.json")?;
        let blocked = lists.policy_blocked.as_deref().unwrap_or(&[]);
        let allowed = lists.allowed.as_deref().unwrap_or(&[]);
        let policy =
            update_policy_json_with(&data, blocked, allowed, release_image, policies, release)
                .map_err(|(e, o)| {
                    (
                        format!("could not update policy json with new changes: {e}"),
                        o,
                    )
                })?;
        let namespaced = sigstore::namespaced_policy_jsons(&policy, blocked, allowed, policies)
            .map_err(|e| {
                (
                    format!("could not update namespace policy JSON from imagepolicy: {e}"),
                    vec![],
                )
            })?;
        let attachments = sigstore::sigstore_registries_d(policies, registries_toml.as_deref())
            .map_err(|e| (e, vec![]))?;
        files.push(ign_file(POLICY_JSON_PATH, &policy));
        if let Some(yaml) = attachments {
            files.push(ign_file(sigstore::SIGSTORE_REGISTRIES_PATH, &yaml));
        }
        for (ns, json) in &namespaced {
            files.push(ign_file(&sigstore::namespace_policy_path(ns), json));
        }
    }
    if let Some(search) = &sources.search {
        files.push(ign_file(
            SEARCH_REGISTRIES_PATH,
            &search_registries_dropin(search, release),
        ));
    }
    Ok(ign_config(files, release))
}

fn base_config_value(input: &ClusterConfigInput, name: &str) -> Option<Value> {
    base_config(&input.base_machine_configs, name).cloned()
}

/// The mirror-set objects: digest ones (IDMS, then ICSP) and tag ones (ITMS), each list
/// sorted by name.
pub fn mirror_objects(input: &ClusterConfigInput) -> (Vec<MirrorObject>, Vec<MirrorObject>) {
    let read = |list: &[Value], kind: &str, field: &str| {
        let mut out: Vec<MirrorObject> = list
            .iter()
            .map(|v| MirrorObject::from_json(v, kind, field))
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    };
    let mut digest = read(
        &input.image_digest_mirror_sets,
        "ImageDigestMirrorSet",
        "imageDigestMirrors",
    );
    digest.extend(read(
        &input.image_content_source_policies,
        "ImageContentSourcePolicy",
        "repositoryDigestMirrors",
    ));
    let tag = read(
        &input.image_tag_mirror_sets,
        "ImageTagMirrorSet",
        "imageTagMirrors",
    );
    (digest, tag)
}

/// Whether the release reads image signature policies and the `SigstoreImageVerification`
/// gate is on: listed enabled in the FeatureGate's status, or, without a FeatureGate, on by
/// default in that release.
pub fn image_policies_enabled(input: &ClusterConfigInput, release: &Profile) -> bool {
    match release.image_policies {
        None => false,
        Some(default) => {
            input.feature_gates.is_enabled(sigstore::FEATURE_GATE)
                || (!input.feature_gate_exists && default)
        }
    }
}

/// The ClusterImagePolicies' and ImagePolicies' requirements per scope, when the release
/// reads them and the gate is on (else none).
pub fn image_policies(
    input: &ClusterConfigInput,
    release: &Profile,
) -> Result<ScopePolicies, String> {
    if !image_policies_enabled(input, release) {
        return Ok(ScopePolicies::default());
    }
    sigstore::valid_scope_policies(
        &ImagePolicy::read_all(&input.cluster_image_policies),
        &ImagePolicy::read_all(&input.image_policies),
        sigstore::ItemRules::of(release),
    )
}

/// One pass of upstream's `syncImageConfig`: for every pool labelled `mco-built-in` (by
/// name), `99-<pool>-generated-registries` is created, or updated unless its stored config
/// and version already match. Without the Image `cluster` or the ClusterVersion `version`
/// nothing happens.
pub fn sync(input: &ClusterConfigInput) -> ConfigOutcome {
    let release = input.release.profile();
    let mut store = Store::new(&input.existing_machine_configs);
    let version = input.controller_version.as_str();
    let (Some(image), Some(cv)) = (&input.image, &input.cluster_version) else {
        return store.finish(None);
    };
    let sources = RegistrySources::from_image(image);
    let (digest_objs, tag_objs) = mirror_objects(input);
    let digest: Vec<&MirrorObject> = digest_objs.iter().collect();
    let tag: Vec<&MirrorObject> = tag_objs.iter().collect();
    let release_image = cv
        .pointer("/status/desired/image")
        .and_then(Value::as_str)
        .unwrap_or("");
    let lists = match valid_blocked_and_allowed(release_image, &sources, &digest) {
        Ok(l) => l,
        Err(message) => {
            return store.finish(Some(ConfigError {
                message,
                objects: vec![ObjectRef::new("ClusterVersion", "version")],
            }))
        }
    };
    let policies = match image_policies(input, &release) {
        Ok(p) => p,
        Err(message) => {
            return store.finish(Some(ConfigError {
                message,
                objects: vec![],
            }))
        }
    };
    let owner = json!([{
        "apiVersion": "config.openshift.io/v1",
        "kind": "Image",
        "name": name_of(image),
        "uid": image.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or(""),
    }]);
    for pool in sorted_pools(&input.pools) {
        if !pool.labels.contains_key(BUILT_IN_LABEL) {
            continue;
        }
        let deprecated = format!("99-{}-{}-registries", pool.name, pool.uid);
        let key = store.managed_key(&pool, "99", "registries", &deprecated);
        let config = match registries_ignition(
            input,
            &release,
            template_role(&pool.name),
            release_image,
            &sources,
            &lists,
            &digest,
            &tag,
            &policies,
        ) {
            Ok(c) => c,
            Err((e, objects)) => {
                return store.finish(Some(ConfigError {
                    message: format!("could not Create/Update MachineConfig: {e}"),
                    objects,
                }))
            }
        };
        let existing = store.mcs.get(&key).cloned();
        if let Some(old) = &existing {
            let stored = old
                .pointer("/spec/config")
                .map(|c| to_go_compact(&sorted(c)))
                .unwrap_or_default();
            // Upstream compares the stored bytes with its marshalled config, both with sorted
            // keys (Go marshals maps sorted); compare both sorted so a config stored in another
            // key order (as kube-rs stores it) is still up to date.
            if stored == to_go_compact(&sorted(&config)) && version_of(old) == version {
                store.unchanged.insert(key.clone());
                continue;
            }
        }
        let mut mc = with_config(existing.as_ref(), &pool.name, &key, config, version);
        mc["metadata"]["ownerReferences"] = owner.clone();
        store.put(mc);
    }
    store.finish(None)
}
