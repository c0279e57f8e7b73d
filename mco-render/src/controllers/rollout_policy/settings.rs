//! A RolloutPolicy's spec checked and typed: durations in seconds, selectors compiled, windows
//! in their time zones. Every error names the policy and the field path.

use super::window::{parse_windows, Windows};
use crate::api::rollout_policy::{CanarySpec, RolloutPolicy};
use crate::api::selector::CompiledSelector;
use crate::gocompat::duration::parse_duration;
use jiff::Timestamp;
use serde_json::Value;

/// The health gate's timeout when the policy sets none.
pub const DEFAULT_GATE_TIMEOUT_SECS: i64 = 30 * 60;

/// Why a RolloutPolicy cannot be used: the policy, the field path and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("RolloutPolicy {policy}: {path}: {message}")]
pub struct PolicyError {
    /// The policy's name.
    pub policy: String,
    /// The JSON path of the field (`spec.canary.soak`).
    pub path: String,
    /// What is wrong with it.
    pub message: String,
}

/// Which nodes are canaries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CanaryCount {
    /// The first N nodes in rollout order.
    Nodes(usize),
    /// The first P percent of the pool (rounded up, at least one node).
    Percent(u32),
    /// The nodes matching a selector.
    Selector(CompiledSelector),
}

/// The canary settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Canary {
    /// Which nodes.
    pub count: CanaryCount,
    /// How long every canary must be healthy before the others start, in seconds.
    pub soak_secs: i64,
    /// The soak as written (`30m`).
    pub soak_text: String,
}

/// The health gate settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gate {
    /// How long after being targeted a node has to become healthy, in seconds.
    pub timeout_secs: i64,
    /// The timeout as written (`10m`).
    pub timeout_text: String,
    /// Pods on the node that must be Ready again.
    pub pods: Option<CompiledSelector>,
}

/// A RolloutPolicy's spec, checked.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Canaries, if any.
    pub canary: Option<Canary>,
    /// The health gate, if the policy sets one (without it a node is healthy when Ready and
    /// Done, and only a degraded node stops the rollout).
    pub gate: Option<Gate>,
    /// The maintenance windows (empty: always open).
    pub windows: Windows,
    /// Roll back automatically when a node fails.
    pub auto_rollback: bool,
    /// Roll back now.
    pub rollback: bool,
    /// Pauses that began at or before this instant are resumed.
    pub resumed_at: Option<Timestamp>,
}

impl Canary {
    /// How many canaries a pool of `total` nodes has when counted (`None` for a selector).
    pub fn count_of(&self, total: usize) -> Option<usize> {
        match &self.count {
            CanaryCount::Nodes(n) => Some((*n).min(total)),
            CanaryCount::Percent(p) => {
                let n = (total * (*p as usize)).div_ceil(100);
                Some(n.max(usize::from(total > 0 && *p > 0)).min(total))
            }
            CanaryCount::Selector(_) => None,
        }
    }
}

fn seconds(policy: &str, path: &str, value: &str) -> Result<i64, PolicyError> {
    let err = |message: String| PolicyError {
        policy: policy.into(),
        path: path.into(),
        message,
    };
    let ns = parse_duration(value).map_err(|e| err(e.to_string()))?;
    if ns < 0 {
        return Err(err(format!("{value:?} is negative")));
    }
    Ok(ns / 1_000_000_000)
}

fn canary(policy: &str, spec: &CanarySpec) -> Result<Canary, PolicyError> {
    let err = |path: &str, message: String| PolicyError {
        policy: policy.into(),
        path: path.into(),
        message,
    };
    let soak_secs = match &spec.soak {
        Some(s) => seconds(policy, "spec.canary.soak", s)?,
        None => 0,
    };
    let count = match (&spec.nodes, &spec.selector) {
        (Some(_), Some(_)) => {
            return Err(err(
                "spec.canary",
                "set either nodes or selector, not both".into(),
            ))
        }
        (None, Some(sel)) => CanaryCount::Selector(
            sel.compile()
                .map_err(|e| err("spec.canary.selector", e.to_string()))?,
        ),
        (None, None) | (Some(Value::Null), None) => CanaryCount::Nodes(1),
        (Some(Value::Number(n)), None) => match n.as_u64() {
            Some(n) if n >= 1 => CanaryCount::Nodes(usize::try_from(n).unwrap_or(usize::MAX)),
            _ => {
                return Err(err(
                    "spec.canary.nodes",
                    format!("{n} is not a whole number of nodes of at least 1"),
                ))
            }
        },
        (Some(Value::String(s)), None) => {
            let pct = s
                .strip_suffix('%')
                .and_then(|p| p.parse::<u32>().ok())
                .filter(|p| (1..=100).contains(p));
            match pct {
                Some(p) => CanaryCount::Percent(p),
                None => {
                    return Err(err(
                        "spec.canary.nodes",
                        format!("{s:?} is not a percentage from 1% to 100%"),
                    ))
                }
            }
        }
        (Some(other), None) => {
            return Err(err(
                "spec.canary.nodes",
                format!("{other} is neither a number of nodes nor a percentage"),
            ))
        }
    };
    Ok(Canary {
        count,
        soak_secs,
        soak_text: spec.soak.clone().unwrap_or_else(|| "0s".into()),
    })
}

/// Checks a policy's spec.
pub fn settings(policy: &RolloutPolicy) -> Result<Settings, PolicyError> {
    let name = policy.name();
    let spec = &policy.spec;
    let canary = spec.canary.as_ref().map(|c| canary(name, c)).transpose()?;
    let gate = match &spec.health_gate {
        None => None,
        Some(g) => Some(Gate {
            timeout_secs: match &g.timeout {
                Some(t) => seconds(name, "spec.healthGate.timeout", t)?,
                None => DEFAULT_GATE_TIMEOUT_SECS,
            },
            timeout_text: g.timeout.clone().unwrap_or_else(|| "30m".into()),
            pods: g
                .pods
                .as_ref()
                .map(|s| {
                    s.compile().map_err(|e| PolicyError {
                        policy: name.into(),
                        path: "spec.healthGate.pods".into(),
                        message: e.to_string(),
                    })
                })
                .transpose()?,
        }),
    };
    let windows =
        parse_windows(&spec.maintenance_windows).map_err(|(path, message)| PolicyError {
            policy: name.into(),
            path,
            message,
        })?;
    let resumed_at = spec
        .resumed_at
        .as_deref()
        .map(|t| {
            t.parse::<Timestamp>().map_err(|e| PolicyError {
                policy: name.into(),
                path: "spec.resumedAt".into(),
                message: format!("{t:?} is not an RFC 3339 time: {e}"),
            })
        })
        .transpose()?;
    Ok(Settings {
        canary,
        gate,
        windows,
        auto_rollback: spec.auto_rollback,
        rollback: spec.rollback,
        resumed_at,
    })
}
