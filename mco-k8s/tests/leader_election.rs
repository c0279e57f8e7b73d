//! Leader election against the in-process API server: one leader at a time, a hand-over
//! when the leader shuts down (without waiting for the lease to lapse), and a takeover when
//! a leader stops renewing.

mod support;

use mco_k8s::leader::{Elector, LeaseSettings};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::apiserver::ApiServer;
use tokio::sync::oneshot;

const LIMIT: Duration = Duration::from_secs(30);

fn settings(identity: &str, lease: Duration) -> LeaseSettings {
    LeaseSettings {
        lease_duration: lease,
        renew_deadline: lease.mul_f32(0.8),
        retry_period: Duration::from_millis(50),
        ..LeaseSettings::new("machine-config-controller", identity.to_string())
    }
}

/// Work that marks itself running and never ends.
async fn work(flag: Arc<AtomicBool>) {
    flag.store(true, Ordering::SeqCst);
    std::future::pending::<()>().await
}

async fn until(what: &str, check: impl Fn() -> bool) {
    let wait = async {
        while !check() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    if tokio::time::timeout(LIMIT, wait).await.is_err() {
        panic!("timed out waiting for {what}");
    }
}

fn holder(server: &ApiServer) -> Option<String> {
    let lease = server.store.get(
        "leases",
        "openshift-machine-config-operator",
        "machine-config-controller",
    )?;
    lease["spec"]["holderIdentity"].as_str().map(str::to_string)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_and_a_hand_over_on_shutdown() {
    let server = ApiServer::start().await.unwrap();
    // A lease far longer than the test: the second candidate can only lead if the first
    // releases the lease on shutdown.
    let long = Duration::from_secs(3600);
    let (a_running, b_running) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (stop_a, a_stopped) = oneshot::channel::<()>();
    let a = Elector::new(server.client(), settings("a", long));
    let a_task = tokio::spawn(a.lead(work(a_running.clone()), async {
        let _ = a_stopped.await;
    }));
    until("a to lead", || a_running.load(Ordering::SeqCst)).await;
    assert_eq!(holder(&server).as_deref(), Some("a"));

    let b = Elector::new(server.client(), settings("b", long));
    let b_task = tokio::spawn(b.lead(work(b_running.clone()), std::future::pending()));
    // b has tried several times (the lease's resourceVersion moved with a's renewals) and
    // still waits.
    let rv = |s: &ApiServer| s.store.resource_version();
    let start = rv(&server);
    until("a few renewals", || rv(&server) >= start + 3).await;
    assert!(
        !b_running.load(Ordering::SeqCst),
        "b leads while a holds the lease"
    );
    assert_eq!(holder(&server).as_deref(), Some("a"));

    stop_a.send(()).unwrap();
    let a_out = a_task.await.unwrap();
    assert!(matches!(a_out, Ok(None)), "a ends cleanly on shutdown");
    until("b to lead", || b_running.load(Ordering::SeqCst)).await;
    assert_eq!(holder(&server).as_deref(), Some("b"));
    let lease = server
        .store
        .get(
            "leases",
            "openshift-machine-config-operator",
            "machine-config-controller",
        )
        .unwrap();
    assert_eq!(lease["spec"]["leaseTransitions"], 1);
    b_task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_stops_renewing_is_replaced() {
    let server = ApiServer::start().await.unwrap();
    let short = Duration::from_millis(500);
    let (a_running, b_running) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let a = Elector::new(server.client(), settings("a", short));
    let a_task = tokio::spawn(a.lead(work(a_running.clone()), std::future::pending()));
    until("a to lead", || a_running.load(Ordering::SeqCst)).await;
    // The process dies: no renewal, no release.
    a_task.abort();
    let b = Elector::new(server.client(), settings("b", short));
    let b_task = tokio::spawn(b.lead(work(b_running.clone()), std::future::pending()));
    until("b to take over", || b_running.load(Ordering::SeqCst)).await;
    assert_eq!(holder(&server).as_deref(), Some("b"));
    b_task.abort();
}
