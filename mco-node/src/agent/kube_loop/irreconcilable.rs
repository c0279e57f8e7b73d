//! `status.irreconcilableChanges` on the node's MachineConfigNode: once the node is done on a
//! config, the storage sections of that config that differ from the config the node was
//! provisioned with (saved by the machine-config-server in
//! `/etc/mcs-machine-config-content.json`), as
//! [`mco_render::plan::irreconcilable_report`] computes them. Best effort, as upstream's
//! daemon: a node without the file (not provisioned by the server), an absent
//! MachineConfigNode or a failed write is logged and the update goes on.

use super::{convert, Agent, AgentError};
use crate::host::Host;
use kube::api::{Patch, PatchParams};
use mco_render::api::machine_config_node::IrreconcilableChangeDiff;
use mco_render::api::MachineConfig;
use mco_render::plan::input::rendered_input;
use mco_render::plan::irreconcilable_report::irreconcilable_changes;
use mco_render::serve::served::MACHINE_CONFIG_CONTENT_PATH;
use serde_json::json;

impl<H: Host> Agent<H> {
    /// Reports the irreconcilable differences of `current` (the config the node is now done
    /// on) on the MachineConfigNode; logs why it could not.
    pub(super) async fn report_irreconcilable(&mut self, current: &str) {
        if self.mcn_absent {
            return;
        }
        if let Err(e) = self.write_irreconcilable(current).await {
            tracing::warn!(node = %self.opts.node_name, "irreconcilable changes not reported: {e}");
        }
    }

    async fn write_irreconcilable(&mut self, current: &str) -> Result<(), AgentError> {
        let Some(base) = self.install_time_config()? else {
            tracing::debug!(
                node = %self.opts.node_name,
                "no {MACHINE_CONFIG_CONTENT_PATH}: irreconcilable changes not reported"
            );
            return Ok(());
        };
        let Some(target) = self.fetch(current).await? else {
            return Ok(());
        };
        let changes = irreconcilable_changes(&base, &target.input.config);
        let name = self.opts.node_name.clone();
        let Some(stored) = self.mcns.get_opt(&name).await? else {
            return Ok(());
        };
        let before: Vec<IrreconcilableChangeDiff> =
            match stored.data.pointer("/status/irreconcilableChanges") {
                Some(v) if !v.is_null() => convert(&format!("MachineConfigNode {name}"), v)?,
                _ => Vec::new(),
            };
        if before == changes {
            return Ok(());
        }
        let value = if changes.is_empty() {
            serde_json::Value::Null
        } else {
            json!(changes)
        };
        self.mcns
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"status": {"irreconcilableChanges": value}})),
            )
            .await?;
        Ok(())
    }

    /// The Ignition config the node was provisioned with, parsed; `None` without the file.
    fn install_time_config(&self) -> Result<Option<mco_ignition::model::Config>, AgentError> {
        let path = self.root.resolve(MACHINE_CONFIG_CONTENT_PATH)?;
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(AgentError::Decode {
                    what: MACHINE_CONFIG_CONTENT_PATH.into(),
                    message: e.to_string(),
                })
            }
        };
        let decode = |message: String| AgentError::Decode {
            what: MACHINE_CONFIG_CONTENT_PATH.into(),
            message,
        };
        let mc: MachineConfig = serde_json::from_str(&text).map_err(|e| decode(e.to_string()))?;
        let input = rendered_input(mc.name(), &mc.spec).map_err(decode)?;
        Ok(Some(input.config))
    }
}
