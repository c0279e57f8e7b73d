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
    /// Manifest files, or folders of them (`.yaml`, `.yml`, `.json`, recursively); `-` is
    /// standard input.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

/// Prints every document of the files, or every error kubectl would report (exit 1).
pub fn run(args: &Args) -> Result<(), Failure> {
    load::stdin::at_most_once(&args.paths).map_err(|e| Failure::input(e.to_string()))?;
    let listing =
        load::list_manifest_files(&args.paths).map_err(|e| Failure::input(e.to_string()))?;
    // Butane configs found in folders are not manifests kubectl reads; a file named on the
    // command line is read whatever its name.
    let files = listing
        .files
        .into_iter()
        .filter(|f| is_manifest_file(f) || args.paths.contains(f));
    let mut items = Vec::new();
    let mut errors = Vec::new();
    for f in files {
        let name = load::stdin::display_name(&f);
        let text = load::stdin::read_text(&f).map_err(|e| Failure::input(e.to_string()))?;
        match decode_documents(&text) {
            Ok(docs) => items.extend(docs.into_iter().map(|d| sorted(&d.value))),
            Err(e) => errors.push(format!("error: {name}: {e}")),
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
