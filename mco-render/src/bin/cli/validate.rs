//! `mco-render validate PATH...`: every MachineConfig checked on its own (or, with
//! `--cluster-dir`, every object reviewed as the admission webhook does), printed for a
//! terminal, as GitHub Actions annotations, or as JSON.

use super::output::{data_text, Data};
use super::{write_stdout, Failure};
use mco_render::admission;
use mco_render::load::LoadError;
use mco_render::manifests::Manifests;
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
    /// The JSON report as YAML.
    Yaml,
}

/// How bad a finding is.
#[derive(Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Severity {
    Error,
    Warning,
}

/// One problem, where it is.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Finding {
    pub(crate) severity: Severity,
    /// The manifest file.
    pub(crate) file: String,
    /// The line of the field concerned when known, else the line the object's document
    /// starts on.
    pub(crate) line: usize,
    /// The object's kind (`MachineConfig`, `KubeletConfig`, ...).
    pub(crate) kind: String,
    /// The object's name.
    pub(crate) name: String,
    /// What is wrong, as the text format prints it.
    pub(crate) message: String,
    /// The text format's line (`error: FILE: message`).
    #[serde(skip)]
    pub(crate) text: String,
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
    let title = format!("{} {}", f.kind, f.name);
    let title = match title.trim() {
        "" => String::new(),
        t => format!(",title={}", escape_property(t)),
    };
    format!(
        "::{} file={},line={}{title}::{}",
        f.severity.as_str(),
        escape_property(&f.file),
        f.line,
        escape_data(&f.message)
    )
}

/// Exit 0 without errors (warnings allowed), 1 with errors (a manifest that does not decode
/// among them), 2 when nothing can be read.
pub(crate) fn cmd_validate(paths: &[PathBuf], format: ValidateFormat) -> Result<(), Failure> {
    let m = match mco_render::load::read_manifests_listed(paths) {
        Ok((m, skipped)) => {
            // Links are followed once; a cycle or a link that cannot be followed is said.
            for s in skipped.iter().filter(|s| s.is_warning()) {
                eprintln!("warning: {s}");
            }
            m
        }
        Err(e) => {
            let findings = read_findings(e)?;
            return print_findings(&findings, 0, "MachineConfigs checked", format);
        }
    };
    let mut findings = notice_findings(&m);
    if m.machine_configs.is_empty() && findings.is_empty() {
        return Err(Failure::input("no MachineConfig found in the manifests"));
    }
    for (file, mc) in &m.machine_configs {
        let line = m.line_of(file, "MachineConfig", mc.name()).unwrap_or(1);
        let (errs, warns) = admission::check_machine_config(mc);
        let lints = admission::lint::lint_machine_config(mc)
            .into_iter()
            .map(|l| l.message);
        let errs = errs.into_iter().map(|l| (Severity::Error, l));
        let warns = warns
            .into_iter()
            .chain(lints)
            .map(|l| (Severity::Warning, l));
        findings.extend(errs.chain(warns).map(|(severity, message)| Finding {
            severity,
            file: file.clone(),
            line: message_line(&m, file, mc.name(), &message).unwrap_or(line),
            kind: "MachineConfig".into(),
            name: mc.name().to_string(),
            text: format!("{}: {file}: {message}", severity.as_str()),
            message,
        }));
    }
    print_findings(
        &findings,
        m.machine_configs.len(),
        "MachineConfigs checked",
        format,
    )
}

/// The line of the field a MachineConfig's finding names (`<name>: spec.config...: what`).
fn message_line(m: &Manifests, file: &str, name: &str, message: &str) -> Option<usize> {
    let rest = message.strip_prefix(name)?.strip_prefix(": ")?;
    let (path, _) = rest.split_once(": ")?;
    if !path.starts_with("spec") || path.contains(' ') {
        return None;
    }
    let pointer = mco_render::manifests::positions::pointer_of_path(path);
    m.field_line(file, "MachineConfig", name, &pointer)
}

/// The severity of what reading noticed: a warning, an error under `--strict`.
fn notice_severity() -> Severity {
    if super::reading::strict() {
        Severity::Error
    } else {
        Severity::Warning
    }
}

/// What reading `m` noticed, as findings at the lines of their fields.
pub(crate) fn notice_findings(m: &Manifests) -> Vec<Finding> {
    let severity = notice_severity();
    m.notices
        .iter()
        .map(|n| Finding {
            severity,
            file: n.file.clone(),
            line: m.notice_line(n),
            kind: n.kind.clone(),
            name: n.name.clone(),
            message: n.message.clone(),
            text: format!("{}: {}", severity.as_str(), super::reading::describe(m, n)),
        })
        .collect()
}

/// A manifest that does not decode (a YAML or JSON error, a type error, a Butane config that
/// does not translate) as error findings at its lines; any other read failure as it is.
pub(crate) fn read_findings(e: LoadError) -> Result<Vec<Finding>, Failure> {
    let finding = |file: &str, line: usize, message: String| Finding {
        severity: Severity::Error,
        file: file.to_string(),
        line,
        kind: String::new(),
        name: String::new(),
        text: format!("error: {file}:{line}: {message}"),
        message,
    };
    match e {
        LoadError::Manifest(e) => Ok(vec![finding(&e.file, e.line, e.message)]),
        LoadError::Butane { path, errors, .. } => Ok(errors
            .into_iter()
            .map(|(line, message)| finding(&path, line, message))
            .collect()),
        other => Err(Failure::input(other.to_string())),
    }
}

/// A finding of the admission review of `object` (one of `under`'s), at its document.
pub(crate) fn review_finding(
    under: &Manifests,
    object: &serde_json::Value,
    severity: Severity,
    message: &str,
) -> Finding {
    let text = |key: &str| {
        object
            .pointer(key)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let (kind, name) = (text("/kind"), text("/metadata/name"));
    let location = under
        .locations
        .iter()
        .find(|l| l.kind == kind && l.name == name);
    Finding {
        severity,
        file: location.map(|l| l.file.clone()).unwrap_or_default(),
        line: location.map_or(1, |l| l.line),
        kind,
        name,
        message: message.to_string(),
        text: format!("{}: {message}", severity.as_str()),
    }
}

impl Severity {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// Prints findings in `format` with a summary (`{checked} {what}: N errors, M warnings`); fails
/// with exit code 1 when there are errors.
pub(crate) fn print_findings(
    findings: &[Finding],
    checked: usize,
    what: &str,
    format: ValidateFormat,
) -> Result<(), Failure> {
    let errors = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    let warnings = findings.len() - errors;
    let summary = format!("{checked} {what}: {errors} errors, {warnings} warnings");
    let failed = || Failure {
        code: 1,
        lines: Vec::new(),
    };
    match format {
        ValidateFormat::Text => {
            for f in findings.iter().filter(|f| f.severity == Severity::Warning) {
                eprintln!("{}", f.text);
            }
            if errors > 0 {
                let mut lines: Vec<String> = findings
                    .iter()
                    .filter(|f| f.severity == Severity::Error)
                    .map(|f| f.text.clone())
                    .collect();
                lines.push(summary);
                return Err(Failure { code: 1, lines });
            }
            outln!("{summary}");
        }
        ValidateFormat::Github => {
            for f in findings {
                outln!("{}", annotation(f));
            }
            outln!("{summary}");
            if errors > 0 {
                return Err(failed());
            }
        }
        ValidateFormat::Json | ValidateFormat::Yaml => {
            let report = ValidateReport {
                checked,
                errors,
                warnings,
                findings,
            };
            let data = match format {
                ValidateFormat::Yaml => Data::Yaml,
                _ => Data::Json,
            };
            out!("{}", data_text(&report, data)?);
            if errors > 0 {
                return Err(failed());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_escape_what_github_reads_as_syntax() {
        let f = Finding {
            severity: Severity::Warning,
            file: "clusters/a,b:c.yaml".into(),
            line: 7,
            kind: "MachineConfig".into(),
            name: "99-x".into(),
            message: "100% wrong\nsecond line".into(),
            text: String::new(),
        };
        assert_eq!(
            annotation(&f),
            "::warning file=clusters/a%2Cb%3Ac.yaml,line=7,title=MachineConfig 99-x::100%25 wrong%0Asecond line"
        );
    }
}
