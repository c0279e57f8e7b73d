//! Leader election against the in-process API server: one leader at a time, a hand-over
//! when the leader shuts down (without waiting for the lease to lapse), a takeover when
//! a leader stops renewing, and a killed leader restarted under its own identity (the same
//! pod) leading again at once while another pod waits; processes on one host without a pod
//! name are distinct candidates, so exactly one of them leads.

use crate::support;

use crate::support::apiserver::{resource, ApiServer};
use crate::support::cluster::{expected_rendered, seed_examples};
use mco_k8s::leader::{Elector, LeaseSettings};
use mco_render::RenderOptions;
use serde_json::json;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

const LIMIT: Duration = support::PATIENCE;

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

fn lease(server: &ApiServer) -> serde_json::Value {
    server
        .store
        .get(
            "leases",
            "openshift-machine-config-operator",
            "machine-config-controller",
        )
        .unwrap_or_default()
}

/// The Lease reads the candidates made so far.
fn lease_reads(server: &ApiServer) -> u64 {
    server
        .store
        .request_counts()
        .get("GET leases")
        .copied()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_leader_restarted_as_itself_leads_at_once_while_another_pod_waits() {
    let server = ApiServer::start().await.unwrap();
    // Far longer than the test: only the holder itself can take this lease back.
    let long = Duration::from_secs(3600);
    let first = Arc::new(AtomicBool::new(false));
    let a = Elector::new(server.client(), settings("mcc-a", long));
    let a_task = tokio::spawn(a.lead(work(first.clone()), std::future::pending()));
    until("a to lead", || first.load(Ordering::SeqCst)).await;
    let acquired = lease(&server)["spec"]["acquireTime"].clone();
    // Killed: no release.
    a_task.abort();
    let _ = a_task.await;

    // Another pod keeps asking and keeps waiting.
    let b_running = Arc::new(AtomicBool::new(false));
    let b = Elector::new(server.client(), settings("mcc-b", long));
    let b_task = tokio::spawn(b.lead(work(b_running.clone()), std::future::pending()));
    let reads = lease_reads(&server);
    until("b to try a few times", || lease_reads(&server) >= reads + 3).await;
    assert!(!b_running.load(Ordering::SeqCst), "b took a standing lease");

    // The same pod's container, restarted: a new process, the same identity.
    let again = Arc::new(AtomicBool::new(false));
    let a2 = Elector::new(server.client(), settings("mcc-a", long));
    let a2_task = tokio::spawn(a2.lead(work(again.clone()), std::future::pending()));
    until("the restarted a to lead", || again.load(Ordering::SeqCst)).await;
    let l = lease(&server);
    assert_eq!(l["spec"]["holderIdentity"], "mcc-a");
    // Resumed, not taken over: the acquisition stands and no transition is counted.
    assert_eq!(l["spec"]["acquireTime"], acquired);
    assert_eq!(l["spec"]["leaseTransitions"], 0);
    let reads = lease_reads(&server);
    until("b to try again", || lease_reads(&server) >= reads + 3).await;
    assert!(!b_running.load(Ordering::SeqCst), "b leads next to a");
    assert_eq!(holder(&server).as_deref(), Some("mcc-a"));
    a2_task.abort();
    b_task.abort();
}

/// Kills the process when the test ends, however it ends.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn worker_mc(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
        "metadata": {"name": name,
                     "labels": {"machineconfiguration.openshift.io/role": "worker"}},
        "spec": {"config": {"ignition": {"version": "3.4.0"}, "storage": {"files": [
            {"path": format!("/etc/{name}"), "mode": 420, "contents": {"source": "data:,x"}}]}}}
    })
}

/// The controller binary with the API server's kubeconfig, its pod name `pod` (None: the
/// variable and HOSTNAME unset, as when run by hand), logging to `log`.
fn controller(kubeconfig: &std::path::Path, pod: Option<&str>, log: &std::path::Path) -> Process {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_machine-config-controller"));
    cmd.args([
        "--debounce-ms",
        "20",
        "--leader-elect-lease-duration",
        "3600",
        "--leader-elect-retry-period",
        "1",
    ])
    .env("KUBECONFIG", kubeconfig)
    .env_remove("POD_NAME")
    .env_remove("HOSTNAME")
    .env_remove("POD_NAMESPACE")
    .env_remove("KUBERNETES_SERVICE_HOST")
    .stdout(Stdio::null())
    .stderr(std::fs::File::create(log).unwrap());
    if let Some(pod) = pod {
        cmd.env("POD_NAME", pod);
    }
    Process(cmd.spawn().unwrap())
}

fn rendered_as(server: &ApiServer, want: &str) -> bool {
    server
        .store
        .get("machineconfigpools", "", "worker")
        .is_some_and(|p| p["spec"]["configuration"]["name"] == want)
}

/// How many of the logs say their process acquired the Lease.
fn acquisitions(logs: &[std::path::PathBuf]) -> usize {
    logs.iter()
        .map(|l| {
            std::fs::read_to_string(l)
                .unwrap_or_default()
                .matches("acquired the lease")
                .count()
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_controllers_on_one_host_without_pod_names_have_one_leader() {
    let server = ApiServer::start().await.unwrap();
    seed_examples(&server);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    let logs: Vec<_> = (0..3)
        .map(|i| dir.path().join(format!("mcc-{i}.log")))
        .collect();
    let _processes: Vec<Process> = logs
        .iter()
        .map(|log| controller(&kubeconfig, None, log))
        .collect();
    let worker = expected_rendered(&server, "worker", &RenderOptions::default())
        .name()
        .to_string();
    until("a leader to render", || rendered_as(&server, &worker)).await;
    // Every candidate has tried several times (retry period 1 s) by now.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let l = lease(&server);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let holder = l["spec"]["holderIdentity"].as_str().unwrap_or_default();
    assert!(
        holder.starts_with(&format!("{}_", host.trim())),
        "the host name and this process: {l}"
    );
    assert_eq!(l["spec"]["leaseTransitions"], 0, "never taken over: {l}");
    assert_eq!(acquisitions(&logs), 1, "exactly one process leads");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_binary_leads_as_its_pod_and_resumes_after_sigkill() {
    let server = ApiServer::start().await.unwrap();
    seed_examples(&server);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    let pod = "machine-config-controller-7d9f-abcde";
    let start = |n: usize| controller(&kubeconfig, Some(pod), &dir.path().join(format!("{n}.log")));
    let opts = RenderOptions::default();
    let worker = expected_rendered(&server, "worker", &opts)
        .name()
        .to_string();
    let mut process = start(0);
    until("the first process to render", || {
        rendered_as(&server, &worker)
    })
    .await;
    let l = lease(&server);
    assert_eq!(l["spec"]["holderIdentity"], pod, "{l}");
    let acquired = l["spec"]["acquireTime"].clone();

    // SIGKILL mid-flight: the lease stays claimed for an hour.
    process.0.kill().unwrap();
    process.0.wait().unwrap();
    server
        .store
        .create(
            resource("machineconfigs").unwrap(),
            "",
            worker_mc("99-after-restart"),
        )
        .unwrap();
    let next = expected_rendered(&server, "worker", &opts)
        .name()
        .to_string();
    assert_ne!(next, worker);

    // The container restarted in its pod: the same name resumes its own lease and acts at
    // once.
    let _process = start(1);
    until("the restarted process to render", || {
        rendered_as(&server, &next)
    })
    .await;
    let l = lease(&server);
    assert_eq!(l["spec"]["holderIdentity"], pod, "{l}");
    assert_eq!(l["spec"]["acquireTime"], acquired, "{l}");
    assert_eq!(l["spec"]["leaseTransitions"], 0, "{l}");
}
