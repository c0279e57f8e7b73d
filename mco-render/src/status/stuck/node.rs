//! A node's own findings: NotReady (since its reboot), degraded (and the file or unit its
//! reason names, with the MachineConfig that writes it), its PinnedImageSets not pulled.

use super::{at, Finding, Kind, PoolFacts, Severity, NOT_READY_GRACE};
use crate::api::machine_config_node::conditions::{
    NODE_DEGRADED, PINNED_IMAGE_SETS_DEGRADED, PINNED_IMAGE_SETS_PROGRESSING, REBOOTED_NODE,
};
use crate::api::node::{REASON, STATE, STATE_UNRECONCILABLE};
use crate::api::Node;
use crate::controllers::rollout_policy::rfc3339;
use crate::status::assess::NodePhase;

/// The node NotReady past [`NOT_READY_GRACE`].
pub(super) fn not_ready(f: &PoolFacts<'_>, n: &Node) -> Option<Finding> {
    let c = n
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready" && c.status != "True")?;
    let since = c.last_transition_time.as_deref().and_then(at);
    if since.is_some_and(|s| f.now.duration_since(s) < NOT_READY_GRACE) {
        return None;
    }
    let row = f.rows.iter().find(|r| r.name == n.name());
    let rebooting = row.is_some_and(|r| r.updating)
        && (row.is_some_and(|r| r.phase == NodePhase::Rebooting)
            || f.mcn(n.name())
                .and_then(|s| s.condition(REBOOTED_NODE))
                .is_some_and(|c| c.status == "Unknown"));
    let kubelet = match (c.reason.as_deref(), c.message.as_deref()) {
        (Some(r), Some(m)) if !m.is_empty() => format!(" ({r}: {m})"),
        (Some(r), _) if !r.is_empty() => format!(" ({r})"),
        (None, Some(m)) if !m.is_empty() => format!(" ({m})"),
        _ => String::new(),
    };
    let mut x = f.finding(Severity::Stuck, Kind::NodeNotReady, Some(n.name()));
    x.since = since.map(rfc3339);
    let age = f.for_(since);
    x.summary = format!("NotReady{age}");
    if rebooting {
        x.message = format!(
            "{}: NotReady{age} since its reboot into {}{kubelet}",
            n.name(),
            n.desired_config()
        );
        x.action = "it did not come back from its reboot: look at its console (cloud console or BMC) for boot and Ignition errors; the update goes on once its kubelet reports Ready".into();
    } else {
        x.message = format!("{}: NotReady{age}{kubelet}", n.name());
        x.action = format!(
            "bring its kubelet back (oc adm node-logs {} -u kubelet, or the machine's console); meanwhile it counts against maxUnavailable",
            n.name()
        );
    }
    Some(x)
}

/// What a degraded node's reason names: a file (an absolute path) or a systemd unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Culprit {
    /// A file's path.
    File(String),
    /// A unit's name.
    Unit(String),
}

const UNIT_SUFFIXES: [&str; 8] = [
    ".service", ".socket", ".timer", ".target", ".mount", ".path", ".slice", ".scope",
];

/// Words after which an absolute path is the file an operation failed on (`open /etc/x:`,
/// `mismatch for file "/etc/x"`, `file "/etc/x": ...`).
const FILE_WORDS: [&str; 16] = [
    "file",
    "files",
    "path",
    "directory",
    "open",
    "opening",
    "write",
    "writing",
    "create",
    "creating",
    "remove",
    "removing",
    "rename",
    "renaming",
    "chmod",
    "chown",
];

/// The file or unit a daemon's degraded reason names, if any: an absolute path right after a
/// word naming a file operation (not any path: a command line's arguments are not the
/// culprit), else the first word ending like a systemd unit.
pub fn culprit(reason: &str) -> Option<Culprit> {
    let clean = |w: &str| {
        w.trim_matches(|c: char| {
            matches!(
                c,
                '"' | '\'' | '`' | ':' | ';' | ',' | '(' | ')' | '[' | ']'
            )
        })
        .trim_end_matches('.')
        .to_string()
    };
    let mut unit = None;
    let mut previous = String::new();
    for w in reason.split_whitespace().map(clean) {
        if w.starts_with('/')
            && w.len() > 1
            && FILE_WORDS.contains(&previous.to_lowercase().as_str())
        {
            return Some(Culprit::File(w));
        }
        if unit.is_none()
            && UNIT_SUFFIXES
                .iter()
                .any(|s| w.ends_with(s) && w.len() > s.len())
        {
            unit = Some(Culprit::Unit(w.clone()));
        }
        previous = w;
    }
    unit
}

/// The MachineConfigs among the pool's sources that write `culprit`.
fn written_by(f: &PoolFacts<'_>, culprit: &Culprit) -> Vec<String> {
    let sources: Vec<&str> = f
        .pool
        .spec
        .configuration
        .source
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    f.cluster
        .machine_configs
        .iter()
        .filter(|mc| sources.contains(&mc.name()))
        .filter(|mc| {
            let Some(cfg) = mc.ignition() else {
                return false;
            };
            let (list, key, want) = match culprit {
                Culprit::File(p) => ("/storage/files", "path", p.as_str()),
                Culprit::Unit(u) => ("/systemd/units", "name", u.as_str()),
            };
            let hit = |v: &serde_json::Value| {
                v.pointer(list)
                    .and_then(serde_json::Value::as_array)
                    .is_some_and(|a| {
                        a.iter()
                            .any(|e| e.get(key).and_then(serde_json::Value::as_str) == Some(want))
                    })
            };
            // A unit's drop-in file names its unit's folder.
            hit(cfg)
                || matches!(culprit, Culprit::File(p) if p.starts_with("/etc/systemd/system/") && {
                    let unit = p
                        .trim_start_matches("/etc/systemd/system/")
                        .split('/')
                        .next()
                        .unwrap_or("")
                        .trim_end_matches(".d");
                    cfg.pointer("/systemd/units")
                        .and_then(serde_json::Value::as_array)
                        .is_some_and(|a| {
                            a.iter().any(|e| {
                                e.get("name").and_then(serde_json::Value::as_str) == Some(unit)
                            })
                        })
                })
        })
        .map(|mc| mc.name().to_string())
        .collect()
}

/// The node degraded, and what on.
pub(super) fn degraded(f: &PoolFacts<'_>, n: &Node) -> Option<Finding> {
    if !n.is_degraded() {
        return None;
    }
    let reason = n.annotation(REASON).unwrap_or("");
    let mcn = f.mcn(n.name());
    let since = mcn
        .and_then(|s| s.condition(NODE_DEGRADED))
        .filter(|c| c.is_true())
        .and_then(|c| at(c.last_transition_time()))
        .or_else(|| {
            f.cluster
                .events_about("Node", n.name())
                .iter()
                .filter(|e| e.reason == "NodeDegraded")
                .filter_map(|e| e.last)
                .max()
        });
    let culprit = culprit(reason);
    let writers = culprit
        .as_ref()
        .map(|c| written_by(f, c))
        .unwrap_or_default();
    let what = match &culprit {
        Some(Culprit::File(p)) => format!("file {p}"),
        Some(Culprit::Unit(u)) => format!("unit {u}"),
        None => String::new(),
    };
    let origin = match (what.is_empty(), writers.is_empty()) {
        (true, _) => String::new(),
        (false, true) => format!(" ({what})"),
        (false, false) => format!(" ({what}, from MachineConfig {})", writers.join(", ")),
    };
    let mut x = f.finding(Severity::Stuck, Kind::NodeDegraded, Some(n.name()));
    x.since = since.map(rfc3339);
    x.summary = reason.to_string();
    x.message = format!(
        "{}: degraded on {}{}: {reason}{origin}",
        n.name(),
        n.desired_config(),
        f.for_(since)
    );
    let unreconcilable = n.annotation(STATE) == Some(STATE_UNRECONCILABLE);
    let drift = ["mismatch", "on-disk", "drift"]
        .iter()
        .any(|w| reason.to_lowercase().contains(w));
    x.action = if unreconcilable {
        "the change cannot be applied in place: revert it (or replace the node)".into()
    } else if drift {
        format!(
            "the {} was changed on the node: restore it, or have the daemon accept it (kubectl mco force {}, or touch /run/machine-config-daemon-force on the node)",
            if what.is_empty() { "config" } else { what.as_str() },
            n.name()
        )
    } else if !writers.is_empty() {
        format!(
            "fix or revert the {what} in MachineConfig {}; the daemon retries when the pool's config changes",
            writers.join(", ")
        )
    } else if !what.is_empty() {
        format!(
            "fix the {what} (see the machine-config-daemon's log on {}); the daemon retries when the pool's config changes",
            n.name()
        )
    } else {
        format!(
            "read the machine-config-daemon's log on {} (oc logs -n openshift-machine-config-operator -c machine-config-daemon <its pod>)",
            n.name()
        )
    };
    Some(x)
}

/// The node's PinnedImageSets failing or being pulled.
pub(super) fn pinned_images(f: &PoolFacts<'_>, n: &Node) -> Vec<Finding> {
    let Some(s) = f.mcn(n.name()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let sets =
        |pick: &dyn Fn(&crate::api::machine_config_node::PinnedImageSetGenerations) -> bool| {
            s.pinned_image_sets
                .iter()
                .filter(|g| pick(g))
                .map(|g| g.name.clone())
                .collect::<Vec<_>>()
        };
    if let Some(c) = s
        .condition(PINNED_IMAGE_SETS_DEGRADED)
        .filter(|c| c.is_true())
    {
        let since = at(c.last_transition_time());
        let failing: Vec<String> = s
            .pinned_image_sets
            .iter()
            .filter(|g| g.last_failed_generation.is_some())
            .map(|g| match &g.last_failed_generation_error {
                Some(e) => format!("{}: {e}", g.name),
                None => g.name.clone(),
            })
            .collect();
        let mut x = f.finding(Severity::Stuck, Kind::PinnedImages, Some(n.name()));
        x.since = since.map(rfc3339);
        x.summary = "pinned images not pulled".into();
        x.message = format!(
            "{}: pinned images not pulled{}: {}",
            n.name(),
            f.for_(since),
            if failing.is_empty() {
                c.message().to_string()
            } else {
                failing.join("; ")
            }
        );
        x.action = "check the images (digests, registry, pull secret) and the node's free disk; the daemon retries".into();
        out.push(x);
    } else if let Some(c) = s
        .condition(PINNED_IMAGE_SETS_PROGRESSING)
        .filter(|c| c.is_true())
    {
        let since = at(c.last_transition_time());
        let pending = sets(&|g| {
            g.desired_generation.is_some() && g.current_generation != g.desired_generation
        });
        let mut x = f.finding(Severity::Waiting, Kind::PinnedImages, Some(n.name()));
        x.since = since.map(rfc3339);
        x.summary = "pulling pinned images".into();
        x.message = if pending.is_empty() {
            format!(
                "{}: pulling pinned images{}: {}",
                n.name(),
                f.for_(since),
                c.message()
            )
        } else {
            format!(
                "{}: pulling the images of PinnedImageSet {}{}",
                n.name(),
                pending.join(", "),
                f.for_(since)
            )
        };
        x.action = "nothing: the daemon pins them once pulled".into();
        out.push(x);
    }
    out
}
