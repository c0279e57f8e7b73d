//! Admission: what a MachineConfig (KubeletConfig, ContainerRuntimeConfig, MachineConfigPool)
//! would do to the cluster, decided before it is stored.
//!
//! [`review`] renders every pool the object lands in, with the cluster's other objects as a
//! [`ClusterView`] holds them, and returns typed [`Findings`]: errors reject the object,
//! warnings admit it.
//!
//! # The rule: wrong in any order, or not wrong
//!
//! kubectl and GitOps tools create a folder's objects one at a time in whatever order they
//! come (`kubectl apply -f dir/` in file order, Argo CD and Flux by their own), so a review
//! rejects only what is wrong whatever order the objects arrive in. Errors:
//! - an object invalid on its own: Ignition that does not parse or validate, a bad path or
//!   mode, an unknown extension or kernel type, an empty (`{}`) or unparsable selector, a
//!   KubeletConfig or ContainerRuntimeConfig whose content its controller refuses (the
//!   messages are [`RenderError::describe`]'s, as `mco-render render` prints them:
//!   `99-worker-broken: spec.config.storage.files[0].path: path not absolute`);
//! - a change that makes a pool fail to render with this object's own content: a pool that
//!   renders today and would not, or an error the pool did not have before (a pool already
//!   failing keeps its old errors to itself);
//! - a transition the pool's nodes cannot reconcile in place (FIPS, disks, users, ...),
//!   when the pool has nodes.
//!
//! Warnings ([`FindingKind::Pending`]), for what objects not created yet may resolve:
//! - a pool selecting no MachineConfigs yet (the pool is created before its configs, or its
//!   configs are the ones the controllers generate); the render controller reports
//!   RenderDegraded until they arrive, as upstream's does. A pool that renders today and an
//!   update would leave with nothing is still an error;
//! - a KubeletConfig or ContainerRuntimeConfig that matches no pool yet, or whose pool's
//!   base MachineConfigs the template controller has not generated yet;
//! - an unreconcilable transition of a pool with no nodes yet: nothing has to move;
//! - a RolloutPolicy whose pool does not exist yet (a policy whose spec does not check is an
//!   error, in [`settings()`]'s words).
//!
//! Other warnings: one per affected pool from the disruption plan (`pool worker: 250 nodes
//! will drain and reboot (kernelArguments changed); about 21h at maxUnavailable 1`; under a
//! RolloutPolicy the estimate is its [`schedule`]'s summary),
//! Ignition's own warnings, and the [`lint`]s.
//!
//! The webhook (`mco-k8s`'s `webhook` module) and `mco-render validate --cluster-dir` both call
//! [`review`], so they cannot disagree. [`v1`] is the AdmissionReview v1 encoding.

pub mod in_use;
pub mod lint;
pub mod v1;

use crate::api::rollout_policy::{self, RolloutPolicy};
use crate::api::{ControllerConfigSpec, MachineConfig, MachineConfigPool};
use crate::controllers::generate::Unmet;
use crate::controllers::rollout::max_unavailable;
use crate::controllers::rollout_policy::schedule::{schedule, PoolNodes, ScheduleInput};
use crate::controllers::rollout_policy::settings;
use crate::manifests::expand::{cluster_machine_configs, ClusterOptions};
use crate::manifests::Manifests;
use crate::plan::policy::{ActionType, Trigger};
use crate::plan::reconcile::RenderedInput;
use crate::plan::report::PlanReport;
use crate::plan::{self, MachineConfiguration};
use crate::render::error::{RenderError, RenderErrorKind};
use crate::render::{render_pool, validate_machine_config, RenderOptions};
use jiff::Timestamp;
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::OnceLock;
use std::time::Duration;

/// The default time one node takes to drain, update and reboot, used for rollout estimates.
/// Our pool status records no observed per-node duration, so this (or
/// [`ReviewOptions::node_duration`]) is always what the estimate uses.
pub const DEFAULT_NODE_DURATION: Duration = Duration::from_secs(5 * 60);

/// The Secret holding the webhook's serving certificate (`tls.crt`, `tls.key`, and with
/// cert-manager `ca.crt`), in the operator's namespace.
pub const WEBHOOK_TLS_SECRET: &str = "machine-config-controller-webhook-tls";

/// The ValidatingWebhookConfiguration in `manifests/`.
pub const WEBHOOK_CONFIGURATION: &str = "machine-config-validation";

/// Sets `caBundle` (base64 PEM, as a Secret's `data["ca.crt"]` already is) on every webhook of
/// our ValidatingWebhookConfiguration; other objects are left alone. Returns whether `obj` is
/// that configuration.
pub fn set_ca_bundle(obj: &mut Value, ca_bundle: &str) -> bool {
    if str_at(obj, "/kind") != "ValidatingWebhookConfiguration"
        || str_at(obj, "/metadata/name") != WEBHOOK_CONFIGURATION
    {
        return false;
    }
    let hooks = obj.get_mut("webhooks").and_then(Value::as_array_mut);
    for h in hooks.into_iter().flatten() {
        if let Some(cc) = h.get_mut("clientConfig").and_then(Value::as_object_mut) {
            cc.insert("caBundle".into(), Value::String(ca_bundle.to_string()));
        }
    }
    true
}

/// The operation under review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// The object is being created.
    Create,
    /// The object is being replaced.
    Update,
}

/// What kind of finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "lint")]
pub enum FindingKind {
    /// The object does not validate, or a pool would fail to render with it.
    Invalid,
    /// A MachineConfig cannot be generated from the resource.
    Generate,
    /// What objects not created yet may resolve: a pool selecting no MachineConfigs yet, a
    /// KubeletConfig or ContainerRuntimeConfig matching no pool or missing its pool's base
    /// MachineConfigs. Admitted with a warning: kubectl and GitOps tools create a folder's
    /// objects in whatever order they come.
    Pending,
    /// A pool's nodes could not move to the new rendered config in place.
    Unreconcilable,
    /// A MachineConfig a pool or node still names is being deleted.
    InUse,
    /// What the change does to a pool's nodes.
    Disruption,
    /// A warning of Ignition's validation.
    Ignition,
    /// A [`lint`].
    Lint(lint::Lint),
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    /// Its kind.
    #[serde(flatten)]
    pub kind: FindingKind,
    /// The message, as the webhook and the CLI print it.
    pub message: String,
}

/// Everything [`review`] found: errors reject the object, warnings admit it.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct Findings {
    /// Reasons to reject.
    pub errors: Vec<Finding>,
    /// Warnings kubectl prints at apply time.
    pub warnings: Vec<Finding>,
}

impl Findings {
    /// Whether the object is admitted.
    pub fn allowed(&self) -> bool {
        self.errors.is_empty()
    }

    fn error(&mut self, kind: FindingKind, message: String) {
        if !self.errors.iter().any(|f| f.message == message) {
            self.errors.push(Finding { kind, message });
        }
    }

    fn warn(&mut self, kind: FindingKind, message: String) {
        if !self.warnings.iter().any(|f| f.message == message) {
            self.warnings.push(Finding { kind, message });
        }
    }
}

/// Options for [`review`].
#[derive(Debug, Clone)]
pub struct ReviewOptions {
    /// How long one node takes to drain, update and reboot (see [`DEFAULT_NODE_DURATION`]).
    pub node_duration: Duration,
    /// The time of the review, for the maintenance windows of a pool's RolloutPolicy; without
    /// it an estimate leaves the waiting for windows out (and says so).
    pub now: Option<Timestamp>,
}

impl Default for ReviewOptions {
    fn default() -> Self {
        ReviewOptions {
            node_duration: DEFAULT_NODE_DURATION,
            now: None,
        }
    }
}

/// One reason a pool does not render, as [`RenderError::describe`] words it.
#[derive(Debug, Clone, PartialEq)]
struct Problem {
    /// The render error's kind; `None` when the rendered config could not be read for the
    /// plan.
    kind: Option<RenderErrorKind>,
    message: String,
}

impl Problem {
    fn other(message: String) -> Self {
        Problem {
            kind: None,
            message,
        }
    }
}

/// A pool's render: the diff input, or why it does not render.
type Base = Result<RenderedInput, Vec<Problem>>;

/// The cluster's objects as a review sees them, with each pool's current render computed once
/// (on the first review that needs it) and kept.
#[derive(Debug)]
pub struct ClusterView {
    manifests: Manifests,
    render: RenderOptions,
    policies: Option<MachineConfiguration>,
    base: Vec<OnceLock<Base>>,
}

impl ClusterView {
    /// The cluster holding these objects: MachineConfigs (generated ones included, as a
    /// cluster stores them), pools, the ControllerConfig, and in `others` the KubeletConfigs,
    /// ContainerRuntimeConfigs, the FeatureGate, APIServer and Node `cluster`, and the
    /// MachineConfiguration `cluster` whose node disruption policies the plans use.
    pub fn new(mut manifests: Manifests, render: RenderOptions) -> Self {
        manifests.pools.sort_by(|a, b| a.1.name().cmp(b.1.name()));
        let policies = manifests
            .others
            .iter()
            .map(|(_, v)| v)
            .find(|v| {
                v.get("kind").and_then(Value::as_str) == Some("MachineConfiguration")
                    && v.pointer("/metadata/name").and_then(Value::as_str) == Some("cluster")
            })
            .and_then(|v| serde_json::from_value(v.clone()).ok());
        let base = manifests.pools.iter().map(|_| OnceLock::new()).collect();
        ClusterView {
            manifests,
            render,
            policies,
            base,
        }
    }

    /// The objects.
    pub fn manifests(&self) -> &Manifests {
        &self.manifests
    }

    fn controller_config(&self) -> ControllerConfigSpec {
        self.manifests
            .controller_config
            .as_ref()
            .map(|(_, c)| c.spec.clone())
            .unwrap_or_default()
    }

    fn machine_configs(&self) -> impl Iterator<Item = &MachineConfig> {
        self.manifests.machine_configs.iter().map(|(_, m)| m)
    }

    fn machine_config(&self, name: &str) -> Option<&MachineConfig> {
        self.machine_configs().find(|m| m.name() == name)
    }

    /// The RolloutPolicy of a pool (the one of the same name).
    pub fn rollout_policy(&self, pool: &str) -> Option<&RolloutPolicy> {
        self.manifests
            .rollout_policies
            .iter()
            .map(|(_, p)| p)
            .find(|p| p.name() == pool)
    }

    /// Pool `i`'s render with the cluster's objects as they are.
    fn base(&self, i: usize, cc: &ControllerConfigSpec) -> Option<&Base> {
        let (_, pool) = self.manifests.pools.get(i)?;
        let cell = self.base.get(i)?;
        Some(cell.get_or_init(|| {
            let all = selected(pool, self.machine_configs());
            render_input(pool, &all, cc, &self.render)
        }))
    }

    /// Renders every pool now, so the first review does not pay for it.
    pub fn warm(&self) {
        let cc = self.controller_config();
        for i in 0..self.base.len() {
            let _ = self.base(i, &cc);
        }
    }
}

/// Copies of the MachineConfigs `pool` selects (all of them when its selector does not
/// compile: the render then reports that): rendering from these gives what rendering from
/// every MachineConfig gives, without copying the others (rendered configs are large).
fn selected<'a>(
    pool: &MachineConfigPool,
    all: impl Iterator<Item = &'a MachineConfig>,
) -> Vec<MachineConfig> {
    let sel = pool
        .spec
        .machine_config_selector
        .clone()
        .unwrap_or_default()
        .compile()
        .ok();
    all.filter(|m| sel.as_ref().is_none_or(|s| s.matches(&m.metadata.labels)))
        .cloned()
        .collect()
}

/// A set of MachineConfigs: the cluster's with one replaced, or a set of its own.
enum Set {
    /// The cluster's, with `name` replaced by `with`.
    Replace {
        name: String,
        with: Box<MachineConfig>,
    },
    /// Its own.
    Own(Vec<MachineConfig>),
}

impl Set {
    fn selected(&self, cluster: &ClusterView, pool: &MachineConfigPool) -> Vec<MachineConfig> {
        match self {
            Set::Replace { name, with } => selected(
                pool,
                cluster
                    .machine_configs()
                    .filter(|m| m.name() != name)
                    .chain(std::iter::once(with.as_ref())),
            ),
            Set::Own(v) => selected(pool, v.iter()),
        }
    }
}

/// Renders a pool into the plan's input, or the errors as `describe`d (pool-level errors
/// prefixed `pool <name>: `).
fn render_input(
    pool: &MachineConfigPool,
    all: &[MachineConfig],
    cc: &ControllerConfigSpec,
    opts: &RenderOptions,
) -> Base {
    match render_pool(pool, all, cc, opts) {
        Ok(r) => plan::input::rendered_input(r.machine_config.name(), &r.machine_config.spec)
            .map_err(|e| vec![Problem::other(format!("pool {}: {e}", pool.name()))]),
        Err(f) => Err(f.errors.iter().flat_map(|e| describe(pool, e)).collect()),
    }
}

fn describe(pool: &MachineConfigPool, e: &RenderError) -> Vec<Problem> {
    let text = e.describe();
    let prefix = if e.machine_config.is_none() {
        format!("pool {}: ", pool.name())
    } else {
        String::new()
    };
    text.lines()
        .map(|l| Problem {
            kind: Some(e.kind),
            message: format!("{prefix}{l}"),
        })
        .collect()
}

/// A MachineConfig's own checks, as `mco-render validate` prints them: the errors of upstream's
/// validation (`describe`d, one per line) and Ignition's warnings (`<name>: <path>: <message>`).
pub fn check_machine_config(mc: &MachineConfig) -> (Vec<String>, Vec<String>) {
    let errors = match validate_machine_config(mc) {
        Ok(_) => Vec::new(),
        Err(es) => es
            .iter()
            .flat_map(|e| e.describe().lines().map(str::to_string).collect::<Vec<_>>())
            .collect(),
    };
    let mut warnings = Vec::new();
    if let Some(raw) = mc.ignition() {
        if let Ok(p) = mco_ignition::parse::parse_value(raw) {
            for w in p.report.warnings() {
                let path = w
                    .path
                    .as_ref()
                    .map(|p| {
                        p.prefixed(&mco_ignition::JsonPath::parse_dotted("spec.config"))
                            .to_bracketed()
                    })
                    .unwrap_or_default();
                warnings.push(format!("{}: {path}: {}", mc.name(), w.message));
            }
        }
    }
    (errors, warnings)
}

/// What the object under review changes.
enum Change {
    /// The MachineConfigs after the change, and those that changed (both versions: the pools
    /// selecting either are affected).
    Configs {
        after: Set,
        changed: Vec<MachineConfig>,
        /// The MachineConfigs before the change when the stored object given differs from the
        /// view's (a cache behind the API server): the view's cached renders are not used.
        stale: Option<Set>,
    },
    /// A pool replaced.
    Pool {
        new: Box<MachineConfigPool>,
        old: Option<Box<MachineConfigPool>>,
    },
}

fn str_at<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

fn decode<T: serde::de::DeserializeOwned>(v: &Value) -> Result<T, String> {
    serde_json::from_value(v.clone()).map_err(|e| e.to_string())
}

/// Reviews `object` (a MachineConfig, KubeletConfig, ContainerRuntimeConfig,
/// MachineConfigPool or RolloutPolicy as JSON) being created or updated in `cluster`. `old_object` is the
/// stored version on update (the view's version is used when it is absent). Other kinds get
/// no findings.
pub fn review(
    object: &Value,
    operation: Operation,
    old_object: Option<&Value>,
    cluster: &ClusterView,
    opts: &ReviewOptions,
) -> Findings {
    let mut out = Findings::default();
    let kind = str_at(object, "/kind");
    let name = str_at(object, "/metadata/name").to_string();
    let old_object = old_object.filter(|_| operation == Operation::Update);
    let mut lints = Vec::new();
    let change = match kind {
        "MachineConfig" => {
            let mc: MachineConfig = match decode(object) {
                Ok(m) => m,
                Err(e) => {
                    out.error(FindingKind::Invalid, format!("{name}: {e}"));
                    return out;
                }
            };
            let (errors, warnings) = check_machine_config(&mc);
            for e in errors {
                out.error(FindingKind::Invalid, e);
            }
            for w in warnings {
                out.warn(FindingKind::Ignition, w);
            }
            lints = lint::lint_machine_config(&mc);
            let old: Option<MachineConfig> = old_object.and_then(|v| decode(v).ok());
            let in_view = cluster.machine_config(&name).cloned();
            let stale = match (&old, &in_view) {
                (Some(o), v) if Some(o) != v.as_ref() => Some(Set::Replace {
                    name: name.clone(),
                    with: Box::new(o.clone()),
                }),
                _ => None,
            };
            let mut changed = vec![mc.clone()];
            changed.extend(old.clone().or(in_view));
            Change::Configs {
                after: Set::Replace {
                    name: name.clone(),
                    with: Box::new(mc),
                },
                changed,
                stale,
            }
        }
        "KubeletConfig" | "ContainerRuntimeConfig" => {
            let mut m = cluster.manifests.clone();
            m.others.retain(|(_, v)| {
                !(str_at(v, "/kind") == kind && str_at(v, "/metadata/name") == name)
            });
            m.others.push((String::new(), object.clone()));
            let generated = cluster_machine_configs(
                &m,
                &ClusterOptions {
                    controller_version: cluster.render.controller_version.clone(),
                    templates: None,
                    release: cluster.render.release,
                },
            );
            for e in generated
                .errors
                .iter()
                .filter(|e| e.kind == kind && e.name == name)
            {
                let message = format!("{kind} {name}: {}", e.message);
                match e.unmet {
                    None => out.error(FindingKind::Generate, message),
                    Some(unmet) => out.warn(
                        FindingKind::Pending,
                        format!("{message}: admitted: {}", awaits(unmet)),
                    ),
                }
            }
            let after: Vec<MachineConfig> = generated
                .machine_configs
                .into_iter()
                .map(|(_, m)| m)
                .collect();
            let names: BTreeSet<&str> = after
                .iter()
                .map(MachineConfig::name)
                .chain(cluster.machine_configs().map(MachineConfig::name))
                .collect();
            let mut changed = Vec::new();
            for n in names {
                let a = after.iter().find(|m| m.name() == n);
                let b = cluster.machine_config(n);
                if a != b {
                    changed.extend(a.cloned());
                    changed.extend(b.cloned());
                }
            }
            Change::Configs {
                after: Set::Own(after),
                changed,
                stale: None,
            }
        }
        "MachineConfigPool" => {
            let new: MachineConfigPool = match decode(object) {
                Ok(p) => p,
                Err(e) => {
                    out.error(FindingKind::Invalid, format!("pool {name}: {e}"));
                    return out;
                }
            };
            let old = old_object
                .and_then(|v| decode::<MachineConfigPool>(v).ok())
                .or_else(|| {
                    cluster
                        .manifests
                        .pools
                        .iter()
                        .find(|(_, p)| p.name() == name && operation == Operation::Update)
                        .map(|(_, p)| p.clone())
                });
            Change::Pool {
                new: Box::new(new),
                old: old.map(Box::new),
            }
        }
        rollout_policy::KIND => {
            review_rollout_policy(&mut out, object, &name, cluster);
            return out;
        }
        _ => return out,
    };
    let cc = cluster.controller_config();
    match &change {
        Change::Configs {
            after,
            changed,
            stale,
        } => {
            for (i, (_, pool)) in cluster.manifests.pools.iter().enumerate() {
                let Ok(sel) = pool
                    .spec
                    .machine_config_selector
                    .clone()
                    .unwrap_or_default()
                    .compile()
                else {
                    continue;
                };
                if sel.is_everything() || !changed.iter().any(|m| sel.matches(&m.metadata.labels)) {
                    continue;
                }
                let fresh;
                let before = match stale {
                    Some(s) => {
                        fresh =
                            render_input(pool, &s.selected(cluster, pool), &cc, &cluster.render);
                        Some(&fresh)
                    }
                    None => cluster.base(i, &cc),
                };
                let after =
                    render_input(pool, &after.selected(cluster, pool), &cc, &cluster.render);
                judge(&mut out, &name, pool, before, &after, cluster, opts);
            }
        }
        Change::Pool { new, old } => {
            let after = render_input(
                new,
                &selected(new, cluster.machine_configs()),
                &cc,
                &cluster.render,
            );
            // Unpausing rolls out whatever the nodes do not have yet: compare with the config
            // the pool's nodes are on.
            let unpaused = old.as_ref().is_some_and(|o| o.spec.paused) && !new.spec.paused;
            let current = new
                .status
                .as_ref()
                .map(|s| s.configuration.name.as_str())
                .filter(|n| !n.is_empty())
                .and_then(|n| cluster.machine_config(n))
                .map(|mc| {
                    plan::input::rendered_input(mc.name(), &mc.spec)
                        .map_err(|e| vec![Problem::other(e)])
                });
            let before = match (unpaused, current, old) {
                (true, Some(c), _) => Some(c),
                (_, _, Some(o)) => Some(render_input(
                    o,
                    &selected(o, cluster.machine_configs()),
                    &cc,
                    &cluster.render,
                )),
                _ => None,
            };
            match before {
                Some(b) => judge(&mut out, &name, new, Some(&b), &after, cluster, opts),
                None => judge(&mut out, &name, new, None, &after, cluster, opts),
            }
        }
    }
    for l in lints {
        out.warn(FindingKind::Lint(l.lint), l.message);
    }
    out
}

/// A RolloutPolicy: refused when its spec does not check, pending while its pool is absent.
fn review_rollout_policy(out: &mut Findings, object: &Value, name: &str, cluster: &ClusterView) {
    let policy: RolloutPolicy = match decode(object) {
        Ok(p) => p,
        Err(e) => {
            out.error(
                FindingKind::Invalid,
                format!("{} {name}: {e}", rollout_policy::KIND),
            );
            return;
        }
    };
    if let Err(e) = settings(&policy) {
        out.error(FindingKind::Invalid, e.to_string());
        return;
    }
    if !cluster
        .manifests
        .pools
        .iter()
        .any(|(_, p)| p.name() == name)
    {
        out.warn(
            FindingKind::Pending,
            format!(
                "{} {name}: admitted: no MachineConfigPool {name} exists yet; the policy applies to it once it is created",
                rollout_policy::KIND
            ),
        );
    }
}

/// What a resource's MachineConfigs wait for, for its warning.
fn awaits(unmet: Unmet) -> &'static str {
    match unmet {
        Unmet::Pool => "the controller generates its MachineConfigs once a pool its machineConfigPoolSelector matches exists",
        Unmet::BaseConfig => "the controller generates its MachineConfigs once the pool's base MachineConfigs (rendered from the templates) exist",
    }
}

/// Turns one pool's before and after renders into findings.
fn judge(
    out: &mut Findings,
    object: &str,
    pool: &MachineConfigPool,
    before: Option<&Base>,
    after: &Base,
    cluster: &ClusterView,
    opts: &ReviewOptions,
) {
    let renders_today = matches!(before, Some(Ok(_)));
    let known: &[Problem] = match before {
        Some(Err(e)) => e,
        _ => &[],
    };
    let new = match after {
        Err(problems) => {
            // Only what this object breaks: a pool already failing keeps its old errors.
            for p in problems.iter().filter(|p| !known.contains(p)) {
                if p.kind == Some(RenderErrorKind::NoMatch) && !renders_today {
                    out.warn(
                        FindingKind::Pending,
                        format!("{}: {AWAITS_CONFIGS}", p.message),
                    );
                } else {
                    out.error(FindingKind::Invalid, p.message.clone());
                }
            }
            return;
        }
        Ok(n) => n,
    };
    let Some(Ok(old)) = before else {
        return;
    };
    let plan = plan::compute(old, new, cluster.policies.as_ref());
    let report = PlanReport::new(&plan, old, new);
    if let Some(reason) = &report.reason {
        let message = format!("{object}: pool {}: not reconcilable: {reason}", pool.name());
        if has_nodes(pool) {
            out.error(FindingKind::Unreconcilable, message);
        } else {
            out.warn(
                FindingKind::Unreconcilable,
                format!("{message} (admitted: no node is on the pool's config yet, so none has to move)"),
            );
        }
        return;
    }
    if plan.diff.is_empty {
        return;
    }
    let policy = cluster.rollout_policy(pool.name());
    out.warn(
        FindingKind::Disruption,
        disruption_under(pool, &report, opts, policy),
    );
}

/// Why a pool selecting no MachineConfigs yet is admitted.
const AWAITS_CONFIGS: &str = "admitted: the pool renders once MachineConfigs it selects exist (created with it, or generated by the controllers from templates, KubeletConfigs and ContainerRuntimeConfigs)";

/// Whether the pool reports nodes (its status's `machineCount`): only those can fail to move
/// to a new rendered config in place.
fn has_nodes(pool: &MachineConfigPool) -> bool {
    pool.status.as_ref().is_some_and(|s| s.machine_count > 0)
}

/// The one-line disruption summary for a pool.
pub fn disruption(pool: &MachineConfigPool, report: &PlanReport, opts: &ReviewOptions) -> String {
    disruption_under(pool, report, opts, None)
}

/// [`disruption`] for a pool with a RolloutPolicy: the estimate is the policy's schedule
/// (canaries, soak, windows from [`ReviewOptions::now`]); an invalid policy keeps the plain
/// estimate.
pub fn disruption_under(
    pool: &MachineConfigPool,
    report: &PlanReport,
    opts: &ReviewOptions,
    policy: Option<&RolloutPolicy>,
) -> String {
    let count = pool
        .status
        .as_ref()
        .map(|s| u64::try_from(s.machine_count).unwrap_or(0));
    let nodes = match count {
        Some(1) => "1 node".to_string(),
        Some(n) => format!("{n} nodes"),
        None => "its nodes".to_string(),
    };
    let why = |kinds: &[ActionType]| -> String {
        let mut seen: Vec<String> = Vec::new();
        for a in report.actions.iter().filter(|a| kinds.contains(&a.kind)) {
            for t in &a.triggers {
                let s = match t {
                    Trigger::File(p) => p.clone(),
                    Trigger::Unit(u) => u.clone(),
                    Trigger::SshKeys => "SSH keys".to_string(),
                    Trigger::Spec(s) => s.clone(),
                    Trigger::NoChange => continue,
                };
                if !seen.contains(&s) {
                    seen.push(s);
                }
            }
        }
        if seen.is_empty() {
            String::new()
        } else {
            format!(" ({} changed)", seen.join(", "))
        }
    };
    let acts: Vec<String> = report
        .actions
        .iter()
        .filter_map(|a| match a.kind {
            ActionType::Reload => Some(format!("reload {}", a.target.as_deref().unwrap_or(""))),
            ActionType::Restart => Some(format!("restart {}", a.target.as_deref().unwrap_or(""))),
            ActionType::DaemonReload => Some("run systemctl daemon-reload".to_string()),
            ActionType::Special => Some("reload crio.service (registries.conf)".to_string()),
            _ => None,
        })
        .collect();
    let mut line = format!("pool {}: ", pool.name());
    if report.reboot {
        line.push_str(&format!(
            "{nodes} will drain and reboot{}",
            why(&[ActionType::Reboot])
        ));
    } else if report.drain {
        let then = if acts.is_empty() {
            String::new()
        } else {
            format!(", then {}", acts.join(", "))
        };
        line.push_str(&format!(
            "{nodes} will drain{then}{}, no reboot",
            why(&[ActionType::Drain, ActionType::Special])
        ));
    } else if acts.is_empty() {
        line.push_str(&format!(
            "{nodes} take the change in place, no drain, no reboot"
        ));
    } else {
        line.push_str(&format!("{nodes} {}, no drain, no reboot", acts.join(", ")));
    }
    if let Some(e) = &report.drain_error {
        line.push_str(&format!(" (drain check failed: {e})"));
    }
    if report.reboot || report.drain {
        let scheduled = policy
            .zip(count)
            .and_then(|(p, n)| policy_estimate(pool, p, n, opts));
        if let Some(est) =
            scheduled.or_else(|| count.and_then(|n| estimate(pool, n, opts.node_duration)))
        {
            line.push_str("; ");
            line.push_str(&est);
        }
    }
    if pool.spec.paused {
        line.push_str("; the pool is paused: nothing rolls out until it is unpaused");
    }
    line
}

/// The summary of the rollout of a pool's `nodes` under its policy (`None` for no nodes, or
/// when the policy or `maxUnavailable` does not check).
fn policy_estimate(
    pool: &MachineConfigPool,
    policy: &RolloutPolicy,
    nodes: u64,
    opts: &ReviewOptions,
) -> Option<String> {
    if nodes == 0 {
        return None;
    }
    let s = schedule(&ScheduleInput {
        pool,
        policy: Some(policy),
        nodes: PoolNodes::Count(usize::try_from(nodes).ok()?),
        target: "the new rendered config",
        now: opts.now.unwrap_or(Timestamp::UNIX_EPOCH),
        per_node: opts.node_duration,
        windows: opts.now.is_some(),
    })
    .ok()?;
    Some(s.to_string())
}

/// `about 21h at maxUnavailable 1`: nodes taken `maxUnavailable` at a time (scaled as the
/// rollout scales it), each taking `per_node`.
pub fn estimate(pool: &MachineConfigPool, nodes: u64, per_node: Duration) -> Option<String> {
    if nodes == 0 {
        return None;
    }
    let max = max_unavailable(pool, usize::try_from(nodes).ok()?).ok()?;
    let max = u64::try_from(max).ok().filter(|m| *m > 0)?;
    let waves = nodes.div_ceil(max);
    let minutes = (waves as f64) * per_node.as_secs_f64() / 60.0;
    let time = if minutes < 59.5 {
        format!("about {} min", minutes.round().max(1.0) as u64)
    } else {
        format!("about {}h", (minutes / 60.0).round() as u64)
    };
    let at = match &pool.spec.max_unavailable {
        Some(Value::String(s)) => format!("{s} ({max})"),
        _ => max.to_string(),
    };
    Some(format!("{time} at maxUnavailable {at}"))
}

#[cfg(test)]
mod tests;
