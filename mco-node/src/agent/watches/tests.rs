//! The watches against a fake API server behind tower-test's mock service, answering as
//! kube-apiserver answers for an API it does not serve.

use super::*;
use http::{Request, Response};
use kube::client::Body;
use serde_json::{json, Value};
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::time::Instant;

const MCFG: &str = "/apis/operator.openshift.io/v1/machineconfigurations";
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// kube-apiserver's answer for a resource no handler serves (Go's `http.NotFound`).
fn page_not_found() -> Response<Body> {
    let mut r = Response::new(Body::from(b"404 page not found\n".to_vec()));
    *r.status_mut() = http::StatusCode::NOT_FOUND;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r.headers_mut().insert(
        "x-content-type-options",
        http::HeaderValue::from_static("nosniff"),
    );
    r
}

fn json_response(status: u16, body: &Value) -> Response<Body> {
    let mut r = Response::new(Body::from(body.to_string().into_bytes()));
    *r.status_mut() = http::StatusCode::from_u16(status).unwrap_or_default();
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

fn list(kind: &str, items: Vec<Value>) -> Response<Body> {
    json_response(
        200,
        &json!({"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": "10"},
                "items": items}),
    )
}

fn forbidden() -> Response<Body> {
    json_response(
        403,
        &json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden",
                "message": "customresourcedefinitions is forbidden", "code": 403}),
    )
}

fn crd(established: bool) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "machineconfigurations.operator.openshift.io",
                        "resourceVersion": "11"},
           "status": {"conditions": [{"type": "Established",
                                      "status": if established { "True" } else { "False" }}]}})
}

fn cluster_object() -> Value {
    json!({"apiVersion": "operator.openshift.io/v1", "kind": "MachineConfiguration",
           "metadata": {"name": "cluster", "resourceVersion": "12"}, "spec": {}})
}

/// A request as the fake saw it: `LIST path`, `WATCH path` or `METHOD path`, and its query.
#[derive(Debug, Clone)]
struct Seen2 {
    what: String,
    query: String,
    at: Instant,
}

type Log = Arc<Mutex<Vec<Seen2>>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts a fake answering each request with `answer(what, n)` (n: how many requests of that
/// `what` came before); `None` holds the request open, as a watch with nothing to say.
fn fake(answer: impl Fn(&str, usize) -> Option<Response<Body>> + Send + 'static) -> (Client, Log) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let log: Log = Arc::default();
    let seen = log.clone();
    tokio::spawn(async move {
        let mut handle = pin!(handle);
        let mut held = Vec::new();
        while let Some((req, send)) = handle.next_request().await {
            let path = req.uri().path().to_string();
            let query = req.uri().query().unwrap_or("").to_string();
            let what = match req.method().as_str() {
                "GET" if query.contains("watch=true") => format!("WATCH {path}"),
                "GET" => format!("LIST {path}"),
                m => format!("{m} {path}"),
            };
            let n = {
                let mut l = lock(&seen);
                let n = l.iter().filter(|s| s.what == what).count();
                l.push(Seen2 {
                    what: what.clone(),
                    query,
                    at: Instant::now(),
                });
                n
            };
            match answer(&what, n) {
                Some(r) => send.send_response(r),
                None => held.push(send),
            }
        }
    });
    (Client::new(service, "default"), log)
}

fn requests(log: &Log) -> Vec<String> {
    lock(log).iter().map(|s| s.what.clone()).collect()
}

fn mcfg_api(client: &Client) -> Api<DynamicObject> {
    let ar = ApiResource {
        group: "operator.openshift.io".into(),
        version: "v1".into(),
        api_version: "operator.openshift.io/v1".into(),
        kind: "MachineConfiguration".into(),
        plural: "machineconfigurations".into(),
    };
    Api::all_with(client.clone(), &ar)
}

fn fast(absent_ms: u64) -> WatchOptions {
    WatchOptions {
        timeout_secs: 300,
        transient: Backoff {
            initial: Duration::from_millis(10),
            max: Duration::from_millis(40),
        },
        absent: Backoff {
            initial: Duration::from_millis(absent_ms),
            max: Duration::from_secs(60),
        },
    }
}

/// What `follow` reported, as words.
type Reports = Arc<Mutex<Vec<String>>>;

fn start_follow(client: &Client, opts: WatchOptions) -> Reports {
    let reports: Reports = Arc::default();
    let out = reports.clone();
    let api = mcfg_api(client);
    let ar = api.resource_url().to_string();
    assert!(ar.ends_with("machineconfigurations"), "{ar}");
    let crd = Crd::of(
        client,
        &ApiResource {
            group: "operator.openshift.io".into(),
            version: "v1".into(),
            api_version: "operator.openshift.io/v1".into(),
            kind: "MachineConfiguration".into(),
            plural: "machineconfigurations".into(),
        },
    );
    tokio::spawn(async move {
        follow(
            api,
            crd,
            opts.named("cluster"),
            opts,
            "MachineConfiguration",
            |seen| {
                let word = match seen {
                    Seen::Absent => "absent".to_string(),
                    Seen::Event(watcher::Event::Init) => "init".into(),
                    Seen::Event(watcher::Event::InitApply(o)) => {
                        format!("listed {}", o.metadata.name.unwrap_or_default())
                    }
                    Seen::Event(watcher::Event::InitDone) => "init done".into(),
                    Seen::Event(watcher::Event::Apply(o)) => {
                        format!("applied {}", o.metadata.name.unwrap_or_default())
                    }
                    Seen::Event(watcher::Event::Delete(_)) => "deleted".into(),
                };
                lock(&out).push(word);
                true
            },
        )
        .await;
    });
    reports
}

async fn until(what: &str, mut check: impl FnMut() -> bool) {
    let t = Instant::now();
    while !check() {
        assert!(t.elapsed() < Duration::from_secs(60), "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn watches_long_poll_for_minutes_spread_by_node() {
    let timeouts: std::collections::BTreeSet<u32> = (0..40)
        .map(|i| WatchOptions::for_node(&format!("worker-{i}")).timeout_secs)
        .collect();
    assert!(
        timeouts.iter().all(|t| (300..600).contains(t)),
        "{timeouts:?}"
    );
    assert!(timeouts.len() > 10, "not spread: {timeouts:?}");
    assert_eq!(
        WatchOptions::for_node("worker-0"),
        WatchOptions::for_node("worker-0")
    );
    // An absent API waited for without its CRD: minutes, growing.
    let b = WatchOptions::for_node("w").absent;
    assert_eq!(b.delay(0), Duration::from_secs(60));
    assert_eq!(b.delay(3), Duration::from_secs(480));
    assert_eq!(b.delay(9), Duration::from_secs(600));
}

#[test]
fn crd_names_for_custom_resources_only() {
    let ar = |group: &str, plural: &str| ApiResource {
        group: group.into(),
        version: "v1".into(),
        api_version: String::new(),
        kind: String::new(),
        plural: plural.into(),
    };
    assert_eq!(
        crd_name(&ar("operator.openshift.io", "machineconfigurations")).as_deref(),
        Some("machineconfigurations.operator.openshift.io")
    );
    assert_eq!(crd_name(&ar("", "nodes")), None);
    assert_eq!(crd_name(&ar("apps", "deployments")), None);
    assert_eq!(crd_name(&ar("events.k8s.io", "events")), None);
}

#[tokio::test]
async fn a_404_page_not_found_is_an_absent_api_waited_for_on_its_crd() {
    // The CRD is installed while the agent waits: its watch reports it Established.
    let (client, log) = fake(|what, n| match (what, n) {
        (w, 0) if w == format!("LIST {MCFG}") => Some(page_not_found()),
        (w, _) if w == format!("LIST {CRDS}") => Some(list("CustomResourceDefinitionList", vec![])),
        (w, 0) if w == format!("WATCH {CRDS}") => {
            let line = json!({"type": "ADDED", "object": crd(true)}).to_string() + "\n";
            Some(Response::new(Body::from(line.into_bytes())))
        }
        (w, _) if w == format!("LIST {MCFG}") => {
            Some(list("MachineConfigurationList", vec![cluster_object()]))
        }
        _ => None,
    });
    let reports = start_follow(&client, fast(3_600_000));
    until("the object listed after the CRD came", || {
        lock(&reports).iter().any(|r| r == "init done")
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        *lock(&reports),
        ["init", "absent", "init", "listed cluster", "init done"]
    );
    assert_eq!(
        requests(&log),
        [
            format!("LIST {MCFG}"),
            format!("LIST {CRDS}"),
            format!("WATCH {CRDS}"),
            format!("LIST {MCFG}"),
            format!("WATCH {MCFG}"),
        ]
    );
    let l = lock(&log);
    // The CRD is asked for by name; every WATCH long-polls for the configured minutes.
    assert!(
        l[1].query
            .contains("fieldSelector=metadata.name%3Dmachineconfigurations.operator.openshift.io"),
        "{:?}",
        l[1]
    );
    for s in l.iter().filter(|s| s.what.starts_with("WATCH")) {
        assert!(s.query.contains("timeoutSeconds=300"), "{s:?}");
    }
}

#[tokio::test]
async fn while_the_crd_is_absent_nothing_is_polled() {
    // The CRD never comes: after the 404, one LIST and one WATCH of the CRD, nothing else,
    // though the fallback delay (50 ms) passes many times over.
    let (client, log) = fake(|what, _| match what {
        w if w == format!("LIST {MCFG}") => Some(page_not_found()),
        w if w == format!("LIST {CRDS}") => Some(list("CustomResourceDefinitionList", vec![])),
        _ => None,
    });
    let reports = start_follow(&client, fast(50));
    until("absent", || lock(&reports).iter().any(|r| r == "absent")).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        requests(&log),
        [
            format!("LIST {MCFG}"),
            format!("LIST {CRDS}"),
            format!("WATCH {CRDS}")
        ]
    );
}

#[tokio::test]
async fn a_crd_that_cannot_be_watched_leaves_rechecks_growing_delays() {
    // The CRD watch is refused (a role without it): the API is rechecked after 100 ms,
    // 200 ms, 400 ms, 800 ms...
    let (client, log) = fake(|what, _| match what {
        w if w == format!("LIST {MCFG}") => Some(page_not_found()),
        w if w == format!("LIST {CRDS}") => Some(forbidden()),
        _ => None,
    });
    let _reports = start_follow(&client, fast(100));
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let times: Vec<Instant> = lock(&log)
        .iter()
        .filter(|s| s.what == format!("LIST {MCFG}"))
        .map(|s| s.at)
        .collect();
    // At 0, 0.1, 0.3, 0.7, 1.5 s (then 3.1 s): five, not the 25 a fixed 100 ms would make
    // (fewer on a loaded machine, where every step only comes later).
    assert!((3..=6).contains(&times.len()), "{times:?}");
    let gaps: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
    // Each delay at least doubles the one before: no gap is shorter than its step's delay.
    for (i, gap) in gaps.iter().enumerate() {
        let floor = Duration::from_millis(100 << i);
        assert!(*gap >= floor, "gap {i} under {floor:?}: {gaps:?}");
    }
}

#[tokio::test]
async fn a_404_at_a_watch_start_is_an_absent_api_too() {
    // The CRD was deleted while watched: the watch ends and the next WATCH finds no API.
    let (client, log) = fake(|what, n| match (what, n) {
        (w, 0) if w == format!("LIST {MCFG}") => {
            Some(list("MachineConfigurationList", vec![cluster_object()]))
        }
        (w, 0) if w == format!("WATCH {MCFG}") => Some(Response::new(Body::from(Vec::new()))),
        (w, 1) if w == format!("WATCH {MCFG}") => Some(page_not_found()),
        (w, _) if w == format!("LIST {CRDS}") => Some(list("CustomResourceDefinitionList", vec![])),
        _ => None,
    });
    let reports = start_follow(&client, fast(3_600_000));
    until("absent", || lock(&reports).iter().any(|r| r == "absent")).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        *lock(&reports),
        ["init", "listed cluster", "init done", "absent"]
    );
    assert_eq!(
        requests(&log),
        [
            format!("LIST {MCFG}"),
            format!("WATCH {MCFG}"),
            format!("WATCH {MCFG}"),
            format!("LIST {CRDS}"),
            format!("WATCH {CRDS}"),
        ]
    );
}

#[tokio::test]
async fn other_failures_are_retried_within_seconds() {
    let (client, log) = fake(|what, n| match (what, n) {
        (w, 0 | 1) if w == format!("LIST {MCFG}") => Some(json_response(
            500,
            &json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                    "reason": "InternalError", "code": 500}),
        )),
        (w, _) if w == format!("LIST {MCFG}") => {
            Some(list("MachineConfigurationList", vec![cluster_object()]))
        }
        _ => None,
    });
    let reports = start_follow(&client, fast(3_600_000));
    until("listed", || lock(&reports).iter().any(|r| r == "init done")).await;
    let r = requests(&log);
    assert_eq!(
        r.iter()
            .filter(|w| w.contains("customresourcedefinitions"))
            .count(),
        0
    );
    assert!(!lock(&reports).iter().any(|r| r == "absent"), "{r:?}");
}

#[test]
fn a_missing_object_is_not_a_missing_api() {
    use kube::core::response::StatusDetails;
    use kube::core::Status;
    let api = |s: Status| kube::Error::Api(s.boxed());
    // kube-rs's reading of the plain-text `404 page not found`.
    let text = Status::failure("404 page not found", "Failed to parse error data").with_code(404);
    assert!(is_absent_api(&api(text)));
    // A built-in group's unknown resource: a Status that names nothing.
    let builtin = Status::failure(
        "the server could not find the requested resource",
        "NotFound",
    )
    .with_code(404);
    assert!(is_absent_api(&api(builtin)));
    // A served resource's missing object.
    let missing = Status::failure("machineconfignodes \"w1\" not found", "NotFound")
        .with_code(404)
        .with_details(StatusDetails {
            name: "w1".into(),
            group: "machineconfiguration.openshift.io".into(),
            kind: "machineconfignodes".into(),
            uid: String::new(),
            causes: Vec::new(),
            retry_after_seconds: 0,
        });
    assert!(!is_absent_api(&api(missing)));
    let conflict = Status::failure("conflict", "Conflict").with_code(409);
    assert!(!is_absent_api(&api(conflict)));
}
