//! Cluster mode: the served-config choice, the state built from cached objects, and the whole
//! server against a fake API server behind tower-test's mock service.

use super::*;
use crate::mcs::access::AccessPolicy;
use crate::mcs::served_state::{served_config_name, Encoded, PoolEntry};
use crate::mcs::server::{self, Config, Source};
use http::{Request, Response};
use kube::client::Body;
use serde_json::{json, Value};
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower_test::mock::SendResponse;

const GROUP: &str = "/apis/machineconfiguration.openshift.io/v1/";

fn pool_json(spec: &str, status: &str, updated: i64, rv: &str) -> Value {
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
        "metadata": {"name": "worker", "resourceVersion": rv},
        "spec": {"configuration": {"name": spec}},
        "status": {"configuration": {"name": status}, "updatedMachineCount": updated}
    })
}

fn pool(spec: &str, status: Option<(&str, i64)>) -> MachineConfigPool {
    let mut v = pool_json(
        spec,
        status.map_or("", |s| s.0),
        status.map_or(0, |s| s.1),
        "1",
    );
    if status.is_none() {
        v.as_object_mut().map(|o| o.remove("status"));
    }
    serde_json::from_value(v).unwrap_or_default()
}

fn mc_json(name: &str) -> Value {
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
        "metadata": {"name": name, "resourceVersion": "1"},
        "spec": {"config": {"ignition": {"version": "3.4.0"},
            "storage": {"files": [{"path": "/etc/which", "contents": {"source": format!("data:,{name}")}}]}}}
    })
}

fn mc(name: &str) -> MachineConfig {
    serde_json::from_value(mc_json(name)).unwrap_or_default()
}

#[test]
fn served_name_follows_updated_machines() {
    assert_eq!(served_config_name(&pool("r2", Some(("r1", 0)))), "r1");
    assert_eq!(served_config_name(&pool("r2", Some(("r1", 1)))), "r2");
    assert_eq!(served_config_name(&pool("r2", None)), "");
}

#[test]
fn state_from_objects() {
    let pools = vec![pool("r2", Some(("r1", 0)))];
    let mut mcs = BTreeMap::new();
    let cc = ControllerConfigSpec::default();
    let opts = BuildOptions::default();
    fn objects<'a>(
        pools: &'a [MachineConfigPool],
        mcs: &'a BTreeMap<String, MachineConfig>,
        cc: Option<&'a ControllerConfigSpec>,
    ) -> ClusterObjects<'a> {
        ClusterObjects {
            pools,
            machine_configs: mcs,
            controller_config: cc,
            release: None,
        }
    }

    let no_cc = ServedState::build_cluster(objects(&pools, &mcs, None), &opts, None, false);
    assert_eq!(
        no_cc.pools.get("worker"),
        Some(&Err("could not get controllerconfig: controllerconfig.machineconfiguration.openshift.io \"machine-config-controller\" not found".to_string()))
    );
    let no_mc = ServedState::build_cluster(objects(&pools, &mcs, Some(&cc)), &opts, None, false);
    assert_eq!(
        no_mc.pools.get("worker"),
        Some(&Err("could not fetch config r1, err: machineconfig.machineconfiguration.openshift.io \"r1\" not found".to_string()))
    );

    mcs.insert("r1".into(), mc("r1"));
    let ok = ServedState::build_cluster(objects(&pools, &mcs, Some(&cc)), &opts, None, false);
    let Some(Ok(entry)) = ok.pools.get("worker") else {
        panic!("worker served: {ok:?}");
    };
    assert_eq!(entry.rendered_name, "r1");
    let expected = PoolEntry::encode(&mc("r1"), Some(&cc), None, Default::default());
    assert_eq!(entry, &expected);

    // An unchanged config keeps its encodings; a changed ControllerConfig re-encodes.
    let mut sentinel = entry.clone();
    for v in sentinel.versions.values_mut() {
        *v = Ok(Encoded::new(b"kept".to_vec()));
    }
    let prev = ServedState {
        pools: [("worker".to_string(), Ok(sentinel.clone()))].into(),
        ..ServedState::default()
    };
    let kept =
        ServedState::build_cluster(objects(&pools, &mcs, Some(&cc)), &opts, Some(&prev), false);
    assert_eq!(kept.pools.get("worker"), Some(&Ok(sentinel)));
    let redone =
        ServedState::build_cluster(objects(&pools, &mcs, Some(&cc)), &opts, Some(&prev), true);
    assert_eq!(redone.pools.get("worker"), Some(&Ok(expected)));
}

/// The fake API server: lists answered from `lists`, watches held open until the test answers
/// them, every request logged.
#[derive(Default)]
struct Fake {
    lists: BTreeMap<String, Vec<Value>>,
    watches: Vec<(String, SendResponse<Response<Body>>)>,
    log: Vec<String>,
}

type Shared = Arc<Mutex<Fake>>;

fn lock(f: &Shared) -> std::sync::MutexGuard<'_, Fake> {
    f.lock().unwrap_or_else(|e| e.into_inner())
}

fn fake_client(fake: Shared) -> (kube::Client, tokio::task::JoinHandle<()>) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let task = tokio::spawn(async move {
        let mut handle = pin!(handle);
        while let Some((req, send)) = handle.next_request().await {
            let path = req.uri().path().to_string();
            let query = req.uri().query().unwrap_or("").to_string();
            let plural = path.strip_prefix(GROUP).unwrap_or(&path).to_string();
            let mut f = lock(&fake);
            f.log.push(format!("{} {path}?{query}", req.method()));
            if query.contains("watch=true") {
                f.watches.push((plural, send));
                continue;
            }
            let items = f.lists.get(&plural).cloned().unwrap_or_default();
            let list = json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "List",
                              "metadata": {"resourceVersion": "1"}, "items": items});
            send.send_response(Response::new(Body::from(list.to_string().into_bytes())));
        }
    });
    (kube::Client::new(service, "default"), task)
}

async fn get(addr: std::net::SocketAddr, path: &str) -> String {
    let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
        panic!("connect");
    };
    let req = format!("GET {path} HTTP/1.1\r\nHost: mcs\r\nConnection: close\r\n\r\n");
    let _ = s.write_all(req.as_bytes()).await;
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn serves_from_watched_caches_without_asking_the_api_per_request() {
    let fake: Shared = Arc::default();
    {
        let mut f = lock(&fake);
        f.lists.insert(
            "machineconfigpools".into(),
            vec![pool_json("r2", "r1", 0, "1")],
        );
        f.lists
            .insert("machineconfigs".into(), vec![mc_json("r1"), mc_json("r2")]);
        f.lists.insert(
            "controllerconfigs".into(),
            vec![json!({"apiVersion": "machineconfiguration.openshift.io/v1",
                        "kind": "ControllerConfig",
                        "metadata": {"name": "machine-config-controller", "resourceVersion": "1"},
                        "spec": {}})],
        );
    }
    let (client, api) = fake_client(fake.clone());
    let cfg = Config {
        source: Source::Cluster(client),
        listen: "127.0.0.1"
            .parse()
            .unwrap_or(std::net::IpAddr::from([127, 0, 0, 1])),
        secure_port: None,
        insecure_port: Some(0),
        tls: None,
        build: BuildOptions::default(),
        access: AccessPolicy::default(),
        poll_interval: Duration::from_secs(1),
        limits: crate::limits::ConnLimits::default(),
        bootstrap: None,
    };
    let running = match server::start(cfg).await {
        Ok(r) => r,
        Err(e) => panic!("start: {e}"),
    };
    let served = |r: &server::Running| match r.shared.state().pools.get("worker") {
        Some(Ok(e)) => e.rendered_name.clone(),
        other => format!("{other:?}"),
    };
    assert_eq!(served(&running), "r1");
    let Some(addr) = running.insecure_addr else {
        panic!("no plain port");
    };
    for _ in 0..5 {
        let resp = get(addr, "/config/worker").await;
        assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    }
    assert!(get(addr, "/config/nope").await.starts_with("HTTP/1.1 404"));
    // Three lists and three watches, whatever the number of requests served.
    let log = lock(&fake).log.clone();
    assert_eq!(log.iter().filter(|l| !l.contains("watch=true")).count(), 3);
    assert_eq!(log.iter().filter(|l| l.contains("watch=true")).count(), 3);

    // A machine reaches r2: the pool's watch delivers it and the server switches to r2.
    let pending = {
        let mut f = lock(&fake);
        let i = f
            .watches
            .iter()
            .position(|(p, _)| p == "machineconfigpools");
        i.map(|i| f.watches.remove(i))
    };
    let Some((_, send)) = pending else {
        panic!("no pool watch");
    };
    let event = json!({"type": "MODIFIED", "object": pool_json("r2", "r1", 1, "2")});
    send.send_response(Response::new(Body::from(format!("{event}\n").into_bytes())));
    let mut now = served(&running);
    for _ in 0..200 {
        if now == "r2" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
        now = served(&running);
    }
    assert_eq!(now, "r2");
    let resp = get(addr, "/config/worker").await;
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");

    running.stop().await;
    drop(fake);
    api.abort();
}
