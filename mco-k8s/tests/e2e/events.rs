//! The controller's Event recorder against the in-process API server: an Event recorded again
//! counts up its series, and Events that differ in their note (or object) are Events of their
//! own, as `kubectl describe` must show each step of a rollout.

use crate::support::apiserver::ApiServer;
use mco_k8s::events::Events;
use serde_json::Value;

fn notes(server: &ApiServer, kind: &str) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = server
        .store
        .list("events")
        .iter()
        .filter(|e| e["regarding"]["kind"] == kind)
        .map(|e: &Value| {
            (
                e["note"].as_str().unwrap_or_default().to_string(),
                e["series"]["count"].as_u64().unwrap_or(1),
            )
        })
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeats_count_up_and_other_notes_are_events_of_their_own() {
    let server = ApiServer::start().await.unwrap();
    let events = Events::new(server.client(), "machine-config-controller");
    let note = |n: &str| format!("Targeted node {n} to config rendered-worker-1");
    events
        .on_pool("worker", Some("u1"), "SetDesiredConfig", note("worker-0"))
        .await;
    events
        .on_pool("worker", Some("u1"), "SetDesiredConfig", note("worker-1"))
        .await;
    events
        .on_pool("worker", Some("u1"), "SetDesiredConfig", note("worker-0"))
        .await;
    events
        .on_node("worker-0", true, "FailedToDrain", "blocked".into())
        .await;
    events
        .on_node("worker-1", true, "FailedToDrain", "blocked".into())
        .await;
    assert_eq!(
        notes(&server, "MachineConfigPool"),
        [(note("worker-0"), 2), (note("worker-1"), 1)]
    );
    assert_eq!(
        notes(&server, "Node"),
        [("blocked".to_string(), 1), ("blocked".to_string(), 1)]
    );
    let counts = server.store.request_counts();
    assert_eq!(counts.get("POST events"), Some(&4), "{counts:?}");
    assert_eq!(counts.get("PATCH events"), Some(&1), "{counts:?}");
    let pool_event = server
        .store
        .list("events")
        .into_iter()
        .find(|e| e["regarding"]["kind"] == "MachineConfigPool")
        .unwrap();
    assert_eq!(pool_event["type"], "Normal");
    assert_eq!(pool_event["reason"], "SetDesiredConfig");
    assert_eq!(pool_event["regarding"]["uid"], "u1");
    assert_eq!(
        pool_event["reportingController"],
        "machine-config-controller"
    );
    assert_eq!(pool_event["metadata"]["namespace"], "default");
}
