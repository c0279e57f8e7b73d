//! The schedule a rollout under a policy will follow (canaries, soak, batches under
//! `maxUnavailable`, windows) and when it will finish, for previews and admission warnings.
//!
//! [`schedule`] simulates [`super::decide`]'s rules with every node taking the same time to
//! drain, update, reboot and pass the health gate: the canaries first, `maxUnavailable` at a
//! time; the soak once every canary is healthy; then the other nodes in batches of
//! `maxUnavailable`. A batch starts only inside a maintenance window; one under way finishes.
//! Since every node takes as long, a batch frees all its slots at once and batches follow each
//! other. Without a policy it is upstream's plain rollout: batches only. Nothing here reads a
//! clock: `now` is an input.

use super::settings::{settings, Canary, CanaryCount, PolicyError, Settings};
use crate::api::rollout_policy::{MaintenanceWindow, RolloutPolicy};
use crate::api::{MachineConfigPool, Node};
use crate::controllers::rollout::{max_unavailable, rollout_order, MaxUnavailableError};
use jiff::{SignedDuration, Timestamp};
use serde::Serialize;
use serde_json::Value;
use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

/// The nodes a schedule is simulated for.
#[derive(Debug, Clone, Copy)]
pub enum PoolNodes<'a> {
    /// The pool's nodes; those already Done on the target are not counted.
    Known(&'a [&'a Node]),
    /// Only how many nodes the pool has (its status's `machineCount`); all of them update.
    Count(usize),
}

/// What a schedule is simulated from.
#[derive(Debug, Clone, Copy)]
pub struct ScheduleInput<'a> {
    /// The pool.
    pub pool: &'a MachineConfigPool,
    /// Its policy; `None` is upstream's plain rollout.
    pub policy: Option<&'a RolloutPolicy>,
    /// Its nodes.
    pub nodes: PoolNodes<'a>,
    /// The rendered config the nodes move to.
    pub target: &'a str,
    /// When the rollout begins.
    pub now: Timestamp,
    /// How long one node takes: drain, update, reboot (and the health gate).
    pub per_node: Duration,
    /// Whether batches wait for the policy's maintenance windows. Without a real `now` (an
    /// estimate with no clock) they do not: the schedule is then the working time alone.
    pub windows: bool,
}

/// The nodes of one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Members {
    /// By name, in rollout order.
    Named(Vec<String>),
    /// How many, when the nodes are not known.
    Count(usize),
}

impl Members {
    /// How many nodes.
    pub fn len(&self) -> usize {
        match self {
            Members::Named(v) => v.len(),
            Members::Count(n) => *n,
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepKind {
    /// Nothing starts: outside every maintenance window until the step's end.
    WaitForWindow,
    /// Canaries update.
    Canary,
    /// Every canary is healthy; the soak time runs.
    Soak,
    /// Other nodes update.
    Batch,
}

impl StepKind {
    /// The kind as the preview prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::WaitForWindow => "wait",
            StepKind::Canary => "canary",
            StepKind::Soak => "soak",
            StepKind::Batch => "batch",
        }
    }
}

fn rfc3339<S: serde::Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&super::rfc3339(*t))
}

/// One step of a schedule, `[start, end)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    /// What it does.
    pub kind: StepKind,
    /// When it begins.
    #[serde(serialize_with = "rfc3339")]
    pub start: Timestamp,
    /// When it is over.
    #[serde(serialize_with = "rfc3339")]
    pub end: Timestamp,
    /// The nodes updating in it (none for waits and the soak).
    pub nodes: Members,
}

/// A pool's simulated rollout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Schedule {
    /// The pool.
    pub pool: String,
    /// The config its nodes move to.
    pub target: String,
    /// When the rollout begins.
    #[serde(serialize_with = "rfc3339")]
    pub now: Timestamp,
    /// When the last node is done (`now` when there is nothing to do).
    #[serde(serialize_with = "rfc3339")]
    pub finish: Timestamp,
    /// `maxUnavailable` scaled to the pool.
    pub max_unavailable: usize,
    /// `maxUnavailable` as written, with its scaled value for a percentage (`25% (2)`).
    pub max_unavailable_text: String,
    /// How many nodes update.
    pub nodes: usize,
    /// How many of them are canaries.
    pub canaries: usize,
    /// The soak as written, when there are canaries and it is not zero.
    pub soak: Option<String>,
    /// The maintenance windows, described (`Sat 22:00 Europe/Berlin`).
    pub windows: Vec<String>,
    /// Whether the steps waited for the windows (see [`ScheduleInput::windows`]).
    pub windows_applied: bool,
    /// The steps in order.
    pub steps: Vec<Step>,
}

/// Why a rollout cannot be simulated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// The policy is invalid.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The pool's `maxUnavailable` is invalid.
    #[error(transparent)]
    MaxUnavailable(#[from] MaxUnavailableError),
    /// A negative `maxUnavailable`: no node ever starts.
    #[error("maxUnavailable {0} lets no node start")]
    NoCapacity(i64),
    /// The windows never open (cannot happen with checked windows; kept to stay total).
    #[error("no maintenance window opens after {0}")]
    NoWindow(String),
}

/// The nodes still to update, in rollout order.
enum Queue<'a> {
    Named(VecDeque<&'a Node>),
    Count(usize),
}

impl Queue<'_> {
    fn len(&self) -> usize {
        match self {
            Queue::Named(v) => v.len(),
            Queue::Count(n) => *n,
        }
    }

    /// The next `k` nodes (fewer when fewer are left).
    fn take(&mut self, k: usize) -> Members {
        match self {
            Queue::Named(v) => {
                let k = k.min(v.len());
                Members::Named(v.drain(..k).map(|n| n.name().to_string()).collect())
            }
            Queue::Count(n) => {
                let k = k.min(*n);
                *n -= k;
                Members::Count(k)
            }
        }
    }

    /// The canaries, out of the queue: the first N of the pool's `total` nodes, or those
    /// matching the selector (one assumed when the nodes are not known).
    fn take_canaries(&mut self, c: &Canary, total: usize) -> Members {
        match (&c.count, self) {
            (CanaryCount::Selector(sel), Queue::Named(v)) => {
                let (yes, no): (VecDeque<&Node>, VecDeque<&Node>) =
                    v.iter().partition(|n| sel.matches(&n.metadata.labels));
                *v = no;
                Members::Named(yes.iter().map(|n| n.name().to_string()).collect())
            }
            (CanaryCount::Selector(_), q) => q.take(1),
            (_, q) => q.take(c.count_of(total).unwrap_or(0)),
        }
    }
}

/// Splits `m` into batches of at most `max`.
fn batches(m: Members, max: usize) -> Vec<Members> {
    let max = max.max(1);
    match m {
        Members::Named(v) => v.chunks(max).map(|c| Members::Named(c.to_vec())).collect(),
        Members::Count(n) => {
            let mut out = Vec::new();
            let mut left = n;
            while left > 0 {
                let k = left.min(max);
                out.push(Members::Count(k));
                left -= k;
            }
            out
        }
    }
}

fn plus(t: Timestamp, d: SignedDuration) -> Timestamp {
    t.checked_add(d).unwrap_or(Timestamp::MAX)
}

/// `Sat 22:00 Europe/Berlin`, `daily 02:00 UTC`.
pub fn describe_window(w: &MaintenanceWindow) -> String {
    let days = if w.days.is_empty() {
        "daily".to_string()
    } else {
        w.days.join(",")
    };
    format!(
        "{days} {} {}",
        w.start,
        w.time_zone.as_deref().unwrap_or("UTC")
    )
}

/// `about 3h10m`-style: days, hours, minutes (rounded to the minute, at least 1m).
pub fn describe_duration(d: SignedDuration) -> String {
    let minutes = ((d.as_secs().max(0) + 30) / 60).max(1);
    let (days, hours, mins) = (minutes / 1440, minutes % 1440 / 60, minutes % 60);
    let mut s = String::new();
    if days > 0 {
        s.push_str(&format!("{days}d"));
    }
    if hours > 0 {
        s.push_str(&format!("{hours}h"));
    }
    if mins > 0 {
        s.push_str(&format!("{mins}m"));
    }
    s
}

/// Simulates the rollout of `input.target` to the pool's nodes.
pub fn schedule(input: &ScheduleInput<'_>) -> Result<Schedule, ScheduleError> {
    let s: Option<Settings> = input.policy.map(settings).transpose()?;
    let (total, mut queue) = match input.nodes {
        PoolNodes::Known(nodes) => {
            let mut v: Vec<&Node> = nodes
                .iter()
                .copied()
                .filter(|n| !n.is_done_on(input.target))
                .collect();
            v.sort_by(|a, b| rollout_order(a, b));
            (nodes.len(), Queue::Named(v.into()))
        }
        PoolNodes::Count(n) => (n, Queue::Count(n)),
    };
    let pending = queue.len();
    let max = max_unavailable(input.pool, total)?;
    if max < 0 && pending > 0 {
        return Err(ScheduleError::NoCapacity(max));
    }
    let max = usize::try_from(max).unwrap_or(0).max(1);
    let max_unavailable_text = match &input.pool.spec.max_unavailable {
        Some(Value::String(p)) => format!("{p} ({max})"),
        _ => max.to_string(),
    };
    let per_node = SignedDuration::try_from(input.per_node).unwrap_or(SignedDuration::MAX);
    let windows = s.as_ref().map(|s| &s.windows).filter(|w| !w.is_empty());
    let windows_applied = input.windows && windows.is_some();
    let mut steps: Vec<Step> = Vec::new();
    let mut t = input.now;
    // Waits until a window is open at `t`, recording the wait.
    let open_at = |t: Timestamp, steps: &mut Vec<Step>| -> Result<Timestamp, ScheduleError> {
        let Some(w) = windows.filter(|_| input.windows) else {
            return Ok(t);
        };
        if w.is_open(t) {
            return Ok(t);
        }
        let next = w
            .next_open(t)
            .ok_or_else(|| ScheduleError::NoWindow(super::rfc3339(t)))?;
        steps.push(Step {
            kind: StepKind::WaitForWindow,
            start: t,
            end: next,
            nodes: Members::Count(0),
        });
        Ok(next)
    };
    let canary = s.as_ref().and_then(|s| s.canary.as_ref());
    let mut canaries = 0;
    let mut soak = None;
    if let Some(c) = canary {
        let chosen = queue.take_canaries(c, total);
        canaries = chosen.len();
        for b in batches(chosen, max) {
            let start = open_at(t, &mut steps)?;
            t = plus(start, per_node);
            steps.push(Step {
                kind: StepKind::Canary,
                start,
                end: t,
                nodes: b,
            });
        }
        if canaries > 0 && c.soak_secs > 0 {
            let start = t;
            t = plus(t, SignedDuration::from_secs(c.soak_secs));
            steps.push(Step {
                kind: StepKind::Soak,
                start,
                end: t,
                nodes: Members::Count(0),
            });
            soak = Some(c.soak_text.clone());
        }
    }
    while queue.len() > 0 {
        let b = queue.take(max);
        let start = open_at(t, &mut steps)?;
        t = plus(start, per_node);
        steps.push(Step {
            kind: StepKind::Batch,
            start,
            end: t,
            nodes: b,
        });
    }
    Ok(Schedule {
        pool: input.pool.name().to_string(),
        target: input.target.to_string(),
        now: input.now,
        finish: t,
        max_unavailable: max,
        max_unavailable_text,
        nodes: pending,
        canaries,
        soak,
        windows: input
            .policy
            .map(|p| {
                p.spec
                    .maintenance_windows
                    .iter()
                    .map(describe_window)
                    .collect()
            })
            .unwrap_or_default(),
        windows_applied,
        steps,
    })
}

impl Schedule {
    /// How long the rollout takes from `now`.
    pub fn duration(&self) -> SignedDuration {
        self.finish.duration_since(self.now)
    }

    /// The batches of non-canary nodes.
    pub fn batches(&self) -> impl Iterator<Item = &Step> {
        self.steps.iter().filter(|s| s.kind == StepKind::Batch)
    }
}

/// The one-line summary: `about 3h10m: 1 canary, soak 30m, 9 batches of 2 at maxUnavailable
/// 2, in windows Sat 22:00 Europe/Berlin`.
impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.nodes == 0 {
            return write!(f, "nothing to roll out: every node is on {}", self.target);
        }
        let mut parts: Vec<String> = Vec::new();
        match self.canaries {
            0 => {}
            1 => parts.push("1 canary".into()),
            n => parts.push(format!("{n} canaries")),
        }
        if let Some(s) = &self.soak {
            parts.push(format!("soak {s}"));
        }
        let sizes: Vec<usize> = self.batches().map(|b| b.nodes.len()).collect();
        let most = sizes.iter().copied().max().unwrap_or(0);
        let batches = match sizes.len() {
            0 => String::new(),
            1 => format!("1 batch of {most} "),
            n if sizes.iter().all(|s| *s == most) => format!("{n} batches of {most} "),
            n => format!("{n} batches of up to {most} "),
        };
        parts.push(format!(
            "{batches}at maxUnavailable {}",
            self.max_unavailable_text
        ));
        if !self.windows.is_empty() {
            let w = self.windows.join(" or ");
            parts.push(if self.windows_applied {
                format!("in windows {w}")
            } else {
                format!("plus waits for windows {w}")
            });
        }
        write!(
            f,
            "about {}: {}",
            describe_duration(self.duration()),
            parts.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::node::testing::{node, with_configs};
    use crate::api::node::{STATE_DONE, ZONE_LABEL};
    use crate::api::rollout_policy::CanarySpec;
    use proptest::prelude::*;
    use serde_json::json;

    const MIN: Duration = Duration::from_secs(60);

    fn pool(max: Option<Value>) -> MachineConfigPool {
        let mut p = MachineConfigPool::default();
        p.metadata.name = "worker".into();
        p.spec.configuration.name = "rendered-worker-new".into();
        p.spec.max_unavailable = max;
        p
    }

    fn policy(canary: Option<(Value, &str)>, windows: Vec<MaintenanceWindow>) -> RolloutPolicy {
        let mut p = RolloutPolicy::default();
        p.metadata.name = "worker".into();
        p.spec.canary = canary.map(|(n, soak)| CanarySpec {
            nodes: Some(n),
            selector: None,
            soak: Some(soak.into()),
        });
        p.spec.maintenance_windows = windows;
        p
    }

    fn window(days: &[&str], start: &str, duration: &str, tz: &str) -> MaintenanceWindow {
        MaintenanceWindow {
            days: days.iter().map(|d| d.to_string()).collect(),
            start: start.into(),
            duration: duration.into(),
            time_zone: Some(tz.into()),
        }
    }

    fn at(s: &str) -> Timestamp {
        s.parse().expect("test time")
    }

    fn input<'a>(
        pool: &'a MachineConfigPool,
        policy: Option<&'a RolloutPolicy>,
        nodes: PoolNodes<'a>,
        now: &str,
    ) -> ScheduleInput<'a> {
        ScheduleInput {
            pool,
            policy,
            nodes,
            target: "rendered-worker-new",
            now: at(now),
            per_node: 10 * MIN,
            windows: true,
        }
    }

    fn kinds(s: &Schedule) -> Vec<(StepKind, usize)> {
        s.steps.iter().map(|s| (s.kind, s.nodes.len())).collect()
    }

    #[test]
    fn without_a_policy_batches_of_max_unavailable() {
        let p = pool(Some(json!(2)));
        let s = schedule(&input(
            &p,
            None,
            PoolNodes::Count(5),
            "2026-12-05T12:00:00Z",
        ))
        .unwrap();
        assert_eq!(
            kinds(&s),
            vec![
                (StepKind::Batch, 2),
                (StepKind::Batch, 2),
                (StepKind::Batch, 1)
            ]
        );
        assert_eq!(s.finish, at("2026-12-05T12:30:00Z"));
        assert_eq!(
            s.to_string(),
            "about 30m: 3 batches of up to 2 at maxUnavailable 2"
        );
    }

    #[test]
    fn canary_count_and_soak() {
        let p = pool(Some(json!(2)));
        let pol = policy(Some((json!(1), "30m")), vec![]);
        let s = schedule(&input(
            &p,
            Some(&pol),
            PoolNodes::Count(19),
            "2026-12-05T12:00:00Z",
        ))
        .unwrap();
        assert_eq!(s.canaries, 1);
        assert_eq!(s.steps[0].kind, StepKind::Canary);
        assert_eq!(
            (s.steps[1].kind, s.steps[1].start, s.steps[1].end),
            (
                StepKind::Soak,
                at("2026-12-05T12:10:00Z"),
                at("2026-12-05T12:40:00Z")
            )
        );
        assert_eq!(s.batches().count(), 9);
        assert_eq!(s.finish, at("2026-12-05T14:10:00Z"));
        assert_eq!(
            s.to_string(),
            "about 2h10m: 1 canary, soak 30m, 9 batches of 2 at maxUnavailable 2"
        );
    }

    #[test]
    fn canary_percentage_is_rounded_up_and_batched_by_max_unavailable() {
        // 25% of 10 is 3 canaries, 2 at a time.
        let p = pool(Some(json!(2)));
        let pol = policy(Some((json!("25%"), "0s")), vec![]);
        let s = schedule(&input(
            &p,
            Some(&pol),
            PoolNodes::Count(10),
            "2026-12-05T12:00:00Z",
        ))
        .unwrap();
        assert_eq!(s.canaries, 3);
        assert_eq!(
            kinds(&s)[..2],
            [(StepKind::Canary, 2), (StepKind::Canary, 1)]
        );
        assert_eq!(s.soak, None);
        assert!(!s.steps.iter().any(|s| s.kind == StepKind::Soak));
    }

    #[test]
    fn canaries_by_selector_and_rollout_order() {
        let nodes = [
            node("w-c", &[(ZONE_LABEL, "b")]),
            node("w-a", &[(ZONE_LABEL, "a"), ("canary", "yes")]),
            node("w-b", &[(ZONE_LABEL, "a")]),
            with_configs(
                node("w-done", &[]),
                "rendered-worker-new",
                "rendered-worker-new",
                STATE_DONE,
            ),
        ];
        let refs: Vec<&Node> = nodes.iter().collect();
        let p = pool(None);
        let mut pol = policy(None, vec![]);
        pol.spec.canary = Some(CanarySpec {
            nodes: None,
            selector: Some(
                serde_json::from_value(json!({"matchLabels": {"canary": "yes"}})).unwrap(),
            ),
            soak: None,
        });
        let s = schedule(&input(
            &p,
            Some(&pol),
            PoolNodes::Known(&refs),
            "2026-12-05T12:00:00Z",
        ))
        .unwrap();
        // The node already on the target is not counted.
        assert_eq!(s.nodes, 3);
        let names: Vec<&Members> = s.steps.iter().map(|s| &s.nodes).collect();
        assert_eq!(
            names,
            vec![
                &Members::Named(vec!["w-a".into()]),
                &Members::Named(vec!["w-b".into()]),
                &Members::Named(vec!["w-c".into()]),
            ]
        );
    }

    #[test]
    fn max_unavailable_percentage() {
        // 25% of 8 is 2; of 3 rounds down to 0, which is 1.
        let p = pool(Some(json!("25%")));
        let s = schedule(&input(
            &p,
            None,
            PoolNodes::Count(8),
            "2026-12-05T12:00:00Z",
        ))
        .unwrap();
        assert_eq!(s.max_unavailable, 2);
        assert_eq!(
            s.to_string(),
            "about 40m: 4 batches of 2 at maxUnavailable 25% (2)"
        );
        let s = schedule(&input(
            &p,
            None,
            PoolNodes::Count(3),
            "2026-12-05T12:00:00Z",
        ))
        .unwrap();
        assert_eq!(s.max_unavailable, 1);
        assert_eq!(s.batches().count(), 3);
        let bad = pool(Some(json!("lots")));
        assert!(matches!(
            schedule(&input(
                &bad,
                None,
                PoolNodes::Count(3),
                "2026-12-05T12:00:00Z"
            )),
            Err(ScheduleError::MaxUnavailable(_))
        ));
    }

    #[test]
    fn windows_postpone_batches_and_a_batch_under_way_finishes() {
        // Saturday 22:00 Berlin (21:00Z in December) for 30 minutes; batches of 10 minutes.
        // 2026-12-05 is a Saturday.
        let p = pool(Some(json!(1)));
        let pol = policy(
            None,
            vec![window(&["Sat"], "22:00", "30m", "Europe/Berlin")],
        );
        let s = schedule(&input(
            &p,
            Some(&pol),
            PoolNodes::Count(4),
            "2026-12-05T12:00:00Z",
        ))
        .unwrap();
        let steps: Vec<(StepKind, Timestamp)> = s.steps.iter().map(|s| (s.kind, s.start)).collect();
        assert_eq!(
            steps,
            vec![
                (StepKind::WaitForWindow, at("2026-12-05T12:00:00Z")),
                (StepKind::Batch, at("2026-12-05T21:00:00Z")),
                (StepKind::Batch, at("2026-12-05T21:10:00Z")),
                (StepKind::Batch, at("2026-12-05T21:20:00Z")),
                // 21:30Z the window is closed: the next Saturday.
                (StepKind::WaitForWindow, at("2026-12-05T21:30:00Z")),
                (StepKind::Batch, at("2026-12-12T21:00:00Z")),
            ]
        );
        assert_eq!(s.finish, at("2026-12-12T21:10:00Z"));
        assert_eq!(
            s.to_string(),
            "about 7d9h10m: 4 batches of 1 at maxUnavailable 1, in windows Sat 22:00 Europe/Berlin"
        );
        // A batch started at 21:25Z runs past the window's close.
        let s = schedule(&input(
            &p,
            Some(&pol),
            PoolNodes::Count(1),
            "2026-12-05T21:25:00Z",
        ))
        .unwrap();
        assert_eq!(s.finish, at("2026-12-05T21:35:00Z"));
    }

    #[test]
    fn windows_across_midnight_in_another_time_zone() {
        // Fri 23:00 in New York for 3h (04:00Z to 07:00Z Saturday in December): a batch at
        // 05:30Z Saturday is inside Friday's window.
        let p = pool(Some(json!(1)));
        let pol = policy(
            Some((json!(1), "1h")),
            vec![window(&["Fri"], "23:00", "3h", "America/New_York")],
        );
        let s = schedule(&input(
            &p,
            Some(&pol),
            PoolNodes::Count(3),
            "2026-12-05T05:30:00Z",
        ))
        .unwrap();
        let steps: Vec<(StepKind, Timestamp)> = s.steps.iter().map(|s| (s.kind, s.start)).collect();
        assert_eq!(
            steps,
            vec![
                (StepKind::Canary, at("2026-12-05T05:30:00Z")),
                (StepKind::Soak, at("2026-12-05T05:40:00Z")),
                (StepKind::Batch, at("2026-12-05T06:40:00Z")),
                (StepKind::Batch, at("2026-12-05T06:50:00Z")),
            ]
        );
        // Without a known `now`, no waiting: the working time alone.
        let mut i = input(&p, Some(&pol), PoolNodes::Count(3), "2026-12-05T12:00:00Z");
        i.windows = false;
        let s = schedule(&i).unwrap();
        assert_eq!(
            s.to_string(),
            "about 1h30m: 1 canary, soak 1h, 2 batches of 1 at maxUnavailable 1, plus waits for windows Fri 23:00 America/New_York"
        );
    }

    #[test]
    fn nothing_to_do_and_invalid_policies() {
        let p = pool(None);
        let s = schedule(&input(
            &p,
            None,
            PoolNodes::Count(0),
            "2026-12-05T12:00:00Z",
        ))
        .unwrap();
        assert_eq!(s.finish, s.now);
        assert_eq!(
            s.to_string(),
            "nothing to roll out: every node is on rendered-worker-new"
        );
        let bad = policy(Some((json!("0%"), "30m")), vec![]);
        let e = schedule(&input(
            &p,
            Some(&bad),
            PoolNodes::Count(3),
            "2026-12-05T12:00:00Z",
        ))
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("RolloutPolicy worker: spec.canary.nodes:"),
            "{e}"
        );
    }

    proptest! {
        /// No node starts outside a window; no step updates more than maxUnavailable nodes;
        /// the finish is not before `now`; every node to update appears exactly once.
        #[test]
        fn schedule_invariants(
            n in 0usize..40,
            done in 0usize..5,
            max in prop_oneof![(1i64..6).prop_map(|m| json!(m)), (1u32..101).prop_map(|p| json!(format!("{p}%")))],
            canary in prop::option::of(prop_oneof![(1u64..5).prop_map(|c| json!(c)), (1u32..101).prop_map(|p| json!(format!("{p}%")))]),
            soak in 0u32..120,
            win in prop::option::of((0usize..7, 0u8..24, 10i64..300, prop::sample::select(vec!["UTC", "Europe/Berlin", "Asia/Kolkata", "America/New_York"]))),
            secs in 1_700_000_000i64..1_900_000_000,
            per_node in 1u64..120,
        ) {
            let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
            let mut nodes: Vec<Node> = (0..n)
                .map(|i| node(&format!("w-{i:02}"), &[(ZONE_LABEL, ["a", "b", "c"][i % 3])]))
                .collect();
            nodes.extend((0..done).map(|i| with_configs(node(&format!("d-{i}"), &[]), "rendered-worker-new", "rendered-worker-new", STATE_DONE)));
            let refs: Vec<&Node> = nodes.iter().collect();
            let p = pool(Some(max));
            let windows = win
                .map(|(d, h, m, tz)| vec![window(&[days[d]], &format!("{h:02}:00"), &format!("{m}m"), tz)])
                .unwrap_or_default();
            let pol = policy(canary.map(|c| (c, format!("{soak}m"))).as_ref().map(|(c, s)| (c.clone(), s.as_str())), windows);
            let mut i = input(&p, Some(&pol), PoolNodes::Known(&refs), "2026-01-01T00:00:00Z");
            i.now = Timestamp::from_second(secs).unwrap();
            i.per_node = Duration::from_secs(per_node * 60);
            let s = schedule(&i).unwrap();
            let w = settings(&pol).unwrap().windows;
            prop_assert!(s.finish >= s.now);
            let mut seen: Vec<String> = Vec::new();
            for step in &s.steps {
                prop_assert!(step.end >= step.start);
                if matches!(step.kind, StepKind::Canary | StepKind::Batch) {
                    prop_assert!(w.is_open(step.start), "{:?} starts outside a window", step);
                    prop_assert!(step.nodes.len() <= s.max_unavailable);
                    prop_assert!(!step.nodes.is_empty());
                    if let Members::Named(v) = &step.nodes {
                        seen.extend(v.iter().cloned());
                    }
                }
            }
            seen.sort();
            let mut want: Vec<String> = (0..n).map(|i| format!("w-{i:02}")).collect();
            want.sort();
            prop_assert_eq!(seen, want);
        }
    }
}
