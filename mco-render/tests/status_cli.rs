//! `mco-render status`: the example dumps under `examples/status` (a healthy rollout, a drain
//! blocked by a PodDisruptionBudget, a canary paused by its RolloutPolicy, a closed maintenance
//! window, an image build running, a degraded node) through the binary, with `--now` so the
//! durations and estimates are the same every run.

#[path = "support/run_cli.rs"]
mod run_cli;
use run_cli::run;

const NOW: &str = "2026-03-04T10:00:00Z";

fn dump(name: &str) -> String {
    format!("examples/status/{name}")
}

fn transcript(args: &[&str]) -> (i32, String) {
    let (code, stdout, stderr) = run(args);
    (
        code,
        format!(
            "$ mco-render {}\n{stderr}{stdout}exit {code}\n",
            args.join(" ")
        ),
    )
}

/// The text view of one example, and its exit status.
fn text(name: &str) -> (i32, String) {
    let d = dump(name);
    transcript(&["status", "--cluster-dir", &d, "--now", NOW])
}

#[test]
fn a_healthy_rollout_is_progressing_and_nothing_is_stuck() {
    let (code, out) = text("healthy-rollout");
    assert_eq!(code, 0, "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn a_drain_blocked_by_a_budget_is_stuck() {
    let (code, out) = text("drain-blocked");
    assert_eq!(code, 1, "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn a_canary_paused_by_its_rollout_policy_is_stuck() {
    let (code, out) = text("canary-paused");
    assert_eq!(code, 1, "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn a_closed_maintenance_window_is_waiting() {
    let (code, out) = text("closed-window");
    assert_eq!(code, 0, "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn a_build_running_is_waiting() {
    let (code, out) = text("build-running");
    assert_eq!(code, 0, "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn a_degraded_node_is_stuck_on_its_unit() {
    let (code, out) = text("degraded-node");
    assert_eq!(code, 1, "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn json_is_the_same_view() {
    let d = dump("drain-blocked");
    let (code, stdout, stderr) = run(&[
        "status",
        "--cluster-dir",
        &d,
        "--now",
        NOW,
        "--pool",
        "worker",
        "-o",
        "json",
    ]);
    assert_eq!((code, stderr.as_str()), (1, ""));
    let v: serde_json::Value = match serde_json::from_str(&stdout) {
        Ok(v) => v,
        Err(e) => panic!("{e}: {stdout}"),
    };
    insta::assert_json_snapshot!(v);
}

#[test]
fn every_example_exits_as_its_json_says() {
    for name in [
        "healthy-rollout",
        "drain-blocked",
        "canary-paused",
        "closed-window",
        "build-running",
        "degraded-node",
    ] {
        let d = dump(name);
        let (code, stdout, stderr) =
            run(&["status", "--cluster-dir", &d, "--now", NOW, "-o", "json"]);
        assert_eq!(stderr, "", "{name}");
        let v: serde_json::Value = match serde_json::from_str(&stdout) {
            Ok(v) => v,
            Err(e) => panic!("{name}: {e}: {stdout}"),
        };
        let stuck = v["stuck"].as_bool();
        assert_eq!(stuck, Some(code == 1), "{name}: exit {code}");
        // Every pool's nodes are all there, each with an assessment and a phase.
        for p in v["pools"].as_array().into_iter().flatten() {
            let nodes = p["nodes"].as_array().map_or(0, Vec::len);
            assert_eq!(
                Some(nodes as u64),
                p["overview"]["total"].as_u64(),
                "{name}"
            );
        }
    }
}

#[test]
fn unknown_pools_and_missing_dumps_are_input_errors() {
    let d = dump("healthy-rollout");
    let (code, _, stderr) = run(&["status", "--cluster-dir", &d, "--pool", "infra"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("no MachineConfigPool named \"infra\""),
        "{stderr}"
    );
    let (code, _, stderr) = run(&["status", "--cluster-dir", "examples/status/nothing-here"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no such file or folder"), "{stderr}");
    // A folder without pools says so.
    let (code, _, stderr) = run(&[
        "status",
        "--cluster-dir",
        "examples/admission/changes/99-worker-kargs.yaml",
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no MachineConfigPool found"), "{stderr}");
}
