//! The instant a cluster dump was taken, and the instant a command looks at manifests from.
//!
//! A dump (`oc get ... -o yaml` outputs) carries no date of its own, but its objects record
//! when things happened: conditions' transitions and the kubelet's heartbeats, creation times,
//! Events, taints, builds, jobs and pods starting and finishing, the fields' managers writing.
//! The newest of those times ([`newest_time`]) is the dump's instant: nothing it shows happened
//! later, and on a live cluster the newest heartbeat is at most a few minutes old. Durations in
//! the dump (a drain blocked since, a node NotReady since) are measured to it, not to the
//! clock of whoever reads the dump a year later.
//!
//! Only fields that record the past count: a future time (a deletion's deadline, the next
//! maintenance window, a certificate's expiry) says nothing of when the dump was taken.

use jiff::Timestamp;
use serde::Serialize;
use serde_json::Value;

/// The fields that record when something happened, wherever they are under `metadata` and
/// `status`, and at the top of an Event.
const PAST: &[&str] = &[
    // metadata
    "creationTimestamp",
    // conditions
    "lastTransitionTime",
    "lastHeartbeatTime",
    "lastProbeTime",
    "lastUpdateTime",
    // Events (v1 and events.k8s.io/v1)
    "firstTimestamp",
    "lastTimestamp",
    "eventTime",
    "lastObservedTime",
    "deprecatedFirstTimestamp",
    "deprecatedLastTimestamp",
    // Pods, Jobs, CronJobs, containers
    "startTime",
    "completionTime",
    "startedAt",
    "finishedAt",
    "lastScheduleTime",
    "lastSuccessfulTime",
    // the ClusterVersion's history
    "startedTime",
    // MachineOSBuilds
    "buildStart",
    "buildEnd",
    // RolloutPolicies
    "healthySince",
    "since",
];

/// The newest time `object` records as past (see the module's documentation), if any. A
/// `List`'s items are not looked into: each is an object of its own.
pub fn newest_time(object: &Value) -> Option<Timestamp> {
    let fields = object.as_object()?;
    let mut newest = None;
    for (key, v) in fields {
        match key.as_str() {
            "metadata" => {
                walk(v, PAST, &mut newest);
                // Each field manager's last write (`oc get --show-managed-fields`).
                for m in v
                    .get("managedFields")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    note(m.get("time"), &mut newest);
                }
            }
            "status" => walk(v, PAST, &mut newest),
            // A Node's taints, a Lease's renewals: the only times a spec records (a
            // MachineConfig's spec, an Ignition config, is not walked).
            "spec" => {
                for t in v
                    .get("taints")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    note(t.get("timeAdded"), &mut newest);
                }
                note(v.get("renewTime"), &mut newest);
                note(v.get("acquireTime"), &mut newest);
            }
            "series" => walk(v, PAST, &mut newest),
            k if PAST.contains(&k) => note(Some(v), &mut newest),
            _ => {}
        }
    }
    newest
}

fn walk(v: &Value, keys: &[&str], newest: &mut Option<Timestamp>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if keys.contains(&k.as_str()) {
                    note(Some(x), newest);
                } else {
                    walk(x, keys, newest);
                }
            }
        }
        Value::Array(items) => {
            for x in items {
                walk(x, keys, newest);
            }
        }
        _ => {}
    }
}

fn note(v: Option<&Value>, newest: &mut Option<Timestamp>) {
    let t = v
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<Timestamp>().ok());
    if t > *newest {
        *newest = t;
    }
}

/// Where the instant a command looks from comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum NowFrom {
    /// Given on the command line (`--now`).
    Given,
    /// The newest time the dump holds: the instant it was taken.
    Dump,
    /// The clock, the manifests holding no time.
    Clock,
}

impl NowFrom {
    /// How the text view names it, in parentheses after the instant.
    pub fn describe(self) -> &'static str {
        match self {
            NowFrom::Given => "given by --now",
            NowFrom::Dump => "the newest time in the dump",
            NowFrom::Clock => "the clock: the dump holds no time",
        }
    }
}

/// An instant and where it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instant {
    /// The instant.
    pub at: Timestamp,
    /// Where it comes from.
    pub from: NowFrom,
}

/// The instant to look at a dump from: `given` (`--now`), else the newest time the dump holds
/// (`dump`, [`super::Manifests::newest_time`]), else `clock()`, which is called only then.
pub fn instant(
    given: Option<Timestamp>,
    dump: Option<Timestamp>,
    clock: impl FnOnce() -> Timestamp,
) -> Instant {
    match (given, dump) {
        (Some(at), _) => Instant {
            at,
            from: NowFrom::Given,
        },
        (None, Some(at)) => Instant {
            at,
            from: NowFrom::Dump,
        },
        (None, None) => Instant {
            at: clock(),
            from: NowFrom::Clock,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap_or(Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn the_newest_past_time_of_a_node_is_its_heartbeat() {
        let node = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "worker-0", "creationTimestamp": "2025-12-04T10:00:00Z"},
            "spec": {"taints": [{"key": "k", "effect": "NoSchedule", "timeAdded": "2026-03-04T09:55:00Z"}]},
            "status": {"conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-02-12T10:00:00Z",
                 "lastHeartbeatTime": "2026-03-04T09:59:41Z"},
                {"type": "DiskPressure", "status": "False", "lastTransitionTime": "2026-02-12T10:00:00Z",
                 "lastHeartbeatTime": "2026-03-04T09:59:41Z"}
            ]}
        });
        assert_eq!(newest_time(&node), Some(at("2026-03-04T09:59:41Z")));
    }

    #[test]
    fn future_times_and_spec_fields_do_not_count() {
        let policy = json!({
            "kind": "RolloutPolicy",
            "metadata": {"name": "worker", "creationTimestamp": "2026-02-01T00:00:00Z",
                         "deletionTimestamp": "2027-01-01T00:00:00Z"},
            "spec": {"resumedAt": "2026-12-01T00:00:00Z", "lastTransitionTime": "2026-12-01T00:00:00Z"},
            "status": {"nextWindow": "2026-12-07T21:00:00Z", "healthySince": "2026-03-01T11:00:00Z"}
        });
        assert_eq!(newest_time(&policy), Some(at("2026-03-01T11:00:00Z")));
    }

    #[test]
    fn events_of_both_apis_leases_and_managed_fields_count() {
        let v1 = json!({"kind": "Event", "metadata": {"name": "e"},
            "firstTimestamp": "2026-03-04T09:48:00Z", "lastTimestamp": "2026-03-04T09:59:00Z"});
        assert_eq!(newest_time(&v1), Some(at("2026-03-04T09:59:00Z")));
        let new = json!({"kind": "Event", "metadata": {"name": "e"},
            "eventTime": "2026-03-04T09:48:00.123456Z",
            "series": {"count": 3, "lastObservedTime": "2026-03-04T09:58:30.000001Z"}});
        assert_eq!(newest_time(&new), Some(at("2026-03-04T09:58:30.000001Z")));
        let managed = json!({"kind": "MachineConfigPool", "metadata": {"name": "worker",
            "managedFields": [{"manager": "machine-config-controller", "time": "2026-03-04T09:57:00Z"}]}});
        assert_eq!(newest_time(&managed), Some(at("2026-03-04T09:57:00Z")));
        // A node's Lease (kube-node-lease), renewed every 10 s.
        let lease = json!({"kind": "Lease", "metadata": {"name": "worker-0"},
            "spec": {"holderIdentity": "worker-0", "renewTime": "2026-03-04T09:59:58.123456Z"}});
        assert_eq!(newest_time(&lease), Some(at("2026-03-04T09:59:58.123456Z")));
    }

    #[test]
    fn manifests_without_times_have_none() {
        let mc = json!({"kind": "MachineConfig", "metadata": {"name": "99-worker"},
            "spec": {"kernelArguments": ["nosmt"]}});
        assert_eq!(newest_time(&mc), None);
        assert_eq!(newest_time(&json!("a string")), None);
        let unparsable = json!({"kind": "Node", "metadata": {"creationTimestamp": "yesterday"}});
        assert_eq!(newest_time(&unparsable), None);
    }

    #[test]
    fn the_instant_is_given_else_the_dump_s_else_the_clock_s() {
        let (given, dump, clock) = (
            at("2026-03-04T10:00:00Z"),
            at("2026-03-04T09:59:41Z"),
            at("2026-12-07T19:00:00Z"),
        );
        let i = instant(Some(given), Some(dump), || clock);
        assert_eq!((i.at, i.from), (given, NowFrom::Given));
        let i = instant(None, Some(dump), || clock);
        assert_eq!((i.at, i.from), (dump, NowFrom::Dump));
        let i = instant(None, None, || clock);
        assert_eq!((i.at, i.from), (clock, NowFrom::Clock));
    }
}
