//! Crash trials over every part of an update: the real binary is SIGKILLed at seeded random
//! instants while updating from config A to config B (files, units, SSH keys, the password,
//! the OS part on a simulated rpm-ostree host, everything at once) or while the certificate
//! writer writes the CA files, and the host must hold exactly A or exactly B afterwards (see
//! `crash_runner`). `cargo test` runs a few trials per kind; `MCO_CRASH_TRIALS=1000` (with
//! `MCO_CRASH_SEED`, `MCO_CRASH_SECONDS`) runs the long campaign of benches/README.md.

mod crash_runner;

use std::time::Duration;

use crash_runner::{Kind, Options, Scenario};

const BIN: &str = env!("CARGO_BIN_EXE_machine-config-daemon");

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A scratch directory, on tmpfs when there is one (the many fsyncs stay cheap).
fn work_dir() -> tempfile::TempDir {
    match std::path::Path::new("/dev/shm").is_dir() {
        true => tempfile::Builder::new().tempdir_in("/dev/shm"),
        false => tempfile::tempdir(),
    }
    .expect("scratch directory")
}

#[test]
fn sigkilled_updates_leave_exactly_the_old_or_the_new_config_in_every_part() {
    let work = work_dir();
    let trials = env_or("MCO_CRASH_TRIALS", 2 * Kind::ALL.len() as u64) as usize;
    let opts = Options {
        bin: BIN.into(),
        trials,
        seed: env_or("MCO_CRASH_SEED", 0x5EED_C0FF_EE00_0023),
        kinds: Kind::ALL.to_vec(),
        time_limit: Duration::from_secs(env_or("MCO_CRASH_SECONDS", 600)),
    };
    let report = crash_runner::run(&opts, &work.path().join("trials")).expect("trial setup");
    eprintln!("{report}");
    assert!(report.inconsistencies.is_empty(), "{report}");
    assert_eq!(report.trials(), trials, "{report}");
    assert!(report.kinds.values().all(|k| k.trials > 0), "{report}");
}

/// The checks catch what they are for: a file left at B under A's `currentconfig`, a unit's
/// enablement left behind in the simulated systemctl, a staged deployment the record does not
/// name, a leftover temp file, a torn certificate.
#[test]
fn the_trial_checks_find_a_half_applied_update() {
    let work = work_dir();
    let bin = std::path::Path::new(BIN);
    let all = Scenario::new(Kind::All, bin, work.path()).expect("setup");
    let (root, fake) = all.fresh("clean").expect("copy");
    assert_eq!(all.check_config(&root, &fake), Ok(0));

    let (root, fake) = all.fresh("file").expect("copy");
    std::fs::write(root.join("etc/crash/d0/f1"), "B-1\nsecond line B 1\n").unwrap();
    let e = all.check_config(&root, &fake).unwrap_err();
    assert!(e.contains("etc/crash/d0/f1"), "{e}");

    let (root, fake) = all.fresh("unit").expect("copy");
    std::fs::write(fake.join("enabled/b.service"), "").unwrap();
    let e = all.check_config(&root, &fake).unwrap_err();
    assert!(e.contains("(simulated host) enabled/b.service"), "{e}");

    let (root, fake) = all.fresh("staged").expect("copy");
    std::fs::write(
        fake.join("staged"),
        format!("image={}\n", crash_runner::scenario::IMAGE_B),
    )
    .unwrap();
    let e = all.check_config(&root, &fake).unwrap_err();
    assert!(e.contains("(simulated host) staged"), "{e}");

    let (root, fake) = all.fresh("temp").expect("copy");
    std::fs::write(root.join("etc/.shadow.mcd-tmp"), "core:x").unwrap();
    let e = all.check_config(&root, &fake).unwrap_err();
    assert!(e.contains("etc/.shadow.mcd-tmp: unexpected"), "{e}");

    let certs = Scenario::new(Kind::Certs, bin, work.path()).expect("setup");
    let (root, _) = certs.fresh("torn").expect("copy");
    std::fs::write(
        root.join("etc/kubernetes/kubelet-ca.crt"),
        "-----BEGIN CERT",
    )
    .unwrap();
    let e = certs.check_certs_torn(&root).unwrap_err();
    assert!(
        e.contains("etc/kubernetes/kubelet-ca.crt: neither A nor B"),
        "{e}"
    );
}
