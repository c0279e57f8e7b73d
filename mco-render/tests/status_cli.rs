//! `mco-render status`: the example dumps under `examples/status` (a healthy rollout, a drain
//! blocked by a PodDisruptionBudget, a canary paused by its RolloutPolicy, a closed maintenance
//! window, an image build running, a degraded node) through the binary. Each is looked at from
//! the instant it was taken (its newest time: the nodes' heartbeats at 10:00), so the durations
//! and estimates are the same every run without `--now`; `--now` looks from another instant;
//! a tree of manifests that is no cluster dump is refused with its own exit code.

#[path = "support/run_cli.rs"]
mod run_cli;
use run_cli::run;

/// The instant the examples were taken: their newest time.
const NOW: &str = "2026-03-04T10:00:00Z";

/// The exit code of a folder that is not a cluster dump.
const NOT_A_DUMP: i32 = 3;

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

/// The text view of one example, looked at from its own instant, and its exit status.
fn text(name: &str) -> (i32, String) {
    let d = dump(name);
    transcript(&["status", "--cluster-dir", &d])
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
fn every_example_exits_as_its_name_says_and_as_its_json_says() {
    for (name, want) in [
        ("healthy-rollout", 0),
        ("drain-blocked", 1),
        ("canary-paused", 1),
        ("closed-window", 0),
        ("build-running", 0),
        ("degraded-node", 1),
    ] {
        let d = dump(name);
        let (code, stdout, stderr) = run(&["status", "--cluster-dir", &d, "-o", "json"]);
        assert_eq!(stderr, "", "{name}");
        assert_eq!(code, want, "{name}: {stdout}");
        let v: serde_json::Value = match serde_json::from_str(&stdout) {
            Ok(v) => v,
            Err(e) => panic!("{name}: {e}: {stdout}"),
        };
        // Looked at from the instant the dump was taken, not from the clock.
        assert_eq!(v["now"], NOW, "{name}");
        assert_eq!(v["nowFrom"], "dump", "{name}");
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
    // A dump of Nodes without pools says so.
    let dir = tempfile::tempdir().expect("temp dir");
    let nodes = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/status/drain-blocked/20-nodes.yaml");
    std::fs::copy(nodes, dir.path().join("nodes.yaml")).expect("copy");
    let d = dir.path().display().to_string();
    let (code, _, stderr) = run(&["status", "--cluster-dir", &d]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("no MachineConfigPool found"), "{stderr}");
}

#[test]
fn now_looks_at_a_dump_from_another_instant() {
    // An hour after the dump was taken, the drain is blocked an hour longer.
    let d = dump("drain-blocked");
    let (code, out) = transcript(&[
        "status",
        "--cluster-dir",
        &d,
        "--pool",
        "worker",
        "--now",
        "2026-03-04T11:00:00Z",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("drain blocked for 2h12m"), "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn a_tree_of_manifests_is_not_a_cluster_dump() {
    // A GitOps tree: pools without status, MachineConfigs, no Node.
    let (code, out) = transcript(&["status", "--cluster-dir", "examples/cluster"]);
    assert_eq!(code, NOT_A_DUMP, "{out}");
    insta::assert_snapshot!(out);
    // --now changes nothing: there is no rollout to look at.
    let (code, _, stderr) = run(&["status", "--cluster-dir", "examples/cluster", "--now", NOW]);
    assert_eq!(code, NOT_A_DUMP, "{stderr}");
    // One MachineConfig, no pool at all.
    let (code, stdout, stderr) = run(&[
        "status",
        "--cluster-dir",
        "examples/admission/changes/99-worker-kargs.yaml",
    ]);
    assert_eq!((code, stdout.as_str()), (NOT_A_DUMP, ""));
    assert!(
        stderr.contains("not a cluster dump: it holds no MachineConfigPool and no Node"),
        "{stderr}"
    );
}

#[test]
fn a_dump_that_holds_no_time_is_looked_at_from_the_clock() {
    // Pools with their status and Nodes, every time stripped: nothing dates the dump.
    let dir = tempfile::tempdir().expect("temp dir");
    let src =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/status/healthy-rollout");
    for f in [
        "00-pools.yaml",
        "01-controllerconfig.yaml",
        "10-machineconfigs.yaml",
        "20-nodes.yaml",
    ] {
        let text = std::fs::read_to_string(src.join(f)).expect("example");
        let undated: String = text
            .lines()
            .filter(|l| {
                !l.contains("Time:") && !l.contains("Timestamp:") && !l.contains("timeAdded:")
            })
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(dir.path().join(f), undated).expect("write");
    }
    let d = dir.path().display().to_string();
    let (code, stdout, stderr) = run(&["status", "--cluster-dir", &d, "-o", "json"]);
    assert_eq!(stderr, "", "{stdout}");
    let v: serde_json::Value = match serde_json::from_str(&stdout) {
        Ok(v) => v,
        Err(e) => panic!("{e}: {stdout}"),
    };
    assert_eq!(v["nowFrom"], "clock", "{stdout}");
    // Undated, the rebooting node's NotReady has no start: it counts as stuck.
    assert_eq!(v["stuck"].as_bool(), Some(code == 1), "{stdout}");
    let (_, stdout, _) = run(&["status", "--cluster-dir", &d]);
    assert!(
        stdout.starts_with("As of ") && stdout.contains("(the clock: the dump holds no time)"),
        "{stdout}"
    );
}

/// The `mco-render status` commands of the README's tour, as written there.
fn readme_tour_status_commands() -> Vec<Vec<String>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let readme = std::fs::read_to_string(path).expect("README.md");
    let tour = readme
        .split("## A short tour")
        .nth(1)
        .and_then(|t| t.split("```sh").nth(1))
        .and_then(|t| t.split("```").next())
        .unwrap_or("");
    tour.lines()
        .filter_map(|l| l.strip_prefix("mco-render status "))
        .map(|l| {
            let command = l.split('#').next().unwrap_or("");
            std::iter::once("status".to_string())
                .chain(command.split_whitespace().map(str::to_string))
                .collect()
        })
        .collect()
}

#[test]
fn the_readme_tour_measures_durations_from_the_dump() {
    let commands = readme_tour_status_commands();
    assert!(
        !commands.is_empty(),
        "no `mco-render status` in the README's tour"
    );
    for args in commands {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out) = transcript(&args);
        // drain-blocked: stuck, for the time the dump says.
        assert_eq!(code, 1, "{out}");
        assert!(
            out.contains(&format!("As of {NOW} (the newest time in the dump)")),
            "{out}"
        );
        assert!(out.contains("drain blocked for 1h12m"), "{out}");
    }
}
