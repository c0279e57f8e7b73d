//! Arbitrary text as `rpm-ostree status --json` output, read as the node agent reads it
//! (`mco-node/src/rpm_ostree.rs`: the booted and staged deployments and the image each runs),
//! and each line as an ostree image reference. Parsing is total; an image reference that parses
//! names an image its text ends with, and a refused one is named in the error.
//!
//! The module is compiled into this target from its file, with stand-ins for the two agent
//! modules it names (`host`, `root`), which only [`rpm_ostree::query`] and the host checks use:
//! `mco-node` itself would bring kube and tokio into the fuzz build.
#![no_main]
#![allow(dead_code)]

/// Stand-in for `mco-node`'s `host` module: what `rpm_ostree` names of it.
mod host {
    /// A host command failed.
    #[derive(Debug, thiserror::Error)]
    #[error("host command failed")]
    pub struct HostError;

    /// The commands `rpm_ostree` runs.
    pub trait Host {
        fn rpm_ostree_output(&mut self, args: &[String]) -> Result<String, HostError>;
        fn runs_commands(&self) -> bool;
    }
}

/// Stand-in for `mco-node`'s `root` module: what `rpm_ostree` names of it.
mod root {
    /// A path outside the root.
    #[derive(Debug)]
    pub struct RootError;

    /// The host root.
    pub struct HostRoot;

    impl HostRoot {
        pub fn exists(&self, _path: &str) -> Result<bool, RootError> {
            Ok(false)
        }
    }
}

#[path = "../../mco-node/src/rpm_ostree.rs"]
mod rpm_ostree;

use libfuzzer_sys::fuzz_target;

fn check_reference(reference: &str) {
    match rpm_ostree::parse_image_reference(reference) {
        Ok(r) => {
            assert!(
                reference.ends_with(&r.image),
                "{reference:?} gave image {:?}",
                r.image
            );
            assert!(!r.transport.is_empty() || reference.contains("::"));
        }
        Err(e) => assert!(e.contains(reference) || e.contains("missing ':'"), "{e}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for l in text.lines().take(8) {
        check_reference(l);
    }
    let status = match rpm_ostree::parse_status(text) {
        Ok(s) => s,
        Err(e) => {
            assert!(e.starts_with("failed to parse `rpm-ostree status --json` output"));
            return;
        }
    };
    match status.booted() {
        Ok(b) => assert!(b.booted),
        Err(_) => assert!(status.deployments.iter().all(|d| !d.booted)),
    }
    if let Some(s) = status.staged() {
        assert!(s.staged);
    }
    for d in &status.deployments {
        if let Some(r) = d.container_image_reference.as_deref() {
            check_reference(r);
        }
        if let Ok(Some(image)) = d.image() {
            let from_ref = d.container_image_reference.as_deref().unwrap_or("");
            let from_origin = d.custom_origin.first().map(String::as_str).unwrap_or("");
            assert!(from_ref.ends_with(&image) || from_origin.ends_with(&image));
        }
    }
});
