//! The command line as kubectl's users expect it, through the binary: `-` reads standard input
//! wherever a manifest path is taken, `-o json` prints objects as one `v1 List` (what
//! `kubectl apply -f` reads), `-o yaml` wherever `-o json` is, `-o/--output` on every command
//! (`validate --format` kept as an alias), shell completions and man pages.

#[path = "support/run_cli.rs"]
mod run_cli;
use run_cli::{list_items, run};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

/// Runs `mco-render` from the workspace root with `input` on its standard input.
fn run_with_stdin(args: &[&str], input: &str) -> (i32, String, String) {
    let mut child = match Command::new(env!("CARGO_BIN_EXE_mco-render"))
        .args(args)
        .current_dir(repo(""))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => panic!("run mco-render: {e}"),
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A command that fails before reading closes the pipe: not this test's concern.
        let _ = stdin.write_all(input.as_bytes());
    }
    let out = match child.wait_with_output() {
        Ok(o) => o,
        Err(e) => panic!("wait for mco-render: {e}"),
    };
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The YAML files of a folder, sorted, as one stream of documents (`cat` with `---`).
fn stream(dir: &str, except: &[&str]) -> String {
    let Ok(entries) = std::fs::read_dir(repo(dir)) else {
        panic!("{dir}");
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| !except.iter().any(|x| n == *x))
        })
        .collect();
    files.sort();
    let docs: Vec<String> = files
        .iter()
        .map(|f| match std::fs::read_to_string(f) {
            Ok(t) => t,
            Err(e) => panic!("{}: {e}", f.display()),
        })
        .collect();
    docs.join("\n---\n")
}

/// The YAML documents of `text` as JSON values.
fn yaml_documents(text: &str) -> Vec<Value> {
    use serde::Deserialize;
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| match Value::deserialize(d) {
            Ok(v) => v,
            Err(e) => panic!("{e}: {text}"),
        })
        .collect()
}

fn json(text: &str) -> Value {
    match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => panic!("{e}: {text}"),
    }
}

/// The commands `mco-render --help` lists (not `help`).
fn commands() -> Vec<String> {
    let (code, out, err) = run(&["--help"]);
    assert_eq!(code, 0, "{err}");
    let listed: Vec<String> = out
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect();
    for c in ["render", "validate", "report", "diff", "completions", "man"] {
        assert!(listed.iter().any(|x| x == c), "{c} not in {listed:?}");
    }
    listed
}

#[test]
fn render_reads_manifests_from_standard_input() {
    let (code, want, err) = run(&["render", "--pool", "worker", "examples/cluster"]);
    assert_eq!(code, 0, "{err}");
    // The whole folder on stdin.
    let (code, got, err) = run_with_stdin(
        &["render", "--pool", "worker", "-"],
        &stream("examples/cluster", &[]),
    );
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(got, want);
    // Files and stdin together, in the order given (`kubectl apply -f a -f -`).
    let (code, got, err) = run_with_stdin(
        &[
            "render",
            "--pool",
            "worker",
            "examples/cluster/00-pools.yaml",
            "-",
        ],
        &stream("examples/cluster", &["00-pools.yaml"]),
    );
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(got, want);
}

#[test]
fn validate_reads_standard_input_and_names_it() {
    let bad = stream("examples/invalid", &[]);
    let (code, out, err) = run_with_stdin(&["validate", "-"], &bad);
    assert_eq!((code, out.as_str()), (1, ""));
    let (code, annotations, err_github) = run_with_stdin(&["validate", "-o", "github", "-"], &bad);
    assert_eq!((code, err_github.as_str()), (1, ""));
    insta::assert_snapshot!(format!(
        "$ mco-render validate - < examples/invalid/*.yaml\n{err}\
         $ mco-render validate -o github - < examples/invalid/*.yaml\n{annotations}"
    ));
}

#[test]
fn standard_input_read_twice_or_unreadable_is_named() {
    let cluster = stream("examples/cluster", &[]);
    let mut transcript = String::new();
    for (args, input) in [
        (&["validate", "-", "-"][..], "kind: MachineConfig\n"),
        // Two readers of one command: the second finds it read.
        (
            &["diff", "--pool", "worker", "-", "-"][..],
            cluster.as_str(),
        ),
        (&["render", "-"][..], "kind: [\n"),
        (&["diff", "-", "examples/cluster-next"][..], ""),
    ] {
        let (code, out, err) = run_with_stdin(args, input);
        transcript.push_str(&format!(
            "$ mco-render {}\n{out}{err}exit {code}\n",
            args.join(" ")
        ));
    }
    insta::assert_snapshot!(transcript);
}

#[test]
fn diff_takes_either_side_from_standard_input() {
    let args = ["diff", "--pool", "worker"];
    let (code, want, err) =
        run(&[&args[..], &["examples/cluster", "examples/cluster-next"]].concat());
    assert_eq!(code, 0, "{err}");
    let (code, got, err) = run_with_stdin(
        &[&args[..], &["-", "examples/cluster-next"]].concat(),
        &stream("examples/cluster", &[]),
    );
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(got, want);
}

#[test]
fn diff_reads_its_policies_from_standard_input() {
    let policies = "apiVersion: operator.openshift.io/v1\nkind: MachineConfiguration\nmetadata:\n  name: cluster\nspec:\n  nodeDisruptionPolicy:\n    files:\n    - path: /etc/containers/registries.conf\n      actions:\n      - type: None\n";
    let Ok(tmp) = tempfile::tempdir() else {
        panic!("temp dir");
    };
    let file = tmp.path().join("policies.yaml");
    if let Err(e) = std::fs::write(&file, policies) {
        panic!("{e}");
    }
    let args = [
        "diff",
        "--pool",
        "infra",
        "examples/cluster",
        "examples/cluster-next",
        "--policies",
    ];
    let from_file = run(&[&args[..], &[file.to_string_lossy().as_ref()]].concat());
    assert_eq!(from_file.0, 0, "{}", from_file.2);
    assert_eq!(
        run_with_stdin(&[&args[..], &["-"]].concat(), policies),
        from_file
    );
    let (code, _, err) = run_with_stdin(&[&args[..], &["-"]].concat(), "kind: MachineConfigPool\n");
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "<stdin>: not a MachineConfiguration (kind \"MachineConfigPool\")\n"
    );
}

#[test]
fn json_prints_the_objects_as_one_v1_list_and_yaml_as_documents() {
    // (one object asked for by name: the object alone)
    let mut summary = String::new();
    for args in [
        &["render", "examples/cluster"][..],
        &["render", "--pool", "worker", "examples/cluster"][..],
        &["templates", "--templates", "templates", "examples/cluster"][..],
        &["generate", "examples/cluster-config"][..],
    ] {
        let (code, out, err) = run(&[args, &["-o", "json"]].concat());
        assert_eq!(code, 0, "{args:?}: {err}");
        // One pool asked for by name prints its object alone, as `kubectl get mc NAME -o json`.
        let items = if args.contains(&"--pool") {
            let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
            assert_eq!(v["kind"], "MachineConfig", "{out}");
            vec![v]
        } else {
            list_items(&out)
        };
        let (code, yaml, err) = run(&[args, &["-o", "yaml"]].concat());
        assert_eq!(code, 0, "{args:?}: {err}");
        assert_eq!(items, yaml_documents(&yaml), "{args:?}");
        summary.push_str(&format!("$ mco-render {} -o json\n", args.join(" ")));
        for i in &items {
            summary.push_str(&format!(
                "  {} {} {}\n",
                i["apiVersion"].as_str().unwrap_or("?"),
                i["kind"].as_str().unwrap_or("?"),
                i["metadata"]["name"].as_str().unwrap_or("?")
            ));
        }
    }
    insta::assert_snapshot!(summary);
}

#[test]
fn render_out_dir_files_hold_one_object_each() {
    let Ok(tmp) = tempfile::tempdir() else {
        panic!("temp dir");
    };
    let dir = tmp.path().to_string_lossy().into_owned();
    let (code, _, err) = run(&[
        "render",
        "-o",
        "json",
        "--out-dir",
        &dir,
        "examples/cluster",
    ]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(tmp.path().join("worker.json")).unwrap_or_default();
    assert_eq!(json(&text)["kind"], "MachineConfig", "{text}");
}

#[test]
fn yaml_is_the_json_value_wherever_json_is() {
    let cases: [&[&str]; 6] = [
        &["validate", "examples/invalid"],
        &[
            "validate",
            "--cluster-dir",
            "examples/admission/cluster",
            "examples/admission/changes/99-worker-kargs.yaml",
        ],
        &[
            "report",
            "examples/cluster",
            "examples/cluster-next",
            "--now",
            "2026-12-05T12:00:00Z",
        ],
        &[
            "diff",
            "--pool",
            "infra",
            "examples/cluster",
            "examples/cluster-next",
        ],
        &[
            "schedule",
            "--cluster-dir",
            "examples/rollout/cluster",
            "--now",
            "2026-12-05T12:00:00Z",
            "examples/rollout/changes/99-worker-kargs.yaml",
        ],
        &[
            "status",
            "--cluster-dir",
            "examples/status/drain-blocked",
            "--now",
            "2026-03-04T10:00:00Z",
        ],
    ];
    for args in cases {
        let (code, out, err) = run(&[args, &["-o", "json"]].concat());
        let (yaml_code, yaml, yaml_err) = run(&[args, &["-o", "yaml"]].concat());
        assert_eq!((yaml_code, yaml_err), (code, err), "{args:?}");
        assert_eq!(yaml_documents(&yaml), [json(&out)], "{args:?}");
    }
}

#[test]
fn validate_yaml_report() {
    let (code, out, err) = run(&["validate", "-o", "yaml", "examples/invalid"]);
    assert_eq!((code, err.as_str()), (1, ""));
    insta::assert_snapshot!(out);
}

#[test]
fn format_is_kept_as_a_hidden_alias_of_output() {
    for format in ["text", "github", "json", "yaml"] {
        let new = run(&["validate", "-o", format, "examples/invalid"]);
        assert_eq!(
            run(&["validate", "--format", format, "examples/invalid"]),
            new,
            "{format}"
        );
        assert_eq!(
            run(&["validate", "--output", format, "examples/invalid"]),
            new,
            "{format}"
        );
    }
    let (_, help, _) = run(&["validate", "--help"]);
    assert!(help.contains("-o, --output <FORMAT>"), "{help}");
    assert!(!help.contains("--format"), "{help}");
}

#[test]
fn bash_completions_name_every_command() {
    let (code, script, err) = run(&["completions", "bash"]);
    assert_eq!(code, 0, "{err}");
    for c in commands() {
        assert!(script.contains(&format!("mco__render,{c})")), "{c}");
    }
    assert!(script.contains("complete -F _mco__render"), "{script}");
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let (code, script, err) = run(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        assert!(script.contains("validate"), "{shell}");
    }
    let (code, _, err) = run(&["completions", "tcsh"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn man_writes_a_page_per_command() {
    let Ok(tmp) = tempfile::tempdir() else {
        panic!("temp dir");
    };
    let dir = tmp.path().join("man1");
    let dir_arg = dir.to_string_lossy().into_owned();
    let (code, out, err) = run(&["man", "--out-dir", &dir_arg]);
    assert_eq!((code, err.as_str()), (0, ""));
    let mut want: Vec<String> = commands()
        .iter()
        .map(|c| format!("mco-render-{c}.1"))
        .collect();
    want.push("mco-render.1".into());
    want.sort();
    let mut written: Vec<String> = out
        .lines()
        .map(|l| {
            l.strip_prefix(&format!("{dir_arg}/"))
                .unwrap_or(l)
                .to_string()
        })
        .collect();
    written.sort();
    assert_eq!(written, want);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        panic!("{dir_arg}");
    };
    let mut files: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, want);
    let page = std::fs::read_to_string(dir.join("mco-render-render.1")).unwrap_or_default();
    assert!(page.starts_with(".ie \\n(.g .ds Aq"), "{page}");
    assert!(page.contains(".TH mco-render-render 1"), "{page}");
    assert!(page.contains("out\\-dir"), "{page}");
    // Without --out-dir: the main page on stdout.
    let (code, page, err) = run(&["man"]);
    assert_eq!(code, 0, "{err}");
    assert!(page.contains(".TH mco-render 1"), "{page}");
    assert!(page.contains("mco\\-render\\-validate(1)"), "{page}");
}
