//! The render corpora through the shipped binary, as a user runs it: each case written as a
//! folder of manifests (the pool, the ControllerConfig, the MachineConfigs as one `List`), then
//!
//! - `mco-render render -o json DIR`: the rendered MachineConfig's name and spec equal upstream's
//!   (`renderedName`, `spec` as JSON values); a case upstream fails on exits 1 naming the pool,
//!   with upstream's message (an Ignition v3 report is printed an entry a line, located by the
//!   MachineConfig and the entry's JSON path instead of a byte offset: every entry's path and
//!   message, warnings included, must be there, in order);
//! - `mco-render ignition --spec-version V DIR` for each served version: upstream's converted
//!   config, or exit 1 with upstream's conversion error;
//! - `mco-render diff -o json PREVIOUS THIS` on the two rendered configs of a chain step:
//!   `reconcilable`, and the reason as the daemon words upstream's `reconcilableFromPrevious`.
//!
//! The top-level cases (`testdata/conformance`) always run; the real-content cases are read from
//! `shared/conformance/real` and skipped, loudly, without it.

#[path = "support/compare.rs"]
mod compare;
#[path = "support/corpus.rs"]
mod corpus;

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Cases run at once: the binary is spawned per case and version, and the machine has few cores.
const WORKERS: usize = 2;

fn mco_render(args: &[&str], paths: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mco-render"))
        .args(args)
        .args(paths)
        .output()
        .expect("run mco-render")
}

/// The case as a folder of manifests; returns the MachineConfigs' file (errors name it).
fn write_case(case: &Value, dir: &Path) -> PathBuf {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("case folder");
    let write = |name: &str, v: &Value| {
        let p = dir.join(name);
        std::fs::write(&p, v.to_string()).expect("write manifest");
        p
    };
    write("pool.json", &case["pool"]);
    write(
        "controllerconfig.json",
        &json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "ControllerConfig",
            "metadata": {"name": "machine-config-controller"},
            "spec": case["controllerConfig"],
        }),
    );
    write(
        "machineconfigs.json",
        &json!({"apiVersion": "v1", "kind": "List", "items": case["machineConfigs"]}),
    )
}

/// `$.storage.files.0.path` as the CLI prints a path: `spec.config.storage.files[0].path`.
fn cli_path(json_path: &str) -> String {
    let mut out = String::from("spec.config");
    for seg in json_path.trim_start_matches('$').split('.').skip(1) {
        if seg.parse::<usize>().is_ok() {
            out.push_str(&format!("[{seg}]"));
        } else {
            out.push('.');
            out.push_str(seg);
        }
    }
    out
}

/// The entries of an Ignition v3 report in upstream's error (`error at $.p, line 1 col N: m`),
/// as the CLI prints them: `spec.config.p: m`, `spec.config.p: warning: m`. `None` for an
/// error of another shape.
fn report_entries(error: &str) -> Option<Vec<String>> {
    let report = error
        .strip_prefix(
            "parsing Ignition config spec v3 failed with error: config is not valid\nReport: ",
        )
        .or_else(|| error.strip_prefix("invalid ignition V3 config found: "))?;
    let mut out = Vec::new();
    for line in report.lines().filter(|l| !l.is_empty()) {
        let (severity, rest) = if let Some(r) = line.strip_prefix("error at ") {
            ("", r)
        } else if let Some(r) = line.strip_prefix("warning at ") {
            ("warning: ", r)
        } else {
            return None;
        };
        let end = rest.find([',', ':'])?;
        let path = &rest[..end];
        let message = rest[end..].split_once(": ")?.1;
        out.push(format!("{}: {severity}{message}", cli_path(path)));
    }
    Some(out)
}

/// Whether the CLI's failure is upstream's: exit 1, nothing printed, the pool named, and
/// upstream's message (a v3 report an entry a line, see the module's doc).
fn check_render_error(out: &Output, pool: &str, file: &Path, want: &str) -> Result<(), String> {
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() != Some(1) || !out.stdout.is_empty() {
        return Err(format!(
            "exit {:?} (stdout {} bytes) for upstream's error {want:?}",
            out.status.code(),
            out.stdout.len()
        ));
    }
    let mut lines = stderr.lines();
    let head = format!("error: pool {pool:?} failed to render:");
    if lines.next() != Some(head.as_str()) {
        return Err(format!("stderr does not start with {head:?}: {stderr}"));
    }
    // Each line: two spaces, the MachineConfigs' file when a MachineConfig is to blame.
    let prefix = format!("{}: ", file.display());
    let body: Vec<&str> = lines
        .map(|l| {
            let l = l.strip_prefix("  ").unwrap_or(l);
            l.strip_prefix(prefix.as_str()).unwrap_or(l)
        })
        .collect();
    match report_entries(want) {
        Some(entries) => {
            let ok = body.len() == entries.len()
                && body
                    .iter()
                    .zip(&entries)
                    .all(|(l, e)| l.ends_with(&format!(": {e}")) && !l.starts_with("spec.config"));
            if ok {
                Ok(())
            } else {
                Err(format!(
                    "the report's entries {entries:#?}\n  printed as {body:#?}"
                ))
            }
        }
        None if body.join("\n").contains(want.trim_end()) => Ok(()),
        None => Err(format!("stderr lacks upstream's {want:?}: {stderr}")),
    }
}

/// What the render step left for the chain steps.
#[derive(Clone)]
struct Rendered {
    name: String,
    file: PathBuf,
}

/// One case through `render` and `ignition`: the failures, counted by check, and the rendered
/// config (saved under `out`) when it rendered.
fn run_case(case: &Value, work: &Path, out: &Path, tally: &Tally) -> Option<Rendered> {
    let name = case["name"].as_str().unwrap_or("case").to_string();
    let dir = work.join(&name);
    let file = write_case(case, &dir);
    let expected = &case["expected"];
    let pool = case["pool"]["metadata"]["name"].as_str().unwrap_or("");
    let result = mco_render(&["render", "-o", "json"], &[&dir]);
    let rendered = match expected["error"].as_str() {
        Some(want) => {
            tally.record(
                "render",
                &name,
                check_render_error(&result, pool, &file, want),
            );
            None
        }
        None => {
            // `-o json` prints a `v1 List`: its one item, the pool's rendered config.
            let got: Value = serde_json::from_slice::<Value>(&result.stdout)
                .map(|list| list["items"][0].clone())
                .unwrap_or(Value::Null);
            let outcome = if !result.status.success() {
                Err(format!(
                    "exit {:?}: {}",
                    result.status.code(),
                    String::from_utf8_lossy(&result.stderr)
                ))
            } else {
                compare::same("spec", &got["spec"], &expected["spec"]).and_then(|()| {
                    compare::same(
                        "metadata/name",
                        &got["metadata"]["name"],
                        &expected["renderedName"],
                    )
                })
            };
            let ok = outcome.is_ok();
            tally.record("render", &name, outcome);
            ok.then(|| {
                let saved = out.join(format!("{name}.json"));
                std::fs::write(&saved, &result.stdout).expect("save rendered config");
                Rendered {
                    name: got["metadata"]["name"].as_str().unwrap_or("").to_string(),
                    file: saved,
                }
            })
        }
    };
    for (version, want) in expected["served"].as_object().into_iter().flatten() {
        let got = mco_render(&["ignition", "--spec-version", version], &[&dir]);
        let what = format!("{name} {version}");
        let outcome = match want["error"].as_str() {
            None => serde_json::from_slice::<Value>(&got.stdout)
                .map_err(|e| {
                    format!(
                        "exit {:?}, stdout not JSON ({e}): {}",
                        got.status.code(),
                        String::from_utf8_lossy(&got.stderr)
                    )
                })
                .and_then(|v| compare::same("served", &v, &want["config"])),
            Some(e) => {
                let stderr = String::from_utf8_lossy(&got.stderr);
                let expect = format!("error: {}", e.trim_end());
                if got.status.code() == Some(1) && stderr.trim_end() == expect {
                    Ok(())
                } else {
                    Err(format!(
                        "exit {:?}, stderr {stderr:?}, want {expect:?}",
                        got.status.code()
                    ))
                }
            }
        };
        tally.record("served", &what, outcome);
    }
    let _ = std::fs::remove_dir_all(&dir);
    rendered
}

/// `diff -o json` from the previous case's rendered config to this one's.
fn check_reconcilable(prev: &Rendered, this: &Rendered, want: &Value) -> Result<(), String> {
    let out = mco_render(&["diff", "-o", "json"], &[&prev.file, &this.file]);
    let report: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "exit {:?}, stdout not JSON ({e}): {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    let (reconcilable, reason) = match want.as_str() {
        Some("ok") => (true, Value::Null),
        Some(e) => (
            false,
            json!(format!(
                "configs {}, {} are not reconcilable: {e}",
                prev.name, this.name
            )),
        ),
        None => return Err(format!("unexpected reconcilableFromPrevious {want}")),
    };
    compare::same(
        "diff",
        &json!({"reconcilable": report["reconcilable"], "reason": report["reason"]}),
        &json!({"reconcilable": reconcilable, "reason": reason}),
    )
}

/// Passes and failures by check.
#[derive(Default)]
struct Tally {
    counts: Mutex<BTreeMap<&'static str, (usize, usize)>>,
    failures: Mutex<Vec<String>>,
}

impl Tally {
    fn record(&self, check: &'static str, what: &str, outcome: Result<(), String>) {
        let mut counts = self.counts.lock().expect("tally");
        let entry = counts.entry(check).or_default();
        entry.1 += 1;
        match outcome {
            Ok(()) => entry.0 += 1,
            Err(e) => self
                .failures
                .lock()
                .expect("tally")
                .push(format!("{check} {what}: {e}")),
        }
    }
}

/// Every case of `files` through the binary; panics listing the failures.
fn run_corpus(label: &str, files: &[PathBuf]) {
    let started = std::time::Instant::now();
    let work = std::env::temp_dir().join(format!("mco-render-cli-{label}-{}", std::process::id()));
    let out = work.join("rendered");
    std::fs::create_dir_all(&out).expect("work folder");
    let tally = Tally::default();
    // name -> (previous, expected reconcilableFromPrevious, rendered when it rendered)
    type Step = (Option<String>, Value, Option<Rendered>);
    let steps: Mutex<BTreeMap<String, Step>> = Mutex::default();
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..WORKERS {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(path) = files.get(i) else { break };
                let case = corpus::read(path);
                let rendered = run_case(&case, &work, &out, &tally);
                let name = case["name"].as_str().unwrap_or("").to_string();
                let prev = case["previous"].as_str().map(str::to_string);
                let want = case["expected"]["reconcilableFromPrevious"].clone();
                steps
                    .lock()
                    .expect("steps")
                    .insert(name, (prev, want, rendered));
            });
        }
    });
    let steps = steps.into_inner().expect("steps");
    for (name, (prev, want, rendered)) in &steps {
        let Some(prev) = prev else { continue };
        let prev_rendered = steps.get(prev).and_then(|(_, _, r)| r.as_ref());
        let outcome = match (prev_rendered, rendered) {
            (Some(p), Some(r)) => check_reconcilable(p, r, want),
            // Upstream records null when either side fails to render (checked above).
            _ if want.is_null() => Ok(()),
            _ => Err(format!("a side did not render, upstream says {want}")),
        };
        tally.record("reconcilable", name, outcome);
    }
    let _ = std::fs::remove_dir_all(&work);
    let counts = tally.counts.into_inner().expect("tally");
    let failures = tally.failures.into_inner().expect("tally");
    let summary: Vec<String> = counts
        .iter()
        .map(|(k, (p, n))| format!("{k} {p}/{n}"))
        .collect();
    eprintln!(
        "{label} through the binary: {} cases; {} ({:.1} s)",
        files.len(),
        summary.join(", "),
        started.elapsed().as_secs_f64()
    );
    for f in failures.iter().take(30) {
        eprintln!("FAIL {f}\n");
    }
    assert!(
        failures.is_empty(),
        "{label}: {} checks differ from upstream",
        failures.len()
    );
}

#[test]
fn render_corpus_through_the_binary() {
    let files = corpus::case_files(&corpus::testdata(""), |n| {
        n.starts_with('c') && n != "accept-headers.json"
    });
    assert!(files.len() >= 300, "{} render cases", files.len());
    run_corpus("render", &files);
}

#[test]
fn real_corpus_through_the_binary() {
    let Some(dir) = corpus::corpus("real") else {
        eprintln!("SKIP: real-content corpus (shared/conformance/real) not present");
        return;
    };
    let files = corpus::case_files(&dir, |_| true);
    assert!(files.len() >= 76, "{} real cases", files.len());
    run_corpus("real", &files);
}

/// The comparison of a failure itself fails where it should (the corpora alone never show it).
#[test]
fn a_failure_is_compared_entry_by_entry() {
    use std::os::unix::process::ExitStatusExt;
    let want = "parsing Ignition config spec v3 failed with error: config is not valid\n\
                Report: error at $.storage.files.3.mode, line 1 col 1476: illegal file mode\n\
                warning at $.storage.files.3.mode, line 1 col 1476: setuid bits\n";
    assert_eq!(
        report_entries(want),
        Some(vec![
            "spec.config.storage.files[3].mode: illegal file mode".to_string(),
            "spec.config.storage.files[3].mode: warning: setuid bits".to_string(),
        ])
    );
    let file = Path::new("/tmp/case/machineconfigs.json");
    let out = |stderr: &str| Output {
        status: std::process::ExitStatus::from_raw(1 << 8),
        stdout: Vec::new(),
        stderr: stderr.as_bytes().to_vec(),
    };
    let printed = "error: pool \"worker\" failed to render:\n  \
        /tmp/case/machineconfigs.json: 40-a: spec.config.storage.files[3].mode: illegal file mode\n  \
        /tmp/case/machineconfigs.json: 40-a: spec.config.storage.files[3].mode: warning: setuid bits\n";
    assert_eq!(
        check_render_error(&out(printed), "worker", file, want),
        Ok(())
    );
    let no_warning = printed.lines().take(2).collect::<Vec<_>>().join("\n");
    assert!(check_render_error(&out(&no_warning), "worker", file, want).is_err());
    let other_path = printed.replace("files[3]", "files[4]");
    assert!(check_render_error(&out(&other_path), "worker", file, want).is_err());
    let other_pool = printed.replace("\"worker\"", "\"infra\"");
    assert!(check_render_error(&out(&other_pool), "worker", file, want).is_err());
    let plain =
        "error: pool \"worker\" failed to render:\n  no MachineConfigs found matching selector x\n";
    assert_eq!(
        check_render_error(
            &out(plain),
            "worker",
            file,
            "no MachineConfigs found matching selector x"
        ),
        Ok(())
    );
    assert!(check_render_error(&out(plain), "worker", file, "no MachineConfigs found").is_ok());
    assert!(check_render_error(&out(plain), "worker", file, "selector y").is_err());
}
