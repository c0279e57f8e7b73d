//! Leader election on a `coordination.k8s.io/v1` Lease, the way client-go's leaderelection
//! package (which upstream's controller and operator use) does it: one holder at a time, the
//! holder renews the Lease every retry period, a candidate takes it once the holder has not
//! renewed for a whole lease duration (measured on the candidate's own clock, from when it last
//! saw the record change, so clock skew between machines does not matter), and a holder that
//! shuts down releases it so the next candidate takes over at once. A candidate whose
//! identity is the holder's (the same pod, its container restarted after a crash) takes the
//! Lease back at once, as client-go renews a record it holds.
//!
//! [`decide`] is the pure rule; [`Elector`] carries it out against the API server with
//! optimistic concurrency (a write races through `resourceVersion`: of two candidates, one
//! gets 409 Conflict and stays a candidate).

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use kube::Client;
use std::future::Future;
use std::time::{Duration, Instant};

/// The namespace the MCO's Leases live in.
pub const NAMESPACE: &str = "openshift-machine-config-operator";

/// How long a lease lasts, how long a holder keeps trying to renew, how often to try.
#[derive(Debug, Clone)]
pub struct LeaseSettings {
    /// The Lease's namespace.
    pub namespace: String,
    /// The Lease's name (upstream: `machine-config-controller`, `machine-config`).
    pub name: String,
    /// This candidate's identity (the pod name: see [`default_identity`]).
    pub identity: String,
    /// How long a holder's claim stands without renewal.
    pub lease_duration: Duration,
    /// How long a holder keeps failing to renew before it gives up leading.
    pub renew_deadline: Duration,
    /// How often candidates try to acquire and holders renew.
    pub retry_period: Duration,
}

impl LeaseSettings {
    /// Upstream's durations (137 s lease, 107 s renew deadline, 26 s retry: OpenShift's
    /// defaults for components that must survive an API server outage) for `name`.
    pub fn new(name: &str, identity: String) -> Self {
        LeaseSettings {
            namespace: NAMESPACE.to_string(),
            name: name.to_string(),
            identity,
            lease_duration: Duration::from_secs(137),
            renew_deadline: Duration::from_secs(107),
            retry_period: Duration::from_secs(26),
        }
    }
}

/// The leader-election flags of the controller and the operator.
#[derive(Debug, Clone, clap::Args)]
pub struct LeaderArgs {
    /// Act only while holding the component's Lease (one active replica at a time).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub leader_elect: bool,
    /// The Lease's namespace (default: $POD_NAMESPACE, else openshift-machine-config-operator).
    #[arg(long)]
    pub leader_elect_namespace: Option<String>,
    /// Seconds a holder's claim stands without renewal.
    #[arg(long, default_value_t = 137)]
    pub leader_elect_lease_duration: u64,
    /// Seconds a holder keeps failing to renew before it stops leading.
    #[arg(long, default_value_t = 107)]
    pub leader_elect_renew_deadline: u64,
    /// Seconds between acquire and renew attempts.
    #[arg(long, default_value_t = 26)]
    pub leader_elect_retry_period: u64,
}

impl LeaderArgs {
    /// The settings for the Lease `name`, or None when leader election is off.
    pub fn settings(&self, name: &str) -> Option<LeaseSettings> {
        if !self.leader_elect {
            return None;
        }
        let namespace = self
            .leader_elect_namespace
            .clone()
            .or_else(|| {
                std::env::var("POD_NAMESPACE")
                    .ok()
                    .filter(|n| !n.is_empty())
            })
            .unwrap_or_else(|| NAMESPACE.to_string());
        Some(LeaseSettings {
            namespace,
            lease_duration: Duration::from_secs(self.leader_elect_lease_duration.max(1)),
            renew_deadline: Duration::from_secs(self.leader_elect_renew_deadline.max(1)),
            retry_period: Duration::from_secs(self.leader_elect_retry_period.max(1)),
            ..LeaseSettings::new(name, default_identity())
        })
    }
}

/// Runs `work` as the component's leader when `settings` is given (else directly), stopping
/// on SIGTERM/SIGINT. `Ok(None)` on shutdown.
pub async fn run_elected<T>(
    client: Client,
    settings: Option<LeaseSettings>,
    work: impl Future<Output = T>,
) -> Result<Option<T>, LeaderError> {
    match settings {
        Some(s) => Elector::new(client, s).lead(work, shutdown_signal()).await,
        None => {
            tokio::select! {
                out = work => Ok(Some(out)),
                () = shutdown_signal() => Ok(None),
            }
        }
    }
}

/// Where the kernel keeps this machine's (in a pod: this pod's UTS namespace's) host name.
const KERNEL_HOSTNAME: &str = "/proc/sys/kernel/hostname";

/// This process's identity as a candidate. With the pod's name known (`POD_NAME`, from the
/// downward API, as `manifests/` sets it) the identity is that name: two replicas are two
/// pods with two names, and a container restarted in its pod (after a crash, a SIGKILL, a
/// failed liveness probe) keeps it, so it finds itself holding its own Lease and leads again
/// at once instead of waiting for its old claim to lapse. Without it the identity is unique to
/// this process (`<host name>_<pid and start time>`, as client-go's callers add a UUID to the
/// host name): several processes on one host (or pods whose host name is not their own) must
/// never share an identity, since two holders of one identity would both lead. Such a process
/// restarted waits for its old claim to lapse or be released.
pub fn default_identity() -> String {
    let env = |k: &str| std::env::var(k).ok();
    let kernel = std::fs::read_to_string(KERNEL_HOSTNAME).ok();
    let id = identity_from(
        env("POD_NAME"),
        env("HOSTNAME"),
        kernel,
        &process_unique_suffix(),
    );
    if !id.resumable {
        tracing::info!(
            identity = %id.name,
            "POD_NAME is not set: this process's leader identity is its own and will not resume its Lease after a restart"
        );
    }
    id.name
}

/// A candidate's identity and whether a restarted process takes the same one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The Lease's `holderIdentity` this candidate writes.
    pub name: String,
    /// True for a pod name: a restart of the same pod takes its own Lease back at once.
    pub resumable: bool,
}

/// The identity from the pod name, else the host name (`HOSTNAME`, else the kernel's; first
/// not blank, trimmed) joined to `unique`, a suffix no other process has; `unknown` stands for
/// a host name not known.
pub fn identity_from(
    pod_name: Option<String>,
    hostname_env: Option<String>,
    kernel_hostname: Option<String>,
    unique: &str,
) -> Identity {
    let blank_to_none =
        |n: Option<String>| n.map(|n| n.trim().to_string()).filter(|n| !n.is_empty());
    if let Some(pod) = blank_to_none(pod_name) {
        return Identity {
            name: pod,
            resumable: true,
        };
    }
    let host = blank_to_none(hostname_env)
        .or_else(|| blank_to_none(kernel_hostname))
        .unwrap_or_else(|| "unknown".to_string());
    Identity {
        name: format!("{host}_{unique}"),
        resumable: false,
    }
}

/// `<pid><nanoseconds>` in hex: two processes alive at once never share a pid, and a pid
/// reused later comes with another start time.
fn process_unique_suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    format!("{:x}{nanos:016x}", std::process::id())
}

/// How long a waiting candidate sleeps before its next try: the retry period, but no longer
/// than until the claim it watches (`standing`, first seen as it is `since` ago) lapses, so a
/// lapsed claim is taken when it lapses rather than up to a retry period later. Taking it
/// still needs a whole lease duration without a change, as [`decide`] rules.
pub fn next_try(retry: Duration, standing: Option<Duration>, since: Option<Duration>) -> Duration {
    match (standing, since) {
        (Some(lease), Some(since)) if since < lease => {
            retry.min(lease - since + Duration::from_millis(50))
        }
        _ => retry,
    }
}

/// What a candidate or holder does next with the Lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// No Lease exists: create it, holding it.
    Create,
    /// Take the Lease from a holder whose claim lapsed (or from nobody).
    Take,
    /// Renew our own claim.
    Renew,
    /// Someone else holds a claim that still stands.
    Wait {
        /// The current holder.
        holder: String,
    },
}

/// The pure rule: `spec` is the Lease as read (None when absent), `since_observed_change` how
/// long ago this candidate first saw the record as it is now.
pub fn decide(spec: Option<&LeaseSpec>, identity: &str, since_observed_change: Duration) -> Step {
    let Some(spec) = spec else {
        return Step::Create;
    };
    let holder = spec.holder_identity.as_deref().unwrap_or("");
    if holder == identity {
        return Step::Renew;
    }
    let duration = Duration::from_secs(spec.lease_duration_seconds.unwrap_or(0).max(0) as u64);
    if !holder.is_empty() && since_observed_change < duration {
        return Step::Wait {
            holder: holder.to_string(),
        };
    }
    Step::Take
}

/// The record after `step` (Create, Take or Renew) by `identity` at `now`.
fn claimed(
    old: Option<&LeaseSpec>,
    step: &Step,
    settings: &LeaseSettings,
    now: Timestamp,
) -> LeaseSpec {
    let now = Some(MicroTime(now));
    let transitions = old.and_then(|s| s.lease_transitions).unwrap_or(0);
    let (acquire_time, lease_transitions) = match step {
        Step::Renew => (
            old.and_then(|s| s.acquire_time.clone()).or(now.clone()),
            transitions,
        ),
        Step::Take => (now.clone(), transitions + 1),
        _ => (now.clone(), 0),
    };
    LeaseSpec {
        holder_identity: Some(settings.identity.clone()),
        lease_duration_seconds: Some(settings.lease_duration.as_secs().min(i32::MAX as u64) as i32),
        acquire_time,
        renew_time: now,
        lease_transitions: Some(lease_transitions),
        ..LeaseSpec::default()
    }
}

/// Why leading stopped.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    /// The Lease could not be renewed within the renew deadline: another candidate may lead
    /// now, so this process must stop acting.
    #[error("leader election lost: lease {0} not renewed within the renew deadline")]
    Lost(String),
}

/// The parts of a Lease record whose change restarts the expiry clock: holder, renew time,
/// transitions.
type RecordKey = (Option<String>, Option<MicroTime>, Option<i32>);

/// A candidate for one Lease.
pub struct Elector {
    api: Api<Lease>,
    settings: LeaseSettings,
    /// The record last seen (holder, renew time, transitions) and when it was first seen so.
    observed: Option<(RecordKey, Instant)>,
    /// How long the claim last seen stands (its `leaseDurationSeconds`), when another holds it.
    standing: Option<Duration>,
}

/// The outcome of one try.
enum Try {
    /// We hold the Lease.
    Held,
    /// Someone else does.
    Other(String),
}

impl Elector {
    /// A candidate using `client`.
    pub fn new(client: Client, settings: LeaseSettings) -> Self {
        Elector {
            api: Api::namespaced(client, &settings.namespace),
            settings,
            observed: None,
            standing: None,
        }
    }

    /// The settings in use.
    pub fn settings(&self) -> &LeaseSettings {
        &self.settings
    }

    fn observe(&mut self, spec: Option<&LeaseSpec>) -> Duration {
        let key: RecordKey = (
            spec.and_then(|s| s.holder_identity.clone()),
            spec.and_then(|s| s.renew_time.clone()),
            spec.and_then(|s| s.lease_transitions),
        );
        match &self.observed {
            Some((seen, at)) if *seen == key => at.elapsed(),
            _ => {
                self.observed = Some((key, Instant::now()));
                Duration::ZERO
            }
        }
    }

    /// One acquire-or-renew attempt.
    async fn try_once(&mut self) -> Result<Try, kube::Error> {
        let name = self.settings.name.clone();
        let current = self.api.get_opt(&name).await?;
        let spec = current.as_ref().and_then(|l| l.spec.as_ref());
        let since = self.observe(spec);
        let step = decide(spec, &self.settings.identity, since);
        if let Step::Wait { holder } = step {
            self.standing = spec
                .and_then(|s| s.lease_duration_seconds)
                .map(|d| Duration::from_secs(d.max(0) as u64));
            return Ok(Try::Other(holder));
        }
        self.standing = None;
        let new_spec = claimed(spec, &step, &self.settings, Timestamp::now());
        let result = match current {
            None => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        namespace: Some(self.settings.namespace.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(new_spec),
                };
                self.api.create(&PostParams::default(), &lease).await
            }
            Some(mut lease) => {
                // The read resourceVersion stays on the object: a concurrent writer makes
                // this replace fail with 409 instead of both believing they lead.
                lease.spec = Some(new_spec);
                self.api
                    .replace(&name, &PostParams::default(), &lease)
                    .await
            }
        };
        match result {
            Ok(l) => {
                self.observe(l.spec.as_ref());
                Ok(Try::Held)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(Try::Other(String::new())),
            Err(e) => Err(e),
        }
    }

    /// Waits until this candidate holds the Lease.
    pub async fn acquire(&mut self) {
        let mut last_holder = None;
        loop {
            match self.try_once().await {
                Ok(Try::Held) => {
                    tracing::info!(lease = %self.settings.name, identity = %self.settings.identity, "acquired the lease");
                    return;
                }
                Ok(Try::Other(holder)) => {
                    if !holder.is_empty() && last_holder.as_deref() != Some(holder.as_str()) {
                        tracing::info!(lease = %self.settings.name, "waiting: {holder} leads");
                        last_holder = Some(holder);
                    }
                }
                Err(e) => tracing::warn!(lease = %self.settings.name, "acquiring: {e}"),
            }
            let since = self.observed.as_ref().map(|(_, at)| at.elapsed());
            let wait = next_try(self.settings.retry_period, self.standing, since);
            tokio::time::sleep(wait).await;
        }
    }

    /// Renews the Lease every retry period; returns when a renewal has not succeeded within
    /// the renew deadline (or another holder took it).
    async fn keep(&mut self) -> LeaderError {
        let mut last_ok = Instant::now();
        loop {
            tokio::time::sleep(self.settings.retry_period).await;
            match self.try_once().await {
                Ok(Try::Held) => last_ok = Instant::now(),
                Ok(Try::Other(holder)) if !holder.is_empty() => {
                    return LeaderError::Lost(self.settings.name.clone())
                }
                Ok(Try::Other(_)) => {}
                Err(e) => tracing::warn!(lease = %self.settings.name, "renewing: {e}"),
            }
            if last_ok.elapsed() >= self.settings.renew_deadline {
                return LeaderError::Lost(self.settings.name.clone());
            }
        }
    }

    /// Gives the Lease up (holder cleared, one-second duration), as client-go's
    /// ReleaseOnCancel does, so the next candidate need not wait for it to lapse.
    pub async fn release(&mut self) {
        let name = self.settings.name.clone();
        let Ok(Some(mut lease)) = self.api.get_opt(&name).await else {
            return;
        };
        let Some(spec) = lease.spec.as_mut() else {
            return;
        };
        if spec.holder_identity.as_deref() != Some(self.settings.identity.as_str()) {
            return;
        }
        let now = Some(MicroTime(Timestamp::now()));
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = now.clone();
        spec.acquire_time = now;
        match self
            .api
            .replace(&name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => tracing::info!(lease = %name, "released the lease"),
            Err(e) => tracing::warn!(lease = %name, "releasing: {e}"),
        }
    }

    /// Runs `work` while holding the Lease: waits to acquire it (or for `shutdown`), runs
    /// `work` until it ends, `shutdown` completes, or leadership is lost, then releases the
    /// Lease. `Ok(Some(out))` when `work` ended, `Ok(None)` on shutdown.
    pub async fn lead<T>(
        mut self,
        work: impl Future<Output = T>,
        shutdown: impl Future<Output = ()>,
    ) -> Result<Option<T>, LeaderError> {
        tokio::pin!(shutdown);
        tokio::select! {
            () = self.acquire() => {}
            () = &mut shutdown => return Ok(None),
        }
        let outcome = {
            let keep = async {
                let mut renewer = Elector {
                    api: self.api.clone(),
                    settings: self.settings.clone(),
                    observed: self.observed.clone(),
                    standing: None,
                };
                renewer.keep().await
            };
            tokio::select! {
                out = work => Ok(Some(out)),
                lost = keep => Err(lost),
                () = &mut shutdown => Ok(None),
            }
        };
        if outcome.is_ok() {
            self.release().await;
        }
        outcome
    }
}

/// Completes on SIGTERM or SIGINT: a pod being stopped.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(holder: Option<&str>, secs: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: holder.map(str::to_string),
            lease_duration_seconds: Some(secs),
            lease_transitions: Some(3),
            acquire_time: Some(MicroTime(Timestamp::UNIX_EPOCH)),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn absent_lease_is_created() {
        assert_eq!(decide(None, "a", Duration::ZERO), Step::Create);
    }

    #[test]
    fn own_lease_is_renewed() {
        let s = spec(Some("a"), 10);
        assert_eq!(decide(Some(&s), "a", Duration::from_secs(100)), Step::Renew);
    }

    #[test]
    fn standing_claim_is_respected() {
        let s = spec(Some("b"), 10);
        let wait = Step::Wait { holder: "b".into() };
        assert_eq!(decide(Some(&s), "a", Duration::ZERO), wait);
        assert_eq!(decide(Some(&s), "a", Duration::from_secs(9)), wait);
    }

    #[test]
    fn lapsed_or_released_claim_is_taken() {
        let s = spec(Some("b"), 10);
        assert_eq!(decide(Some(&s), "a", Duration::from_secs(10)), Step::Take);
        let released = spec(None, 1);
        assert_eq!(decide(Some(&released), "a", Duration::ZERO), Step::Take);
        let empty = spec(Some(""), 137);
        assert_eq!(decide(Some(&empty), "a", Duration::ZERO), Step::Take);
    }

    #[test]
    fn the_pod_name_is_the_identity_and_resumes() {
        let s = |v: &str| Some(v.to_string());
        let id = identity_from(s(" mcc-7d9f-abcde\n"), s("other"), s("host\n"), "1f");
        assert_eq!(id.name, "mcc-7d9f-abcde");
        assert!(id.resumable);
    }

    #[test]
    fn without_a_pod_name_the_identity_is_the_host_and_this_process() {
        let s = |v: &str| Some(v.to_string());
        // The host name alone would be shared by every process on the host.
        let id = identity_from(None, s("node-a"), s("host\n"), "1f");
        assert_eq!(id.name, "node-a_1f");
        assert!(!id.resumable);
        // The kernel's name ends in a newline; blank values do not count.
        let id = identity_from(s(""), s(" "), s("node-b\n"), "2e");
        assert_eq!(id.name, "node-b_2e");
        assert_eq!(identity_from(None, None, s("\n"), "3d").name, "unknown_3d");
        assert_eq!(identity_from(None, None, None, "4c").name, "unknown_4c");
    }

    #[test]
    fn a_restarted_holder_renews_its_lapsed_claim_and_others_wait_for_it() {
        // The record a killed process left: its own name, renewed just now as far as the
        // restarted process has seen.
        let s = spec(Some("mcc-0"), 137);
        assert_eq!(decide(Some(&s), "mcc-0", Duration::ZERO), Step::Renew);
        assert_eq!(
            decide(Some(&s), "mcc-1", Duration::from_secs(136)),
            Step::Wait {
                holder: "mcc-0".into()
            }
        );
        // Its renewal keeps the original acquisition and does not count a transition.
        let settings = LeaseSettings::new("l", "mcc-0".into());
        let renewed = claimed(Some(&s), &Step::Renew, &settings, Timestamp::UNIX_EPOCH);
        assert_eq!(renewed.lease_transitions, Some(3));
        assert_eq!(renewed.acquire_time, s.acquire_time);
    }

    #[test]
    fn a_waiting_candidate_tries_again_when_the_claim_lapses() {
        let s = Duration::from_secs;
        let retry = s(26);
        // Far from lapsing: the retry period.
        assert_eq!(next_try(retry, Some(s(137)), Some(s(10))), retry);
        // 5 s before it lapses: then, not 26 s later.
        assert_eq!(
            next_try(retry, Some(s(137)), Some(s(132))),
            s(5) + Duration::from_millis(50)
        );
        // Lapsed, no claim, or nothing seen yet: the retry period.
        assert_eq!(next_try(retry, Some(s(137)), Some(s(140))), retry);
        assert_eq!(next_try(retry, None, Some(s(132))), retry);
        assert_eq!(next_try(retry, Some(s(137)), None), retry);
    }

    #[test]
    fn the_suffix_names_this_process() {
        let id = process_unique_suffix();
        assert!(id.starts_with(&format!("{:x}", std::process::id())), "{id}");
        assert_ne!(
            id,
            process_unique_suffix(),
            "another start time, another suffix"
        );
    }

    #[test]
    fn claims_count_transitions_and_keep_acquire_time_on_renewal() {
        let settings = LeaseSettings::new("l", "a".into());
        let old = spec(Some("b"), 10);
        let now = Timestamp::from_second(1_000).unwrap_or(Timestamp::UNIX_EPOCH);
        let taken = claimed(Some(&old), &Step::Take, &settings, now);
        assert_eq!(taken.lease_transitions, Some(4));
        assert_eq!(taken.holder_identity.as_deref(), Some("a"));
        assert_eq!(taken.lease_duration_seconds, Some(137));
        assert_eq!(taken.acquire_time, Some(MicroTime(now)));
        let renewed = claimed(Some(&taken), &Step::Renew, &settings, Timestamp::UNIX_EPOCH);
        assert_eq!(renewed.acquire_time, Some(MicroTime(now)));
        assert_eq!(renewed.lease_transitions, Some(4));
        assert_eq!(renewed.renew_time, Some(MicroTime(Timestamp::UNIX_EPOCH)));
        let created = claimed(None, &Step::Create, &settings, now);
        assert_eq!(created.lease_transitions, Some(0));
    }
}
