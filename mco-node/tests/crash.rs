//! Crash safety: the real binary is SIGKILLed at many points while switching between two configs
//! of ~2000 files; after `recover` the root must hold exactly one of the two configs, with no
//! torn file and every original preserved.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_machine-config-daemon");
const FILES: usize = 2000;
const ORIGS: usize = 20;
const VENDOR: usize = 10;
const ONLY: usize = 50;
const RUNS: usize = 20;

/// A small deterministic generator for kill delays (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Expected contents of every path a config manages, by host path.
fn files_of(tag: &str) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for i in 0..FILES {
        m.insert(
            format!("/etc/crash/d{:02}/f{i}", i / 100),
            format!("{tag}-{i}\nsecond line of {tag} {i}\n"),
        );
    }
    for i in 0..ORIGS {
        m.insert(format!("/etc/crash/orig/o{i}"), format!("{tag}-orig-{i}\n"));
    }
    for i in 0..ONLY {
        m.insert(
            format!("/etc/crash/{tag}only/{i}"),
            format!("{tag} only {i}\n"),
        );
    }
    if tag == "B" {
        for i in 0..VENDOR {
            m.insert(format!("/etc/crash/vend/v{i}"), format!("B-vend-{i}\n"));
        }
    }
    m
}

fn write_config(dir: &Path, tag: &str) -> std::path::PathBuf {
    let files: Vec<_> = files_of(tag)
        .iter()
        .map(|(p, c)| common::file(p, c))
        .collect();
    let v = json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": format!("rendered-crash-{tag}")},
        "spec": {"config": {"ignition": {"version": "3.4.0"}, "storage": {"files": files}}}
    });
    let p = dir.join(format!("{tag}.json"));
    std::fs::write(&p, v.to_string()).unwrap();
    p
}

fn run(args: &[&str]) -> std::process::Output {
    Command::new(BIN).args(args).output().expect("run binary")
}

fn read(root: &Path, p: &str) -> Option<String> {
    std::fs::read_to_string(root.join(p.trim_start_matches('/'))).ok()
}

/// Checks that the root is entirely at config `tag` and returns nothing; panics otherwise.
fn assert_consistent(root: &Path, run_no: usize) -> String {
    let current = read(root, "/etc/machine-config-daemon/currentconfig").expect("currentconfig");
    let tag = if current.contains("rendered-crash-A") {
        "A"
    } else if current.contains("rendered-crash-B") {
        "B"
    } else {
        panic!("run {run_no}: unexpected currentconfig {current}");
    };
    let other = if tag == "A" { "B" } else { "A" };
    let mine = files_of(tag);
    for (p, want) in &mine {
        let got = read(root, p);
        assert_eq!(
            got.as_deref(),
            Some(want.as_str()),
            "run {run_no}: {p} not at config {tag}"
        );
    }
    for p in files_of(other).keys().filter(|p| !mine.contains_key(*p)) {
        if p.starts_with("/etc/crash/vend/") {
            continue;
        }
        assert!(
            read(root, p).is_none(),
            "run {run_no}: {p} of config {other} left over at {tag}"
        );
    }
    // Originals: pre-existing files are saved once and never lost.
    for i in 0..ORIGS {
        assert_eq!(
            read(
                root,
                &format!("/etc/machine-config-daemon/orig/etc/crash/orig/o{i}.mcdorig")
            ),
            Some(format!("vendor-orig-{i}\n")),
            "run {run_no}: original of o{i} lost"
        );
    }
    for i in 0..VENDOR {
        let path = format!("/etc/crash/vend/v{i}");
        let saved = read(
            root,
            &format!("/etc/machine-config-daemon/orig{path}.mcdorig"),
        );
        let vendor = Some(format!("vendor-{i}\n"));
        if tag == "A" {
            assert_eq!(
                read(root, &path),
                vendor,
                "run {run_no}: {path} not restored"
            );
            assert_eq!(saved, None, "run {run_no}: stale original of {path}");
        } else {
            assert_eq!(saved, vendor, "run {run_no}: original of {path} lost");
        }
    }
    assert!(
        !root.join("etc/machine-config-daemon/txn").exists(),
        "run {run_no}: transaction left after recovery"
    );
    tag.to_string()
}

fn no_temp_files(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().to_string();
        assert!(
            !name.ends_with(".mcd-tmp"),
            "leftover temp file {}",
            e.path().display()
        );
        if e.file_type().unwrap().is_dir() {
            no_temp_files(&e.path());
        }
    }
}

#[test]
fn sigkill_at_any_point_leaves_one_whole_config() {
    // tmpfs keeps the many fsyncs cheap; the invariant does not depend on the filesystem.
    let work = match Path::new("/dev/shm").is_dir() {
        true => tempfile::Builder::new().tempdir_in("/dev/shm"),
        false => tempfile::tempdir(),
    }
    .unwrap();
    let root = work.path().join("root");
    common::seed_users(&root);
    for i in 0..ORIGS {
        let p = root.join(format!("etc/crash/orig/o{i}"));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("vendor-orig-{i}\n")).unwrap();
    }
    for i in 0..VENDOR {
        let p = root.join(format!("etc/crash/vend/v{i}"));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("vendor-{i}\n")).unwrap();
    }
    let cfg_a = write_config(work.path(), "A");
    let cfg_b = write_config(work.path(), "B");
    let root_s = root.to_str().unwrap();
    let cfg = |t: &str| {
        if t == "A" {
            cfg_a.to_str().unwrap()
        } else {
            cfg_b.to_str().unwrap()
        }
    };

    let out = run(&["once-from", cfg("A"), "--root", root_s, "--host", "print"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(assert_consistent(&root, 0), "A");
    // A full switch sets the range of kill delays (the delays are seeded; how far a run gets
    // before the kill varies with the machine, the invariant must hold wherever it lands).
    let start = Instant::now();
    let out = run(&["once-from", cfg("B"), "--root", root_s, "--host", "print"]);
    let full = start.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(assert_consistent(&root, 0), "B");

    let mut rng = Rng(0x5EED_CAFE_F00D_0001);
    let mut state = "B".to_string();
    let mut outcomes = BTreeMap::new();
    for run_no in 1..=RUNS {
        let target = if state == "A" { "B" } else { "A" };
        let span = (full.as_micros() as u64).max(1000) * 6 / 5;
        let delay = Duration::from_micros(rng.next() % span);
        let mut child = Command::new(BIN)
            .args([
                "once-from",
                cfg(target),
                "--root",
                root_s,
                "--host",
                "print",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        let rec = run(&["recover", "--root", root_s, "--host", "print"]);
        assert!(
            rec.status.success(),
            "run {run_no}: recover failed: {rec:?}"
        );
        state = assert_consistent(&root, run_no);
        *outcomes
            .entry(if state == target { "new" } else { "old" })
            .or_insert(0) += 1;
    }
    // Finally, complete both directions and check again.
    for (n, t) in ["B", "A"].iter().enumerate() {
        let out = run(&["once-from", cfg(t), "--root", root_s, "--host", "print"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert_eq!(assert_consistent(&root, RUNS + 1 + n), *t);
    }
    no_temp_files(&root);
    eprintln!("kill outcomes: {outcomes:?} (full run took {full:?})");
}
