//! What the render controller writes for one pool, given the cluster's objects.

use super::pool_status::{pool_condition, RENDER_DEGRADED};
use super::Write;
use crate::api::machine_config::RELEASE_IMAGE_VERSION_ANNOTATION;
use crate::api::pool::PoolConfiguration;
use crate::api::MachineConfigPoolStatus;
use crate::api::{ControllerConfig, MachineConfig, MachineConfigPool};
use crate::gocompat::quote::go_quote;
use crate::plan::input::rendered_input;
use crate::plan::reconcile::{check_configs, is_rendered_config_reconcilable, StorageOverride};
use crate::render::error::RenderErrorKind;
use crate::render::{render_pool, RenderOptions};

/// The writes one render sync intends.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RenderSync {
    /// A rendered MachineConfig to create (none exists under its name yet).
    pub create: Option<MachineConfig>,
    /// The stored rendered MachineConfig the pool already targets, with the labels,
    /// annotations and owner references of the one rendered now laid over its own (a
    /// `release-image-version` stamped on the ControllerConfig after the config was created),
    /// when they differ: upstream applies the rendered config again in that case.
    pub update: Option<MachineConfig>,
    /// The pool's new `spec.configuration`, when it changes.
    pub set_configuration: Option<PoolConfiguration>,
    /// The pool's new status, when the RenderDegraded condition changes.
    pub status: Option<MachineConfigPoolStatus>,
    /// Why the render failed (the RenderDegraded message), or why it could not run.
    pub error: Option<String>,
    /// Whether the rendered config names another OS image than the ControllerConfig's base
    /// image (`os_image_url_override`, by pool); `None` when nothing was rendered.
    pub os_image_url_overridden: Option<bool>,
}

impl RenderSync {
    /// The writes in the order they are carried out: the rendered MachineConfig, the pool's
    /// configuration, its status.
    pub fn writes(&self, pool: &str) -> Vec<Write> {
        let mut out = Vec::new();
        if let Some(mc) = &self.create {
            out.push(Write::CreateMachineConfig(mc.clone()));
        }
        if let Some(mc) = &self.update {
            out.push(Write::UpdateMachineConfig(mc.clone()));
        }
        if let Some(configuration) = &self.set_configuration {
            out.push(Write::SetPoolConfiguration {
                pool: pool.to_string(),
                configuration: configuration.clone(),
            });
        }
        if let Some(status) = &self.status {
            out.push(Write::PatchPoolStatus {
                pool: pool.to_string(),
                status: status.clone(),
            });
        }
        out
    }
}

/// Upstream's message for a render error, followed (on a line of its own when upstream's ends
/// with one) by the MachineConfig and the field at fault as the CLI prints them, which upstream
/// leaves out (`in MachineConfig <name>` when no field is known): `... path not
/// absolute\n99-worker-bad: spec.config.storage.files[0].path: path
/// not absolute`.
fn located(e: &crate::RenderError) -> String {
    let Some(mc) = &e.machine_config else {
        return e.message.clone();
    };
    let sep = if e.message.ends_with('\n') { "" } else { ": " };
    if e.path.is_none() && e.details.is_empty() {
        return format!("{}{sep}in MachineConfig {mc}", e.message);
    }
    format!("{}{sep}{}", e.message, e.describe().replace('\n', "; "))
}

/// `opts` with the release image version the ControllerConfig is annotated with (the
/// operator's, as upstream stamps rendered configs with it); `opts`' own without one.
pub fn release_of(cc: &ControllerConfig, opts: &RenderOptions) -> RenderOptions {
    match cc
        .metadata
        .annotations
        .get(RELEASE_IMAGE_VERSION_ANNOTATION)
    {
        Some(v) if *v != opts.release_image_version => RenderOptions {
            release_image_version: v.clone(),
            ..opts.clone()
        },
        _ => opts.clone(),
    }
}

/// [`release_of`], and the release whose rules apply: the one the ControllerConfig is
/// annotated with, as the controller renders (the operator writes its own release there, so a
/// cluster that upgrades re-renders on the new release's rules). One newer than the newest
/// known is the newest; without one, or one older than known, `opts`' own.
pub fn cluster_release_of(cc: &ControllerConfig, opts: &RenderOptions) -> RenderOptions {
    let mut out = release_of(cc, opts);
    if let Some(r) = cluster_release(cc) {
        out.release = r;
    }
    out
}

/// The release the ControllerConfig's `release-image-version` names
/// ([`crate::release::Release::named`]).
pub fn cluster_release(cc: &ControllerConfig) -> Option<crate::release::Release> {
    cc.metadata
        .annotations
        .get(RELEASE_IMAGE_VERSION_ANNOTATION)
        .and_then(|v| crate::release::Release::named(v))
}

/// Decides the render controller's writes for `pool`. `all` is every MachineConfig in the
/// cluster; `controller` the ControllerConfig, without which nothing is rendered (the sync is
/// retried). `now` stamps changed conditions. No storage section is exempt from the
/// reconcilability check ([`sync_pool_with`] takes the cluster's overrides).
pub fn sync_pool(
    pool: &MachineConfigPool,
    all: &[MachineConfig],
    controller: Option<&ControllerConfig>,
    opts: &RenderOptions,
    now: &str,
) -> RenderSync {
    sync_pool_with(pool, all, controller, opts, &[], now)
}

/// [`sync_pool`] with the storage sections the cluster's `irreconcilableValidationOverrides`
/// exempt from the check of the move from the pool's current rendered config
/// ([`super::validation_overrides::validation_overrides`]).
pub fn sync_pool_with(
    pool: &MachineConfigPool,
    all: &[MachineConfig],
    controller: Option<&ControllerConfig>,
    opts: &RenderOptions,
    overrides: &[StorageOverride],
    now: &str,
) -> RenderSync {
    let mut out = RenderSync::default();
    // `{}` selects everything: upstream only emits a warning event.
    if pool
        .spec
        .machine_config_selector
        .as_ref()
        .is_some_and(|s| s.is_empty())
    {
        return out;
    }
    let Some(cc) = controller else {
        out.error = Some("ControllerConfig machine-config-controller not found".into());
        return out;
    };
    let result = if pool.spec.machine_config_selector.is_none() {
        // An absent selector selects nothing.
        Err("no MachineConfigs found matching selector ".to_string())
    } else {
        match render_pool(pool, all, &cc.spec, &cluster_release_of(cc, opts)) {
            Err(f) => match f.first() {
                Some(e) if e.kind == RenderErrorKind::NoMatch => Err(e.message.clone()),
                Some(e) if e.kind == RenderErrorKind::InvalidSelector => {
                    out.error = Some(e.message.clone());
                    return out;
                }
                Some(e) => Err(format!(
                    "could not generate rendered MachineConfig: {}",
                    located(e)
                )),
                None => Err(format!("could not generate rendered MachineConfig: {f}")),
            },
            Ok(r) => match check_transition(pool, all, &r.machine_config, &r.source, overrides) {
                Err(e) => Err(format!("could not generate rendered MachineConfig: {e}")),
                Ok(()) => Ok(r),
            },
        }
    };
    let mut status = pool.status_or_default();
    match result {
        Err(msg) => {
            let message = format!(
                "Failed to render configuration for pool {}: {msg}",
                pool.name()
            );
            let before = status.clone();
            status.set_condition(pool_condition(
                RENDER_DEGRADED,
                true,
                String::new(),
                message.clone(),
                now,
            ));
            if status != before {
                out.status = Some(status);
            }
            out.error = Some(message);
        }
        Ok(r) => {
            out.os_image_url_overridden =
                Some(r.machine_config.spec.os_image_url != cc.spec.base_os_container_image);
            match all.iter().find(|m| m.name() == r.machine_config.name()) {
                None => out.create = Some(r.machine_config.clone()),
                Some(stored) if pool.spec.configuration.name == stored.name() => {
                    out.update = with_metadata_of(stored, &r.machine_config);
                }
                Some(_) => {}
            }
            if r.configuration != pool.spec.configuration {
                out.set_configuration = Some(r.configuration);
            }
            let already_false = status
                .condition(RENDER_DEGRADED)
                .is_some_and(|c| c.status == "False");
            if !already_false {
                status.set_condition(pool_condition(
                    RENDER_DEGRADED,
                    false,
                    String::new(),
                    String::new(),
                    now,
                ));
                out.status = Some(status);
            }
        }
    }
    out
}

/// `stored` with `rendered`'s labels and annotations set and its owner references added
/// (upstream's `EnsureObjectMeta`: keys and references `stored` has beyond them stay), or
/// `None` when nothing changes. The spec is the same: the name hashes it.
fn with_metadata_of(stored: &MachineConfig, rendered: &MachineConfig) -> Option<MachineConfig> {
    let mut out = stored.clone();
    let meta = &mut out.metadata;
    for (k, v) in &rendered.metadata.labels {
        meta.labels.insert(k.clone(), v.clone());
    }
    for (k, v) in &rendered.metadata.annotations {
        meta.annotations.insert(k.clone(), v.clone());
    }
    for r in &rendered.metadata.owner_references {
        if !meta
            .owner_references
            .iter()
            .any(|o| o.uid == r.uid && o.kind == r.kind && o.name == r.name)
        {
            meta.owner_references.push(r.clone());
        }
    }
    (out != *stored).then_some(out)
}

/// Refuses a move from the pool's current rendered config to `generated` that cannot be
/// applied in place (the storage sections in `overrides` exempt), naming the source
/// MachineConfig responsible when one alone explains it. The message is what follows
/// `could not generate rendered MachineConfig: ` in the pool's RenderDegraded condition.
pub fn check_transition(
    pool: &MachineConfigPool,
    all: &[MachineConfig],
    generated: &MachineConfig,
    source: &[String],
    overrides: &[StorageOverride],
) -> Result<(), String> {
    let current_name = &pool.spec.configuration.name;
    if current_name.is_empty() || current_name == generated.name() {
        return Ok(());
    }
    // The current rendered config was deleted: nothing to check against.
    let Some(current) = all.iter().find(|m| m.name() == current_name) else {
        return Ok(());
    };
    let old = rendered_input(current.name(), &current.spec).map_err(|e| {
        format!(
            "parsing old Ignition config from machineconfig {} failed: {e}",
            go_quote(current_name)
        )
    })?;
    let new = rendered_input(generated.name(), &generated.spec).map_err(|e| {
        format!(
            "parsing new Ignition config from machineconfig {} failed: {e}",
            go_quote(generated.name())
        )
    })?;
    let Err(full) = is_rendered_config_reconcilable(&old, &new, overrides) else {
        return Ok(());
    };
    let full_msg = full.to_string();
    let mut names: Vec<&String> = source.iter().collect();
    names.sort();
    for name in names {
        let Some(mc) = all.iter().find(|m| m.name() == name) else {
            continue;
        };
        let Ok(single) = rendered_input(mc.name(), &mc.spec) else {
            continue;
        };
        if let Err(reason) = check_configs(&old, &single, overrides) {
            let reason = reason.to_string();
            if full_msg.contains(&reason) {
                return Err(format!(
                    "reconciliation failed between current config {} and base config {}: {reason}",
                    go_quote(current_name),
                    go_quote(name)
                ));
            }
        }
    }
    Err(format!(
        "render reconciliation error: {full_msg}; component errors: {full_msg}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::machine_config::ROLE_LABEL;
    use crate::api::LabelSelector;
    use serde_json::json;

    fn mc(name: &str, config: serde_json::Value) -> MachineConfig {
        let mut m = MachineConfig::default();
        m.metadata.name = name.into();
        m.metadata.labels.insert(ROLE_LABEL.into(), "worker".into());
        m.spec.config = Some(config);
        m
    }

    fn pool() -> MachineConfigPool {
        let mut p = MachineConfigPool::default();
        p.metadata.name = "worker".into();
        let mut s = LabelSelector::default();
        s.match_labels.insert(ROLE_LABEL.into(), "worker".into());
        p.spec.machine_config_selector = Some(s);
        p
    }

    fn cc() -> ControllerConfig {
        let mut c = ControllerConfig::default();
        c.spec.base_os_container_image = "quay.io/os@sha256:1".into();
        c
    }

    const V: &str = "3.4.0";

    #[test]
    fn first_render_creates_and_targets() {
        let all = vec![mc("00-worker", json!({"ignition": {"version": V}}))];
        let s = sync_pool(&pool(), &all, Some(&cc()), &RenderOptions::default(), "T");
        let created = s.create.expect("create");
        assert!(created.name().starts_with("rendered-worker-"));
        assert_eq!(created.metadata.owner_references[0].name, "worker");
        let conf = s.set_configuration.expect("configuration");
        assert_eq!(conf.name, created.name());
        assert_eq!(conf.source[0].name, "00-worker");
        let st = s.status.expect("status");
        assert_eq!(st.condition(RENDER_DEGRADED).unwrap().status, "False");
        assert!(s.error.is_none());

        // Second pass with everything in place: no writes.
        let mut p = pool();
        p.spec.configuration = conf;
        p.status = Some(st);
        let mut all2 = all.clone();
        all2.push(created);
        let s2 = sync_pool(&p, &all2, Some(&cc()), &RenderOptions::default(), "T2");
        assert_eq!(
            s2,
            RenderSync {
                os_image_url_overridden: Some(false),
                ..RenderSync::default()
            }
        );
    }

    #[test]
    fn an_os_image_a_machine_config_names_is_an_override() {
        let mut all = vec![mc("00-worker", json!({"ignition": {"version": V}}))];
        let s = sync_pool(&pool(), &all, Some(&cc()), &RenderOptions::default(), "T");
        assert_eq!(s.os_image_url_overridden, Some(false));
        let mut custom = mc("99-worker-os", json!({"ignition": {"version": V}}));
        custom.spec.os_image_url = "quay.io/custom/os@sha256:2".into();
        all.push(custom);
        let s = sync_pool(&pool(), &all, Some(&cc()), &RenderOptions::default(), "T");
        assert_eq!(s.os_image_url_overridden, Some(true));
        assert_eq!(
            s.create.unwrap().spec.os_image_url,
            "quay.io/custom/os@sha256:2"
        );
        // Nothing rendered: nothing said.
        let s = sync_pool(&pool(), &all, None, &RenderOptions::default(), "T");
        assert_eq!(s.os_image_url_overridden, None);
    }

    #[test]
    fn the_controller_configs_release_version_is_stamped() {
        let all = vec![mc("00-worker", json!({"ignition": {"version": V}}))];
        let opts = RenderOptions {
            release_image_version: "from-the-flag".into(),
            ..RenderOptions::default()
        };
        let release = |s: &RenderSync| {
            s.create
                .as_ref()
                .and_then(|m| m.metadata.annotations.get(RELEASE_IMAGE_VERSION_ANNOTATION))
                .cloned()
        };
        let plain = sync_pool(&pool(), &all, Some(&cc()), &opts, "T");
        assert_eq!(release(&plain).as_deref(), Some("from-the-flag"));
        let mut stamped = cc();
        stamped
            .metadata
            .annotations
            .insert(RELEASE_IMAGE_VERSION_ANNOTATION.into(), "4.99.0".into());
        let s = sync_pool(&pool(), &all, Some(&stamped), &opts, "T");
        assert_eq!(release(&s).as_deref(), Some("4.99.0"));
        // The name hashes the spec alone.
        assert_eq!(
            s.create.map(|m| m.metadata.name),
            plain.create.map(|m| m.metadata.name)
        );
    }

    #[test]
    fn a_release_version_stamped_later_is_laid_over_the_stored_config() {
        let all = vec![mc("00-worker", json!({"ignition": {"version": V}}))];
        let opts = RenderOptions::default();
        // Rendered before the operator stamped the ControllerConfig: no release version.
        let first = sync_pool(&pool(), &all, Some(&cc()), &opts, "T");
        let Some(mut stored) = first.create.clone() else {
            panic!("not rendered: {first:?}");
        };
        stored.metadata.resource_version = Some("17".into());
        stored
            .metadata
            .annotations
            .insert("team".into(), "infra".into());
        let mut p = pool();
        p.spec.configuration = first.set_configuration.clone().unwrap_or_default();
        let mut all = all.clone();
        all.push(stored.clone());
        let unchanged = sync_pool(&p, &all, Some(&cc()), &opts, "T");
        assert_eq!(unchanged.update, None, "nothing new to lay over");
        let mut stamped = cc();
        stamped
            .metadata
            .annotations
            .insert(RELEASE_IMAGE_VERSION_ANNOTATION.into(), "4.99.0".into());
        let s = sync_pool(&p, &all, Some(&stamped), &opts, "T");
        assert_eq!(s.create, None);
        let Some(updated) = s.update.clone() else {
            panic!("the stored config is not stamped: {s:?}");
        };
        assert_eq!(updated.name(), stored.name());
        assert_eq!(
            updated.metadata.annotations[RELEASE_IMAGE_VERSION_ANNOTATION],
            "4.99.0"
        );
        assert_eq!(
            updated.metadata.annotations["team"], "infra",
            "others' keys stay"
        );
        assert_eq!(updated.metadata.resource_version.as_deref(), Some("17"));
        assert_eq!(updated.spec, stored.spec);
        assert!(matches!(
            s.writes("worker").first(),
            Some(Write::UpdateMachineConfig(_))
        ));
        // A pool that targets another config leaves the stored one alone, as upstream.
        let mut elsewhere = p.clone();
        elsewhere.spec.configuration.name = "rendered-worker-other".into();
        let s = sync_pool(&elsewhere, &all, Some(&stamped), &opts, "T");
        assert_eq!(s.update, None);
    }

    #[test]
    fn failures_set_render_degraded() {
        let s = sync_pool(&pool(), &[], Some(&cc()), &RenderOptions::default(), "T");
        assert_eq!(
            s.error.as_deref(),
            Some("Failed to render configuration for pool worker: no MachineConfigs found matching selector machineconfiguration.openshift.io/role=worker")
        );
        assert!(s.status.unwrap().is_true(RENDER_DEGRADED));
        let bad = vec![mc("00-worker", json!({"ignition": {"version": "9.9.9"}}))];
        let s = sync_pool(&pool(), &bad, Some(&cc()), &RenderOptions::default(), "T");
        let error = s.error.unwrap();
        assert!(error.starts_with(
            "Failed to render configuration for pool worker: could not generate rendered MachineConfig: "
        ));
        assert!(
            error.ends_with(": in MachineConfig 00-worker"),
            "names the MachineConfig: {error}"
        );
        let relative = vec![mc(
            "99-worker-bad",
            json!({"ignition": {"version": "3.4.0"}, "storage": {"files": [{"path": "etc/x"}]}}),
        )];
        let s = sync_pool(
            &pool(),
            &relative,
            Some(&cc()),
            &RenderOptions::default(),
            "T",
        );
        let error = s.error.unwrap();
        assert!(
            error
                .ends_with("\n99-worker-bad: spec.config.storage.files[0].path: path not absolute"),
            "{error}"
        );
        assert!(s.create.is_none() && s.set_configuration.is_none());
    }

    #[test]
    fn empty_selector_and_missing_controller_config_do_nothing() {
        let mut p = pool();
        p.spec.machine_config_selector = Some(LabelSelector::default());
        assert_eq!(
            sync_pool(&p, &[], Some(&cc()), &RenderOptions::default(), "T"),
            RenderSync::default()
        );
        let s = sync_pool(&pool(), &[], None, &RenderOptions::default(), "T");
        assert!(s.status.is_none() && s.error.is_some());
    }

    #[test]
    fn unreconcilable_change_names_the_source() {
        let base = mc("00-worker", json!({"ignition": {"version": V}}));
        let all = vec![base.clone()];
        let first = sync_pool(&pool(), &all, Some(&cc()), &RenderOptions::default(), "T");
        let rendered = first.create.unwrap();
        let mut p = pool();
        p.spec.configuration = first.set_configuration.unwrap();
        let dirs = mc(
            "99-worker-dir",
            json!({"ignition": {"version": V}, "storage": {"directories": [{"path": "/var/x"}]}}),
        );
        let all = vec![base, dirs, rendered.clone()];
        let s = sync_pool(&p, &all, Some(&cc()), &RenderOptions::default(), "T");
        assert_eq!(
            s.error.unwrap(),
            format!("Failed to render configuration for pool worker: could not generate rendered MachineConfig: reconciliation failed between current config {:?} and base config \"99-worker-dir\": ignition directories section contains changes", rendered.name())
        );
        assert!(s.create.is_none() && s.set_configuration.is_none());
    }

    #[test]
    fn a_storage_override_lets_a_disk_change_render() {
        let base = mc("00-worker", json!({"ignition": {"version": V}}));
        let first = sync_pool(
            &pool(),
            std::slice::from_ref(&base),
            Some(&cc()),
            &RenderOptions::default(),
            "T",
        );
        let rendered = first.create.unwrap();
        let mut p = pool();
        p.spec.configuration = first.set_configuration.unwrap();
        let disk = mc(
            "99-worker-disk",
            json!({"ignition": {"version": V}, "storage": {"disks": [{"device": "/dev/vdb", "wipeTable": true}]}}),
        );
        let all = vec![base, disk, rendered.clone()];
        let refused = sync_pool(&p, &all, Some(&cc()), &RenderOptions::default(), "T");
        assert!(refused
            .error
            .unwrap()
            .ends_with("base config \"99-worker-disk\": ignition disks section contains changes"));
        let other = sync_pool_with(
            &p,
            &all,
            Some(&cc()),
            &RenderOptions::default(),
            &[StorageOverride::Raid, StorageOverride::FileSystems],
            "T",
        );
        assert!(other.error.is_some());
        let s = sync_pool_with(
            &p,
            &all,
            Some(&cc()),
            &RenderOptions::default(),
            &[StorageOverride::Disks],
            "T",
        );
        assert_eq!(s.error, None);
        let created = s.create.expect("the new rendered config");
        assert_ne!(created.name(), rendered.name());
        assert_eq!(s.set_configuration.unwrap().name, created.name());
    }
}

#[cfg(test)]
mod release_tests {
    use super::*;
    use crate::release::Release;

    #[test]
    fn the_controller_renders_as_the_release_its_controller_config_names() {
        let cc = |v: Option<&str>| {
            let mut c = ControllerConfig::default();
            if let Some(v) = v {
                c.metadata
                    .annotations
                    .insert(RELEASE_IMAGE_VERSION_ANNOTATION.into(), v.into());
            }
            c
        };
        let opts = RenderOptions::default();
        let at = |v| cluster_release_of(&cc(v), &opts);
        assert_eq!(
            at(Some("4.16.0-0.nightly-2024-08-01-082745"))
                .release
                .minor(),
            16
        );
        assert_eq!(at(Some("4.16.3")).release_image_version, "4.16.3");
        assert_eq!(at(Some("4.99.0")).release, Release::NEWEST);
        assert_eq!(at(Some("4.10.0")).release, opts.release);
        assert_eq!(at(None).release, opts.release);
    }
}
