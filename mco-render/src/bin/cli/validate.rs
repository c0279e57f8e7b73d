//! `mco-render validate PATH...`: every MachineConfig checked on its own, printed for a
//! terminal, as GitHub Actions annotations, or as JSON.

use super::{load, to_json, write_stdout, Failure};
use mco_render::admission;
use serde::Serialize;
use std::path::PathBuf;

/// How findings are printed.
#[derive(Clone, Copy, Default, clap::ValueEnum, PartialEq, Eq)]
pub(crate) enum ValidateFormat {
    /// `error: FILE: NAME: PATH: message` lines on stderr, a summary on stdout.
    #[default]
    Text,
    /// GitHub Actions workflow commands on stdout (`::error file=...,line=...::...`): the
    /// findings show on the pull request's files.
    Github,
    /// One JSON object on stdout: the findings and the counts.
    Json,
}

/// How bad a finding is.
#[derive(Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Severity {
    Error,
    Warning,
}

/// One problem, where it is.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Finding {
    severity: Severity,
    /// The manifest file.
    file: String,
    /// The line the MachineConfig's document starts on.
    line: usize,
    machine_config: String,
    /// `NAME: JSON path: what is wrong`, as the text format prints it.
    message: String,
}

/// The JSON report.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ValidateReport<'a> {
    checked: usize,
    errors: usize,
    warnings: usize,
    findings: &'a [Finding],
}

/// Escapes a GitHub workflow command's message (`%`, CR, LF).
fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a workflow command's property value (the message's escapes, `:` and `,`).
fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

fn annotation(f: &Finding) -> String {
    let level = match f.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    format!(
        "::{level} file={},line={},title={}::{}",
        escape_property(&f.file),
        f.line,
        escape_property(&format!("MachineConfig {}", f.machine_config)),
        escape_data(&f.message)
    )
}

/// Exit 0 without errors (warnings allowed), 1 with errors, 2 when nothing can be read.
pub(crate) fn cmd_validate(paths: &[PathBuf], format: ValidateFormat) -> Result<(), Failure> {
    let m = load(paths)?;
    if m.machine_configs.is_empty() {
        return Err(Failure::input("no MachineConfig found in the manifests"));
    }
    let mut findings = Vec::new();
    for (file, mc) in &m.machine_configs {
        let line = m.line_of(file, "MachineConfig", mc.name()).unwrap_or(1);
        let (errs, warns) = admission::check_machine_config(mc);
        let errs = errs.into_iter().map(|l| (Severity::Error, l));
        let warns = warns.into_iter().map(|l| (Severity::Warning, l));
        findings.extend(errs.chain(warns).map(|(severity, message)| Finding {
            severity,
            file: file.clone(),
            line,
            machine_config: mc.name().to_string(),
            message,
        }));
    }
    let errors = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    let warnings = findings.len() - errors;
    let summary = format!(
        "{} MachineConfigs checked: {errors} errors, {warnings} warnings",
        m.machine_configs.len()
    );
    let failed = || Failure {
        code: 1,
        lines: Vec::new(),
    };
    match format {
        ValidateFormat::Text => {
            let line = |f: &Finding| {
                let level = match f.severity {
                    Severity::Error => "error",
                    Severity::Warning => "warning",
                };
                format!("{level}: {}: {}", f.file, f.message)
            };
            for f in findings.iter().filter(|f| f.severity == Severity::Warning) {
                eprintln!("{}", line(f));
            }
            if errors > 0 {
                let mut lines: Vec<String> = findings
                    .iter()
                    .filter(|f| f.severity == Severity::Error)
                    .map(line)
                    .collect();
                lines.push(summary);
                return Err(Failure { code: 1, lines });
            }
            outln!("{summary}");
        }
        ValidateFormat::Github => {
            for f in &findings {
                outln!("{}", annotation(f));
            }
            outln!("{summary}");
            if errors > 0 {
                return Err(failed());
            }
        }
        ValidateFormat::Json => {
            let report = ValidateReport {
                checked: m.machine_configs.len(),
                errors,
                warnings,
                findings: &findings,
            };
            outln!("{}", to_json(&report)?);
            if errors > 0 {
                return Err(failed());
            }
        }
    }
    Ok(())
}
