//! `kubectl-mco`: the kubectl plugin (`kubectl mco status`, `--watch`, `resume`, `rollback`,
//! `retry`, `force`). Put it on `PATH`; kubectl finds it.

use clap::Parser;
use mco_k8s::plugin::{run, Cli};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let code = runtime.block_on(run(cli));
    ExitCode::from(u8::try_from(code).unwrap_or(2))
}
