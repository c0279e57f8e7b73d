//! The template controller in the cluster: keeps each role's base MachineConfigs
//! (`00-<role>`, `01-<role>-container-runtime`, `01-<role>-kubelet`) equal to what
//! `mco_render::controllers::templates` renders from the ControllerConfig and a folder of templates, owned
//! by the ControllerConfig.

use super::generators::{Caches, ConfigKind};
use super::pool_sync::CONTROLLER_CONFIG_NAME;
use super::resources::CLUSTER;
use super::writes::{ensure, WriteError, Written};
use crate::objects::{self, Stored};
use kube::{Api, Client};
use mco_render::api::value_at::str_at;
use mco_render::api::{ControllerConfig, MachineConfig};
use mco_render::controllers::templates::{
    compact_json, generate_template_machine_configs, TemplateOptions, TemplateTree,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The key of a pull secret's Docker config.
const DOCKER_CONFIG_KEY: &str = ".dockerconfigjson";

/// Reads every file under `dir` into a tree (paths relative to `dir`).
pub fn read_tree(dir: &Path) -> std::io::Result<TemplateTree> {
    fn walk(base: &Path, dir: &Path, tree: &mut TemplateTree) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let p = entry?.path();
            if p.is_dir() {
                walk(base, &p, tree)?;
            } else {
                let rel = p.strip_prefix(base).unwrap_or(&p);
                let parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                tree.insert(&parts.join("/"), std::fs::read(&p)?);
            }
        }
        Ok(())
    }
    let mut tree = TemplateTree::new();
    walk(dir, dir, &mut tree)?;
    Ok(tree)
}

/// The template controller's handle on the cluster.
pub struct Templates {
    tree: TemplateTree,
    mcs: Api<Stored<MachineConfig>>,
    controller_version: String,
}

impl Templates {
    /// A handle rendering `tree`, stamping `controller_version`.
    pub fn new(client: Client, tree: TemplateTree, controller_version: &str) -> Self {
        Templates {
            tree,
            mcs: objects::api::<MachineConfig>(&client),
            controller_version: controller_version.to_string(),
        }
    }

    /// The pull secret the ControllerConfig names, compact, from the caches' watch of it;
    /// empty when it names none or the Secret does not exist.
    async fn pull_secret(caches: &Caches, cc: &ControllerConfig) -> String {
        let secret = cc.spec.extra.get("pullSecret").unwrap_or(&Value::Null);
        let name = str_at(secret, "/name");
        let ns = str_at(secret, "/namespace");
        if name.is_empty() || ns.is_empty() {
            return String::new();
        }
        match caches.secret(ns, name).await {
            Some(s) => s
                .data
                .and_then(|d| d.get(DOCKER_CONFIG_KEY).cloned())
                .map(|b| compact_json(&String::from_utf8_lossy(&b.0)))
                .unwrap_or_default(),
            None => {
                tracing::warn!("pull secret {ns}/{name}: not found");
                String::new()
            }
        }
    }

    /// One pass, read from `caches`: renders the templates with the ControllerConfig and
    /// writes the MachineConfigs that differ from those in `mcs` (by name), which takes the
    /// writes. Without a ControllerConfig there is nothing to render.
    pub async fn sync(
        &self,
        caches: &Caches,
        mcs: &mut BTreeMap<String, MachineConfig>,
    ) -> Result<bool, WriteError> {
        let Some(cc) = caches.controller_config(CONTROLLER_CONFIG_NAME) else {
            return Ok(true);
        };
        let profile = caches
            .config_object(ConfigKind::ApiServer, CLUSTER)
            .and_then(|a| a.pointer("/spec/tlsSecurityProfile").cloned())
            .filter(|p| !p.is_null());
        let (tls_min_version, tls_cipher_suites) =
            mco_render::controllers::generate::tls_profile::security_profile_ciphers(
                profile.as_ref(),
            );
        let opts = TemplateOptions {
            controller_version: self.controller_version.clone(),
            pull_secret: Self::pull_secret(caches, &cc).await,
            tls_min_version,
            tls_cipher_suites,
        };
        let wanted = match generate_template_machine_configs(&self.tree, &cc, &opts) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!("templates: {e}");
                return Ok(true);
            }
        };
        let mut settled = true;
        for mc in wanted {
            match ensure(&self.mcs, mcs.get(mc.name()), &mc).await? {
                Written::Conflict => {
                    settled = false;
                    continue;
                }
                Written::Unchanged => continue,
                Written::Created => tracing::info!("created {}", mc.name()),
                Written::Updated => tracing::info!("updated {}", mc.name()),
            }
            mcs.insert(mc.name().to_string(), mc);
        }
        Ok(settled)
    }
}
