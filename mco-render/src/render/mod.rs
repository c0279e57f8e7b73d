//! Rendering a pool: select its MachineConfigs, validate them, merge them, name the result.
//!
//! The same inputs give the same bytes: no clock, no randomness, and the output does not depend
//! on the order in which MachineConfigs are given.

pub mod error;
pub mod name;
pub mod source_config;
mod v2_bridge;

use crate::api::machine_config::{
    API_VERSION, GENERATED_BY_ANNOTATION, OS_IMAGE_URL_OVERRIDDEN_ANNOTATION,
    RELEASE_IMAGE_VERSION_ANNOTATION, ROLE_LABEL,
};
use crate::api::pool::{ObjectReference, PoolConfiguration};
use crate::api::{
    ControllerConfigSpec, MachineConfig, MachineConfigPool, MachineConfigSpec, ObjectMeta,
    OwnerReference,
};
use crate::release::{
    CompressionMerge, ExtensionCheck, GeneratedOsImage, MergeOrder, Profile, Release, SourceOrder,
};
use crate::render::error::{RenderError, RenderErrorKind as K};
use mco_ignition::merge_fold::MergeFold;
use mco_ignition::small_map::{small_get_mut, SmallGet};
use mco_ignition::{Config, JsonPath, SpecVersion};
use serde::Deserialize;
use serde_json::{Map, Value};
use source_config::ConfigError;
use std::collections::BTreeMap;

/// The largest rendered MachineConfig upstream stores (etcd's request limit).
pub const MAX_RENDERED_SIZE: usize = 1_572_864;

/// The extensions upstream allows, with the packages each installs.
pub const SUPPORTED_EXTENSIONS: [(&str, &[&str]); 7] = [
    ("two-node-ha", &["pacemaker", "pcs", "fence-agents-all"]),
    (
        "ipsec",
        &[
            "NetworkManager-libreswan",
            "libreswan",
            "openvswitch3.5-ipsec",
        ],
    ),
    ("usbguard", &["usbguard"]),
    ("kerberos", &["krb5-workstation", "libkadm5"]),
    ("kernel-devel", &["kernel-devel", "kernel-headers"]),
    ("sandboxed-containers", &["kata-containers"]),
    ("sysstat", &["sysstat"]),
];

pub use crate::render::name::NameScheme;

/// Options for a render.
#[derive(Debug, Clone)]
pub struct RenderOptions {
    /// The controller version stamped on the output; generated inputs must carry it.
    pub controller_version: String,
    /// The release image version annotation value.
    pub release_image_version: String,
    /// How to name the result.
    pub name_scheme: NameScheme,
    /// Whether to enforce upstream's size limit on the rendered object (where the release
    /// does).
    pub check_size: bool,
    /// The release whose rendering to reproduce.
    pub release: Release,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            controller_version: crate::CONTROLLER_VERSION.to_string(),
            release_image_version: String::new(),
            name_scheme: NameScheme::Upstream,
            check_size: true,
            release: Release::NEWEST,
        }
    }
}

/// A rendered pool.
///
/// The merged Ignition config is held once, in `machine_config.spec.config`; [`Rendered::spec`]
/// and [`Rendered::ignition`] read it from there.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// The rendered MachineConfig, with upstream's metadata; `spec.config` holds the merged
    /// Ignition config (spec 3.5) as JSON.
    pub machine_config: MachineConfig,
    /// The source MachineConfig names in merge order.
    pub source: Vec<String>,
    /// The pool's resulting `spec.configuration`.
    pub configuration: PoolConfiguration,
}

impl Rendered {
    /// The merged Ignition config (spec 3.5) as JSON.
    pub fn ignition(&self) -> &Value {
        static NONE: Value = Value::Null;
        self.machine_config.spec.config.as_ref().unwrap_or(&NONE)
    }

    /// The rendered spec as JSON in upstream's field set (`config` as an object): exactly what
    /// the name hashes. Built on each call.
    pub fn spec(&self) -> Value {
        spec_json(&self.machine_config.spec, self.ignition().clone())
    }

    /// The typed view of the merged Ignition config.
    pub fn typed_config(&self) -> Result<mco_ignition::model::Config, serde_json::Error> {
        mco_ignition::model::Config::deserialize(self.ignition())
    }
}

/// A failed render: the first error in upstream's order, every error found, and the selection.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderFailure {
    /// Every problem found, upstream's first first.
    pub errors: Vec<RenderError>,
    /// The selected MachineConfig names as upstream's failing step left them.
    pub source: Vec<String>,
}

impl RenderFailure {
    fn single(err: RenderError, source: Vec<String>) -> Self {
        RenderFailure {
            errors: vec![err],
            source,
        }
    }

    /// The error upstream reports.
    pub fn first(&self) -> Option<&RenderError> {
        self.errors.first()
    }
}

impl std::fmt::Display for RenderFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.first() {
            Some(e) => f.write_str(&e.message),
            None => f.write_str("render failed"),
        }
    }
}

/// Selects a pool's MachineConfigs, sorted by name (those sharing a name by content).
pub fn select<'a>(
    pool: &MachineConfigPool,
    all: &'a [MachineConfig],
) -> Result<Vec<&'a MachineConfig>, RenderError> {
    select_for(pool, all, &Profile::default())
}

/// [`select`] as `profile`'s release selects (the same, but for its selector errors' words).
pub fn select_for<'a>(
    pool: &MachineConfigPool,
    all: &'a [MachineConfig],
    profile: &Profile,
) -> Result<Vec<&'a MachineConfig>, RenderError> {
    Ok(select_indices(pool, all, profile)?
        .into_iter()
        .map(|i| &all[i])
        .collect())
}

/// [`select`] as positions in `all`.
fn select_indices(
    pool: &MachineConfigPool,
    all: &[MachineConfig],
    profile: &Profile,
) -> Result<Vec<usize>, RenderError> {
    let selector = pool
        .spec
        .machine_config_selector
        .clone()
        .unwrap_or_default();
    if selector.is_empty() {
        return Err(RenderError::pool(
            K::EmptySelector,
            "This machineconfigpool is selecting all machineconfigs. A non-empty selector is required.",
        ));
    }
    let compiled = selector
        .compile_as(profile.selector_values)
        .map_err(|e| RenderError::pool(K::InvalidSelector, e.to_string()))?;
    let mut out: Vec<usize> = (0..all.len())
        .filter(|i| compiled.matches(&all[*i].metadata.labels))
        .collect();
    if out.is_empty() {
        return Err(RenderError::pool(
            K::NoMatch,
            format!("no MachineConfigs found matching selector {compiled}"),
        ));
    }
    out.sort_by(|a, b| {
        let (a, b) = (&all[*a], &all[*b]);
        a.name().cmp(b.name()).then_with(|| same_name_order(a, b))
    });
    Ok(out)
}

/// The order of MachineConfigs sharing a name (a manifests folder can hold several; the API
/// server cannot, so upstream's sort by name never meets them): by their JSON with keys sorted,
/// so what renders does not depend on the order they were read in.
fn same_name_order(a: &MachineConfig, b: &MachineConfig) -> std::cmp::Ordering {
    let text = |mc: &MachineConfig| {
        serde_json::to_value(mc)
            .map(|v| crate::gocompat::json::sorted(&v).to_string())
            .unwrap_or_default()
    };
    text(a).cmp(&text(b))
}

fn config_error(mc: &MachineConfig, e: ConfigError) -> RenderError {
    let base = JsonPath::parse_dotted("spec.config");
    let mut err = RenderError::in_config(K::InvalidIgnition, mc.name(), e.message);
    if let Some(r) = &e.report {
        err.details = r
            .entries
            .iter()
            .map(|en| {
                let kind = if en.severity == mco_ignition::Severity::Error {
                    ""
                } else {
                    "warning: "
                };
                let p = en.path.clone().unwrap_or_default().prefixed(&base);
                (p, format!("{kind}{}", en.message))
            })
            .collect();
    }
    match e.path {
        Some(p) => err.at(p.prefixed(&base)),
        None => err,
    }
}

/// Checks one MachineConfig as upstream's ValidateMachineConfig does, returning its config as 3.5.
/// Every problem is returned, upstream's first first.
pub fn validate_machine_config(mc: &MachineConfig) -> Result<Option<Config>, Vec<RenderError>> {
    validate_machine_config_for(mc, &Profile::default())
}

/// [`validate_machine_config`] as `profile`'s release checks.
pub fn validate_machine_config_for(
    mc: &MachineConfig,
    profile: &Profile,
) -> Result<Option<Config>, Vec<RenderError>> {
    check_machine_config(mc, mc.ignition().map(Ignition::Borrowed), profile)
}

/// [`validate_machine_config`] taking the Ignition config out of `mc` (leaving `spec.config`
/// unset), so a config already in normalised form is not copied.
pub fn validate_machine_config_owned(
    mc: &mut MachineConfig,
) -> Result<Option<Config>, Vec<RenderError>> {
    let raw = mc.spec.config.take().filter(|c| !c.is_null());
    check_machine_config(mc, raw.map(Ignition::Owned), &Profile::default())
}

/// A MachineConfig's Ignition config, borrowed or taken.
enum Ignition<'a> {
    Borrowed(&'a Value),
    Owned(Value),
}

fn check_machine_config(
    mc: &MachineConfig,
    ignition: Option<Ignition<'_>>,
    profile: &Profile,
) -> Result<Option<Config>, Vec<RenderError>> {
    let mut errors = Vec::new();
    let kt = mc.spec.kernel_type.as_str();
    if !profile.kernel_type_valid(kt) {
        errors.push(
            RenderError::in_config(
                K::InvalidKernelType,
                mc.name(),
                format!("kernelType={kt} is invalid"),
            )
            .at(JsonPath::parse_dotted("spec.kernelType")),
        );
    }
    let mut config = None;
    let has_config = ignition.is_some();
    if let Some(raw) = ignition {
        let parsed = match raw {
            Ignition::Borrowed(v) => {
                source_config::parse_for(v, source_config::Layout::Sorted, profile)
            }
            Ignition::Owned(v) => {
                source_config::parse_owned_for(v, source_config::Layout::Sorted, profile)
            }
        };
        match parsed {
            Err(e) => errors.push(config_error(mc, e)),
            Ok(parsed) => {
                if let Err(e) = source_config::validate_config(&parsed) {
                    errors.push(config_error(mc, e));
                }
                config = Some(parsed.into_config());
            }
        }
    }
    let check_extensions = match profile.extension_check {
        ExtensionCheck::None => false,
        ExtensionCheck::Always => true,
        ExtensionCheck::WithConfig => has_config,
    };
    if check_extensions {
        let invalid: Vec<&str> = mc
            .spec
            .extensions
            .iter()
            .map(String::as_str)
            .filter(|e| !profile.extension_allowed(e))
            .collect();
        if !invalid.is_empty() {
            errors.push(
                RenderError::in_config(
                    K::InvalidExtensions,
                    mc.name(),
                    format!("invalid extensions found: [{}]", invalid.join(" ")),
                )
                .at(JsonPath::parse_dotted("spec.extensions")),
            );
        }
    }
    if errors.is_empty() {
        Ok(config)
    } else {
        Err(errors)
    }
}

/// Upstream's merge order: MachineConfigs with role `worker` first, then the rest, each by name.
pub fn merge_order<'a>(selected: &[&'a MachineConfig]) -> Vec<&'a MachineConfig> {
    merge_order_as(selected, MergeOrder::WorkerFirst)
}

/// The merge order `order` gives.
pub fn merge_order_as<'a>(
    selected: &[&'a MachineConfig],
    order: MergeOrder,
) -> Vec<&'a MachineConfig> {
    if order == MergeOrder::Name {
        let mut all = selected.to_vec();
        all.sort_by(|a, b| a.name().cmp(b.name()));
        return all;
    }
    let (mut workers, mut others): (Vec<&MachineConfig>, Vec<&MachineConfig>) = selected
        .iter()
        .partition(|mc| mc.metadata.labels.get(ROLE_LABEL).map(String::as_str) == Some("worker"));
    workers.sort_by(|a, b| a.name().cmp(b.name()));
    others.sort_by(|a, b| a.name().cmp(b.name()));
    workers.extend(others);
    workers
}

/// Renders a pool from every MachineConfig in the cluster.
pub fn render_pool(
    pool: &MachineConfigPool,
    all: &[MachineConfig],
    controller: &ControllerConfigSpec,
    opts: &RenderOptions,
) -> Result<Rendered, RenderFailure> {
    let profile = opts.release.profile();
    let selected =
        select_for(pool, all, &profile).map_err(|e| RenderFailure::single(e, Vec::new()))?;
    render_selected(pool, &selected, controller, opts, |mc, _| {
        validate_machine_config_for(mc, &profile)
    })
}

/// [`render_pool`] taking the MachineConfigs, so their Ignition configs are parsed in place
/// rather than copied: the same result.
pub fn render_pool_owned(
    pool: &MachineConfigPool,
    mut all: Vec<MachineConfig>,
    controller: &ControllerConfigSpec,
    opts: &RenderOptions,
) -> Result<Rendered, RenderFailure> {
    let profile = opts.release.profile();
    let indices =
        select_indices(pool, &all, &profile).map_err(|e| RenderFailure::single(e, Vec::new()))?;
    let mut ignition: Vec<Option<Value>> =
        indices.iter().map(|i| all[*i].spec.config.take()).collect();
    let selected: Vec<&MachineConfig> = indices.iter().map(|i| &all[*i]).collect();
    render_selected(pool, &selected, controller, opts, |mc, n| {
        let raw = ignition[n].take().filter(|c| !c.is_null());
        check_machine_config(mc, raw.map(Ignition::Owned), &profile)
    })
}

/// Renders from the selected MachineConfigs, sorted by name; `validate` checks the `n`th.
fn render_selected(
    pool: &MachineConfigPool,
    selected: &[&MachineConfig],
    controller: &ControllerConfigSpec,
    opts: &RenderOptions,
    mut validate: impl FnMut(&MachineConfig, usize) -> Result<Option<Config>, Vec<RenderError>>,
) -> Result<Rendered, RenderFailure> {
    let names = |v: &[&MachineConfig]| v.iter().map(|m| m.name().to_string()).collect::<Vec<_>>();
    let selection = names(selected);
    let profile = opts.release.profile();

    let mut errors = Vec::new();
    for mc in selected {
        if let Some(v) = mc.generated_by() {
            if v != opts.controller_version {
                errors.push(RenderError::in_config(
                    K::StaleGenerated,
                    mc.name(),
                    profile.cased(&format!(
                        "ignoring MC {} generated by older version {v} (my version: {})",
                        mc.name(),
                        opts.controller_version
                    )),
                ));
            }
        }
    }
    let mut configs: BTreeMap<&str, Option<Config>> = BTreeMap::new();
    for (n, mc) in selected.iter().enumerate() {
        match validate(mc, n) {
            Ok(c) => {
                configs.insert(mc.name(), c);
            }
            Err(es) => errors.extend(es),
        }
    }
    if !errors.is_empty() {
        return Err(RenderFailure {
            errors,
            source: selection,
        });
    }

    let ordered = merge_order_as(selected, profile.merge_order);
    let source = match profile.source_order {
        SourceOrder::Merge => names(&ordered),
        SourceOrder::Name => selection.clone(),
    };
    for mc in &ordered {
        if mc.metadata.labels.is_empty() && profile.merge_order == MergeOrder::WorkerFirst {
            return Err(RenderFailure::single(
                RenderError::in_config(
                    K::MissingLabels,
                    mc.name(),
                    profile.cased(&format!("cannot find label in MachineConfig {}", mc.name())),
                ),
                source,
            ));
        }
    }
    let spec = merge_specs(&ordered, &mut configs, controller, &profile)
        .map_err(|e| RenderFailure::single(e, source.clone()))?;
    let (mut mc_spec, config) = spec;
    // Written in the release's spec version; what its inputs can express, it can.
    let config = if profile.rendered_ignition == config.version() {
        config.into_value()
    } else {
        mco_ignition::translate::down(&config.into_value(), profile.rendered_ignition).map_err(
            |e| {
                RenderFailure::single(
                    RenderError::pool(K::Conflict, e.to_string()),
                    source.clone(),
                )
            },
        )?
    };
    // The name hashes the spec with the config in it: lend the config to the spec value, then
    // take it back for the MachineConfig, so it is never copied.
    let mut spec_value = spec_json(&mc_spec, config);
    let name = match crate::render::name::try_name_for(opts.name_scheme, pool.name(), &spec_value) {
        Ok(name) => name,
        Err(e) => {
            return Err(RenderFailure::single(
                RenderError::pool(K::Conflict, e.to_string()),
                source,
            ))
        }
    };
    mc_spec.config = match &mut spec_value {
        Value::Object(m) => m.swap_remove("config"),
        _ => None,
    };
    drop(spec_value);

    let mut annotations = BTreeMap::new();
    annotations.insert(
        GENERATED_BY_ANNOTATION.to_string(),
        opts.controller_version.clone(),
    );
    annotations.insert(
        RELEASE_IMAGE_VERSION_ANNOTATION.to_string(),
        opts.release_image_version.clone(),
    );
    if mc_spec.os_image_url != controller.base_os_container_image {
        annotations.insert(
            OS_IMAGE_URL_OVERRIDDEN_ANNOTATION.to_string(),
            "true".to_string(),
        );
    }
    let pool_uid = pool.metadata.uid.clone().unwrap_or_default();
    let machine_config = MachineConfig {
        api_version: API_VERSION.to_string(),
        kind: "MachineConfig".to_string(),
        metadata: ObjectMeta {
            name: name.clone(),
            labels: BTreeMap::new(),
            annotations,
            owner_references: vec![OwnerReference {
                api_version: API_VERSION.to_string(),
                kind: "MachineConfigPool".to_string(),
                name: pool.name().to_string(),
                uid: pool_uid,
                controller: Some(true),
                block_owner_deletion: Some(true),
            }],
            ..ObjectMeta::default()
        },
        spec: mc_spec,
    };
    if opts.check_size && profile.size_check {
        let size = json_size(&machine_config);
        if size > MAX_RENDERED_SIZE {
            return Err(RenderFailure::single(
                RenderError::pool(
                    K::TooLarge,
                    format!(
                        "MachineConfig {name} is {size} bytes, which exceeds the maximum allowed size of {MAX_RENDERED_SIZE} bytes"
                    ),
                ),
                source,
            ));
        }
    }
    let configuration = PoolConfiguration {
        name,
        source: source
            .iter()
            .map(|n| ObjectReference {
                api_version: API_VERSION.into(),
                kind: "MachineConfig".into(),
                name: n.clone(),
            })
            .collect(),
    };
    Ok(Rendered {
        machine_config,
        source,
        configuration,
    })
}

/// The length of a value's compact JSON, counted without building it (0 if it cannot be
/// written, as before).
fn json_size(v: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    match serde_json::to_writer(&mut c, v) {
        Ok(()) => c.0,
        Err(_) => 0,
    }
}

/// The rendered spec as JSON in upstream's field set, with `config` given.
fn spec_json(spec: &MachineConfigSpec, config: Value) -> Value {
    let mut m = Map::new();
    m.insert(
        "osImageURL".into(),
        Value::String(spec.os_image_url.clone()),
    );
    m.insert(
        "baseOSExtensionsContainerImage".into(),
        Value::String(spec.base_os_extensions_container_image.clone()),
    );
    m.insert("config".into(), config);
    m.insert(
        "kernelArguments".into(),
        Value::from(spec.kernel_arguments.clone()),
    );
    m.insert("extensions".into(), Value::from(spec.extensions.clone()));
    m.insert("fips".into(), Value::Bool(spec.fips));
    m.insert("kernelType".into(), Value::String(spec.kernel_type.clone()));
    Value::Object(m)
}

/// The rendered spec as JSON in upstream's field set.
pub fn spec_to_value(spec: &MachineConfigSpec, config: &Config) -> Value {
    spec_json(spec, config.to_value())
}

/// Upstream sets the default compression on every file of a child before merging it and strips
/// it again after: it only changes the result for a file that merges with a parent's file of
/// the same path (the empty compression replaces the parent's). A file that is appended keeps
/// its own fields once stripped, so only files whose path the parent holds are given the
/// default; when the fold has no index of the parent's files, or the child repeats a path,
/// every file is.
fn set_default_compression_for_merge(child: &mut Config, parent: &MergeFold) {
    let mut paths: Vec<&str> = child
        .list(FILES)
        .iter()
        .map(|f| f.small_get("path").and_then(Value::as_str).unwrap_or(""))
        .collect();
    paths.sort_unstable();
    let repeats = paths.windows(2).any(|w| w[0] == w[1]);
    if repeats || parent.list_has_key(FILES, "").is_none() {
        set_default_compression(child);
        return;
    }
    child.edit(|root| {
        for_each_file(root, |f| {
            let path = f.small_get("path").and_then(Value::as_str).unwrap_or("");
            if parent.list_has_key(FILES, path) == Some(true) {
                set_file_default_compression(f);
            }
        })
    });
}

fn set_default_compression(config: &mut Config) {
    config.edit(|root| for_each_file(root, set_file_default_compression));
}

fn set_file_default_compression(f: &mut Map<String, Value>) {
    // Looked up before inserting: `entry` would allocate its key on every call.
    if f.small_get("contents").is_none() {
        f.insert("contents".to_string(), Value::Object(Map::new()));
    }
    if let Some(Value::Object(c)) = small_get_mut(f, "contents") {
        if c.small_get("compression").is_none() {
            c.insert("compression".to_string(), Value::String(String::new()));
        }
    }
}

fn unset_default_compression(root: &mut Map<String, Value>) {
    for_each_file(root, unset_file_compression)
}

/// Drops a file's `compression: ""` and then its `contents` if nothing is left in them.
fn unset_file_compression(f: &mut Map<String, Value>) {
    let mut drop_contents = false;
    if let Some(Value::Object(c)) = small_get_mut(f, "contents") {
        if c.small_get("compression").and_then(Value::as_str) == Some("") {
            c.remove("compression");
        }
        drop_contents = c.is_empty();
    }
    if drop_contents {
        f.remove("contents");
    }
}

/// The dotted path of the file list, as [`MergeFold::merge_with`] names it.
const FILES: &str = "storage.files";

fn for_each_file(root: &mut Map<String, Value>, mut f: impl FnMut(&mut Map<String, Value>)) {
    if let Some(Value::Object(storage)) = root.get_mut("storage") {
        if let Some(Value::Array(files)) = storage.get_mut("files") {
            for file in files.iter_mut() {
                if let Value::Object(m) = file {
                    f(m);
                }
            }
        }
    }
}

fn merge_specs(
    ordered: &[&MachineConfig],
    configs: &mut BTreeMap<&str, Option<Config>>,
    controller: &ControllerConfigSpec,
    profile: &Profile,
) -> Result<(MachineConfigSpec, Config), RenderError> {
    let child_wins = profile.compression_merge == CompressionMerge::ChildWins;
    // Children are folded one by one onto the result so far; after each step upstream strips
    // the default compression from every file. Files a step leaves alone were stripped by the
    // step before, so after the first step only the files a step touches need it.
    let mut out: Option<MergeFold> = None;
    let mut stripped = false;
    for (i, mc) in ordered.iter().enumerate() {
        let cfg = configs.get_mut(mc.name()).and_then(Option::take);
        match (i, cfg) {
            (0, None) => out = Some(MergeFold::new(Config::empty(SpecVersion::LATEST))),
            (_, None) => {}
            (_, Some(mut child)) => match out.as_mut() {
                None => out = Some(MergeFold::new(child)),
                Some(parent) if !child_wins => parent.merge_with(child, |_, _| {}),
                Some(parent) => {
                    set_default_compression_for_merge(&mut child, parent);
                    parent.merge_with(child, |list, entry| {
                        if let (FILES, Value::Object(f)) = (list, entry) {
                            unset_file_compression(f);
                        }
                    });
                    if !stripped {
                        parent.edit(unset_default_compression);
                        stripped = true;
                    }
                }
            },
        }
    }
    let mut config = out
        .map(MergeFold::finish)
        .unwrap_or_else(|| Config::empty(SpecVersion::LATEST));
    config.edit(|root| {
        for_each_file(root, |f| {
            if f.small_get("overwrite").is_none() {
                f.insert("overwrite".to_string(), Value::Bool(true));
            }
        })
    });

    let fips = ordered.iter().any(|m| m.spec.fips);
    let mut kernel_type = "default".to_string();
    for mc in ordered {
        if profile.kernel_type_overrides(&mc.spec.kernel_type) {
            kernel_type = mc.spec.kernel_type.clone();
        }
    }
    let kernel_arguments: Vec<String> = ordered
        .iter()
        .flat_map(|m| m.spec.kernel_arguments.iter().cloned())
        .collect();
    let extensions: Vec<String> = ordered
        .iter()
        .flat_map(|m| m.spec.extensions.iter().cloned())
        .collect();
    if kernel_type != "default" && extensions.iter().any(|e| e == "kernel-devel") {
        return Err(RenderError::pool(
            K::Conflict,
            format!(
                "installing kernel-devel extension is not supported with kernelType: {kernel_type}"
            ),
        ));
    }
    let mut os_image_url = controller.base_os_container_image.clone();
    let mut ext_image = controller.base_os_extensions_container_image.clone();
    let may_set_images = |m: &&&MachineConfig| {
        profile.generated_os_image == GeneratedOsImage::Honoured || m.generated_by().is_none()
    };
    for mc in ordered.iter().filter(may_set_images) {
        if !mc.spec.os_image_url.is_empty() {
            os_image_url = mc.spec.os_image_url.clone();
        }
        if !mc.spec.base_os_extensions_container_image.is_empty() {
            ext_image = mc.spec.base_os_extensions_container_image.clone();
        }
    }
    Ok((
        MachineConfigSpec {
            os_image_url,
            base_os_extensions_container_image: ext_image,
            config: None,
            kernel_arguments,
            extensions,
            fips,
            kernel_type,
        },
        config,
    ))
}
