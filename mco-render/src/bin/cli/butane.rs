//! `mco-render butane`: a Butane config (`variant: openshift`) translated into the
//! MachineConfig Butane prints, with Butane's messages and exit codes (0 ok, 1 error).

use mco_render::butane::{self, emit, FileSet, Options};
use mco_render::load;
use std::io::{Read, Write};
use std::path::PathBuf;

/// The `butane` command's arguments, named as Butane names them.
#[derive(clap::Args)]
pub struct Args {
    /// Allow embedding local files from this directory.
    #[arg(short = 'd', long = "files-dir")]
    files_dir: Option<PathBuf>,
    /// Write the MachineConfig to this file instead of standard output.
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
    /// The Butane config (standard input when absent or `-`).
    input: Option<PathBuf>,
}

fn fail(msg: String) -> u8 {
    eprint!("{msg}");
    1
}

/// Runs the command (`strict`: fail on any warning, the global `--strict`); `Err` holds the
/// exit code after the messages were printed.
pub fn run(a: &Args, strict: bool) -> Result<(), u8> {
    let (name, data) = match a.input.as_deref().filter(|p| !load::stdin::is_stdin(p)) {
        Some(p) => {
            let shown = p.display().to_string();
            let data = std::fs::read(p)
                .map_err(|e| fail(format!("failed to open {shown}: {}\n", go_error(&e))))?;
            (shown, data)
        }
        None => {
            let mut data = Vec::new();
            std::io::stdin()
                .read_to_end(&mut data)
                .map_err(|e| fail(format!("failed to read /dev/stdin: {e}\n")))?;
            ("<stdin>".to_string(), data)
        }
    };
    let files: Option<FileSet> = match &a.files_dir {
        Some(dir) => Some(load::butane::read_files_dir(dir).map_err(|e| fail(format!("{e}\n")))?),
        None => None,
    };
    let source = String::from_utf8_lossy(&data);
    let translated = butane::translate(&data, files.as_ref(), Options { strict });
    let mc = match translated {
        Ok(t) => {
            eprint!("{}", t.report.render(&name, &source));
            t.machine_config
        }
        Err(f) => return Err(fail(f.stderr(&name, &source))),
    };
    let yaml = emit::to_yaml(&mc);
    match &a.output {
        Some(p) => std::fs::write(p, yaml.as_bytes()).map_err(|e| {
            fail(format!(
                "failed to open {}: {}\n",
                p.display(),
                go_error(&e)
            ))
        }),
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(yaml.as_bytes())
                .and_then(|()| out.flush())
                .map_err(|e| fail(format!("Failed to write config to /dev/stdout: {e}\n")))
        }
    }
}

/// An I/O error worded as Go's `os` package words it (`open x: no such file or directory`
/// reads `no such file or directory` here; the caller names the file).
fn go_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}
