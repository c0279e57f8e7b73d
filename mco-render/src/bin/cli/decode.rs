//! `mco-render decode`: the documents of manifest files as kubectl reads them (YAML 1.1 through
//! sigs.k8s.io/yaml), as the `v1` `List` kubectl would send.

use super::{write_stdout, Failure, Format};
use mco_render::gocompat::json::{sorted, to_go_indented};
use mco_render::gocompat::kube_yaml::decode_documents;
use mco_render::gocompat::yaml::to_go_yaml;
use mco_render::load;
use mco_render::manifests::is_manifest_file;
use serde_json::{json, Value};
use std::path::PathBuf;

/// The `decode` command's arguments.
#[derive(clap::Args)]
pub struct Args {
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "yaml")]
    output: Format,
    /// Manifest files, or folders of them (`.yaml`, `.yml`, `.json`, recursively).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

/// Prints every document of the files, or every error kubectl would report (exit 1).
pub fn run(args: &Args) -> Result<(), Failure> {
    let mut files = Vec::new();
    for p in &args.paths {
        let listed = load::manifest_files(p).map_err(|e| Failure::input(e.to_string()))?;
        files.extend(
            listed
                .into_iter()
                .filter(|f| !p.is_dir() || is_manifest_file(f)),
        );
    }
    let mut items = Vec::new();
    let mut errors = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f)
            .map_err(|e| Failure::input(format!("error: {}: {e}", f.display())))?;
        match decode_documents(&text) {
            Ok(docs) => items.extend(docs.into_iter().map(|d| sorted(&d.value))),
            Err(e) => errors.push(format!("error: {}: {e}", f.display())),
        }
    }
    if !errors.is_empty() {
        return Err(Failure {
            code: 1,
            lines: errors,
        });
    }
    let list = json!({"apiVersion": "v1", "kind": "List", "items": Value::Array(items)});
    match args.output {
        Format::Json => write_stdout(&format!("{}\n", to_go_indented(&list, "    "))),
        Format::Yaml => write_stdout(&to_go_yaml(&list)),
    }
    Ok(())
}
