//! The embedders' API for the CI checks: render a folder's manifests as the files
//! `render --out-dir` writes, compare them with a folder, snapshot a render with insta.

use mco_render::check::{render_pools, rendered_files, Difference, OutputFormat};
use mco_render::load;
use mco_render::RenderOptions;

#[test]
fn render_snapshot_and_compare_with_the_committed_copy() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let m = load::read_manifests(&[root.join("examples/gitops/clusters/prod")])?;
    let rendered = render_pools(&m, &RenderOptions::default())
        .map_err(|failed| format!("{} pools fail to render", failed.len()))?;
    let Some((_, worker)) = rendered.iter().find(|(pool, _)| pool == "worker") else {
        return Err("no worker pool".into());
    };
    // The rendered MachineConfig as a reviewed snapshot (`cargo insta review` after a change).
    insta::assert_yaml_snapshot!("gitops_prod_worker", worker.machine_config);

    let files = rendered_files(&rendered, OutputFormat::Yaml)?;
    let differences = load::compare_with_dir(&root.join("examples/gitops/rendered/prod"), &files)?;
    assert_eq!(differences, Vec::<Difference>::new());
    let elsewhere = load::compare_with_dir(&root.join("examples/gitops/rendered/staging"), &files)?;
    assert!(elsewhere
        .iter()
        .all(|d| matches!(d, Difference::Stale { .. })));
    Ok(())
}
