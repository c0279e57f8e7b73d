//! A RolloutPolicy's findings: invalid, paused on a failure, rolling back or rolled back,
//! waiting for a window, its canaries updating or soaking.

use super::{at, Finding, Kind, PoolFacts, Severity};
use crate::api::rollout_policy::Phase;
use crate::controllers::rollout_policy::{rfc3339, settings};
use crate::status::short_duration;
use jiff::{SignedDuration, Timestamp};

/// The findings of the pool's RolloutPolicy, if it has one.
pub(super) fn findings(f: &PoolFacts<'_>) -> Vec<Finding> {
    let Some(p) = f.policy else {
        return Vec::new();
    };
    let name = p.name();
    let s = match settings(p) {
        Ok(s) => s,
        Err(e) => {
            let mut x = f.finding(Severity::Stuck, Kind::PolicyInvalid, None);
            x.summary = "RolloutPolicy invalid".into();
            x.message = e.to_string();
            x.action = format!("fix that field of RolloutPolicy {name}");
            return vec![x];
        }
    };
    let st = p.status_or_default();
    let mut out = Vec::new();
    let patch = |spec: &str| {
        format!("oc patch rolloutpolicy/{name} --type merge -p '{{\"spec\":{{{spec}}}}}'")
    };
    let rollback = st
        .rollback
        .as_ref()
        .filter(|_| matches!(st.phase, Phase::RollingBack | Phase::RolledBack));
    // A pause recorded for an older config is over (a newer config ends it).
    let pause = st.pause.as_ref().filter(|p| p.config == f.target);
    if let Some(r) = rollback {
        let since = at(&r.since);
        let back = st.phase == Phase::RolledBack;
        let how = if r.automatic {
            "automatic"
        } else {
            "requested"
        };
        let why = st
            .pause
            .as_ref()
            .map(|p| format!(": {}", p.message))
            .unwrap_or_default();
        let mut x = f.finding(Severity::Stuck, Kind::RolledBack, None);
        x.since = since.map(rfc3339);
        x.summary = if back { "rolled back" } else { "rolling back" }.into();
        x.message = if back {
            format!(
                "RolloutPolicy {name} holds the pool on {} instead of {}{} ({how}){why}",
                r.to,
                r.from,
                f.for_(since)
            )
        } else {
            format!(
                "RolloutPolicy {name} is rolling back from {} to {}{} ({how}){why}",
                r.from,
                r.to,
                f.for_(since)
            )
        };
        x.action = if s.rollback {
            format!(
                "fix the config and roll out a newer one, or go forward again: kubectl mco resume {} ({})",
                f.pool.name(),
                patch("\"rollback\":false")
            )
        } else {
            "fix the config and roll out a newer one (it starts with the canaries)".into()
        };
        out.push(x);
    } else if st.phase == Phase::Invalid {
        let mut x = f.finding(Severity::Stuck, Kind::PolicyInvalid, None);
        x.summary = "RolloutPolicy invalid".into();
        x.message = format!("RolloutPolicy {name}: {}", st.message);
        x.action = format!("fix RolloutPolicy {name} or the pool's maxUnavailable");
        out.push(x);
    } else if let Some(pause) = pause {
        let since = at(&pause.since);
        let nodes = if pause.nodes.is_empty() {
            pause.node.clone()
        } else {
            pause.nodes.join(", ")
        };
        let mut x = f.finding(Severity::Stuck, Kind::RolloutPaused, None);
        x.since = since.map(rfc3339);
        x.summary = "rollout paused".into();
        x.message = format!(
            "RolloutPolicy {name} paused the rollout of {}{} ({}): {}",
            pause.config,
            f.for_(since),
            pause.reason,
            pause.message
        );
        x.action = format!(
            "fix {nodes} (or the config), then resume: kubectl mco resume {pool} ({}); or roll back: kubectl mco rollback {pool} ({})",
            patch(&format!("\"resumedAt\":\"{}\"", rfc3339(f.now))),
            patch("\"rollback\":true"),
            pool = f.pool.name()
        );
        out.push(x);
    }
    if !out.is_empty() || f.pool.spec.paused || f.overview.outdated == 0 {
        return out;
    }
    // Moving on: the window, the canaries, the soak.
    if !s.windows.is_open(f.now) {
        if let Some(next) = s.windows.next_open(f.now) {
            let mut x = f.finding(Severity::Waiting, Kind::MaintenanceWindow, None);
            x.summary = "waiting for a maintenance window".into();
            let windows: Vec<String> = p
                .spec
                .maintenance_windows
                .iter()
                .map(crate::controllers::rollout_policy::schedule::describe_window)
                .collect();
            x.message = format!(
                "outside every maintenance window of RolloutPolicy {name} ({}); the next opens {} (in {})",
                windows.join(" or "),
                rfc3339(next),
                short_duration(next.duration_since(f.now))
            );
            x.action =
                "nothing: nodes start when it opens (updates under way finish meanwhile)".into();
            out.push(x);
        }
    }
    let canary = st
        .canary
        .as_ref()
        .filter(|c| c.config == f.target && !c.passed);
    if let (Some(c), Some(cs)) = (canary, s.canary.as_ref()) {
        let healthy = c.healthy_since.as_deref().and_then(at);
        match healthy {
            Some(h) if st.phase == Phase::Soaking || cs.soak_secs > 0 => {
                let end = h
                    .checked_add(SignedDuration::from_secs(cs.soak_secs))
                    .unwrap_or(Timestamp::MAX);
                let mut x = f.finding(Severity::Waiting, Kind::Soaking, None);
                x.since = Some(rfc3339(h));
                x.summary = "canaries soaking".into();
                x.message = format!(
                    "canaries {} healthy on {}; soaking {} until {} (in {})",
                    c.nodes.join(", "),
                    f.target,
                    cs.soak_text,
                    rfc3339(end),
                    short_duration(end.duration_since(f.now).max(SignedDuration::ZERO))
                );
                x.action = "nothing: the other nodes start when the soak ends".into();
                out.push(x);
            }
            Some(_) => {}
            None => {
                let mut x = f.finding(Severity::Waiting, Kind::Canaries, None);
                x.summary = "waiting for the canaries".into();
                x.message = format!(
                    "canaries {} update to {} first; the other nodes wait until they are healthy{}",
                    c.nodes.join(", "),
                    f.target,
                    if cs.soak_secs > 0 {
                        format!(" for {}", cs.soak_text)
                    } else {
                        String::new()
                    }
                );
                x.action = "nothing, unless a canary fails: then the rollout pauses".into();
                out.push(x);
            }
        }
    }
    out
}
