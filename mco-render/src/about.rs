//! What a build reproduces, as every binary's `--version` says it: the MCO releases whose
//! rendering it reproduces and the default one ([`crate::release`]), the Butane version whose
//! output it matches ([`crate::butane`]), and the upstream commit its conformance corpora came
//! from ([`crate::CONTROLLER_VERSION`], the controller version rendered configs carry).

use crate::release::Release;
use std::sync::OnceLock;

/// The version of this crate (the workspace's: every binary has the same).
pub const CRATE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The Butane release whose translations, warnings and errors [`crate::butane`] matches
/// (`testdata/conformance/butane`: the cases were run through this build of Butane).
pub const BUTANE_VERSION: &str = "v0.29.0-3-gcb34e120";

/// The upstream repository whose commit [`crate::CONTROLLER_VERSION`] is.
pub const UPSTREAM: &str = "openshift/machine-config-operator";

/// The lines after the first of `--version`: the releases reproduced, the default, the Butane
/// version and the upstream commit, one fact per line.
pub fn details() -> String {
    let releases: Vec<String> = Release::all().map(|r| r.to_string()).collect();
    format!(
        "releases reproduced: {} (default {})\n\
         Butane matched: {BUTANE_VERSION} (variant openshift)\n\
         upstream: {UPSTREAM} commit {} (the conformance corpora; the controller version \
         rendered configs carry by default)",
        releases.join(", "),
        Release::NEWEST,
        crate::CONTROLLER_VERSION,
    )
}

/// The text clap prints after a binary's name for `--version`: the crate version, then
/// [`details`]. Built once; `#[command(version, long_version = mco_render::about::long_version())]`.
pub fn long_version() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| format!("{CRATE_VERSION}\n{}", details()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_every_release_the_default_butane_and_upstream() {
        let text = long_version();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(CRATE_VERSION));
        assert_eq!(
            lines.next(),
            Some(
                "releases reproduced: 4.14, 4.15, 4.16, 4.17, 4.18, 4.19, 4.20, 4.21, 4.22 \
                 (default 4.22)"
            )
        );
        assert_eq!(
            lines.next(),
            Some("Butane matched: v0.29.0-3-gcb34e120 (variant openshift)")
        );
        let upstream = lines.next().unwrap_or_default();
        assert!(
            upstream.starts_with(&format!(
                "upstream: openshift/machine-config-operator commit {}",
                crate::CONTROLLER_VERSION
            )),
            "{upstream}"
        );
        assert_eq!(lines.next(), None);
    }
}
