//! `mco-render --version` names what the build reproduces: the releases and the default one,
//! the Butane version matched, the upstream commit of the conformance corpora.

#[path = "support/run_cli.rs"]
mod run_cli;
use run_cli::run;

#[test]
fn version_names_the_releases_the_default_and_butane() {
    let (code, out, err) = run(&["--version"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        format!("mco-render {}\n", mco_render::about::long_version())
    );
    insta::assert_snapshot!(out);
    let (code, out, _) = run(&["-V"]);
    assert_eq!(
        (code, out),
        (0, format!("mco-render {}\n", env!("CARGO_PKG_VERSION")))
    );
}
