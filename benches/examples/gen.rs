//! Writes a generated workload as manifest files, one per object, for the CLI.
//!
//! `cargo run -p mco-benches --example gen -- DIR MACHINECONFIGS FILES [updated]`

use mco_benches::{generate, Variant};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(dir), Some(mcs), Some(files)) = (
        args.first(),
        args.get(1).and_then(|s| s.parse::<usize>().ok()),
        args.get(2).and_then(|s| s.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: gen DIR MACHINECONFIGS FILES [updated]");
        return ExitCode::from(2);
    };
    let variant = if args.get(3).map(String::as_str) == Some("updated") {
        Variant::Updated
    } else {
        Variant::Base
    };
    let w = generate(mcs, files, variant);
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("{dir}: {e}");
        return ExitCode::FAILURE;
    }
    let mut total = 0;
    for (name, bytes) in w.to_files() {
        total += bytes.len();
        let path = std::path::Path::new(dir).join(name);
        if let Err(e) = std::fs::write(&path, bytes) {
            eprintln!("{}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    println!(
        "{}: {} manifests, {total} bytes",
        w.label(),
        w.configs.len() + 2
    );
    ExitCode::SUCCESS
}
