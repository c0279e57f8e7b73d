//! Butane configs of the `openshift` variant translated into MachineConfigs exactly as Butane
//! v0.29 translates them: the same MachineConfig, the same warnings and errors, located by
//! Butane path and source position and worded as Butane words them.
//!
//! Pure: the config's bytes and an in-memory [`FileSet`] for `local:` contents and trees in,
//! a MachineConfig (as the JSON value Butane prints) and a [`Report`] out.
//!
//! - [`version`]: the spec versions and what follows from one (Ignition version, compression).
//! - [`locate`]: line and column of each node by Butane path.
//! - [`scalar`]: scalars as yaml.v3 decodes them into bool, int and string fields.
//! - [`schema`]: the fields, their Ignition names and types; unknown keys, type errors.
//! - [`contents`]: contents as `data:` URLs (gzip when shorter).
//! - [`sugar`]: `boot_device`, `with_mount_unit`, Ignition's merge of the rendered parts.
//! - [`checks`]: Butane's source checks.
//! - [`generated`]: Ignition's checks of the result (duplicates first, then each type's own).
//! - [`files`]: the files directory in memory.
//! - [`report`]: findings as Butane prints them.
//! - [`emit`]: the YAML Butane prints.

pub mod checks;
pub mod contents;
pub mod emit;
pub mod files;
pub mod generated;
pub mod locate;
pub mod report;
pub mod scalar;
pub mod schema;
pub mod sugar;
mod translate;
pub mod version;

pub use files::{FileSet, LocalFile};
pub use report::{Entry, Report, Severity};
pub use version::SpecVersion;

use serde_json::Value;

/// How to translate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Fail on any warning (`--strict`).
    pub strict: bool,
}

/// A successful translation.
#[derive(Debug, Clone, PartialEq)]
pub struct Translated {
    /// The MachineConfig, as the JSON value of the YAML Butane prints.
    pub machine_config: Value,
    /// Warnings.
    pub report: Report,
}

/// A failed translation: the findings and the last line Butane prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Errors and warnings, located.
    pub report: Report,
    /// `Error translating config: source config is invalid`, and the like.
    pub message: String,
}

impl Failure {
    /// Everything Butane writes to stderr, the input named `file_name`.
    pub fn stderr(&self, file_name: &str, source: &str) -> String {
        format!(
            "{}{}\n",
            self.report.render(file_name, source),
            self.message
        )
    }
}

fn fail(message: impl Into<String>) -> Failure {
    Failure {
        report: Report::default(),
        message: format!("Error translating config: {}", message.into()),
    }
}

/// The text of the first YAML document: up to a `---` after content, or a `...`.
fn first_document(text: &str) -> &str {
    let mut content = false;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let marker = |m: &str| {
            line.strip_prefix(m)
                .is_some_and(|r| r.is_empty() || r.starts_with(|c: char| c.is_whitespace()))
        };
        if marker("...") || (content && marker("---")) {
            return &text[..offset];
        }
        let trimmed = line.trim();
        if !trimmed.is_empty() && !trimmed.starts_with('#') && !marker("---") {
            content = true;
        }
        offset += line.len();
    }
    text
}

/// `line L column C` (1-based) at the start of `s`: L.
fn mark_line(s: &str) -> Option<usize> {
    s.strip_prefix("line ")?.split(' ').next()?.parse().ok()
}

/// A libyaml syntax error (`<problem> at line L column C[, <context>[ at line L column C]]`)
/// worded as yaml.v3 words it: the line is the context's (0-based) when there is one, else
/// the problem's, and one more for scanner errors; no line when it comes out 0.
fn syntax_error(msg: &str) -> Option<String> {
    let (head, context) = match msg.find(", while ") {
        Some(i) => (&msg[..i], Some(&msg[i + 2..])),
        None => (msg, None),
    };
    let (problem, problem_line) = match head.find(" at line ") {
        Some(i) => (&head[..i], mark_line(&head[i + 4..])),
        None => (head, None),
    };
    // Only libyaml's errors carry marks.
    problem_line?;
    let (context_text, context_line) = match context {
        Some(c) => match c.find(" at line ") {
            Some(i) => (Some(&c[..i]), mark_line(&c[i + 4..])),
            None => (Some(c), None),
        },
        None => (None, None),
    };
    let scanner = match context_text {
        Some(c) => {
            c.starts_with("while scanning")
                || c.starts_with("while parsing a tag")
                || c.starts_with("while parsing a %TAG")
        }
        None => matches!(
            problem,
            "block sequence entries are not allowed in this context"
                | "mapping keys are not allowed in this context"
                | "mapping values are not allowed in this context"
        ),
    };
    let p0 = problem_line.map_or(0, |l| l.saturating_sub(1));
    // A context mark equal to the problem's is not printed.
    let c0 = match (context_text, context_line) {
        (Some(_), Some(l)) => l.saturating_sub(1),
        (Some(_), None) => p0,
        (None, _) if scanner => p0,
        (None, _) => 0,
    };
    let line = if c0 != 0 { c0 } else { p0 };
    let line = if line != 0 {
        line + usize::from(scanner)
    } else {
        0
    };
    Some(if line != 0 {
        format!("line {line}: {problem}")
    } else {
        problem.to_string()
    })
}

/// Translates a Butane config. `files` is the files directory (`--files-dir`), `None` when
/// none was given.
pub fn translate(
    input: &[u8],
    files: Option<&FileSet>,
    options: Options,
) -> Result<Translated, Failure> {
    let text = String::from_utf8_lossy(input);
    // Butane decodes the first document only; a byte order mark is no content.
    let text = first_document(text.trim_start_matches('\u{feff}'));
    let loc = locate::locate(text);
    // Butane reads `variant` and `version` first: keys given twice at the top fail that.
    let root_dups = loc.duplicate_keys("");
    if !root_dups.is_empty() {
        let mut msg = String::from("Error unmarshaling yaml: yaml: unmarshal errors:");
        for (key, first, second) in root_dups {
            msg.push_str(&format!(
                "\n  line {second}: mapping key {key:?} already defined at line {first}"
            ));
        }
        return Err(fail(msg));
    }
    // Explicit tags on values: kept by path for the decoding rules, blanked for the parser.
    let mut tags = std::collections::HashMap::new();
    let mut untagged: Vec<String> = text.split('\n').map(str::to_string).collect();
    for (path, pos) in loc.values() {
        let Some(line) = untagged.get_mut(pos.line - 1) else {
            continue;
        };
        if let Some((tag, _)) = scalar::tag_at(line, pos.column - 1) {
            let start = pos.column - 1;
            line.replace_range(start..start + tag.len(), &" ".repeat(tag.len()));
            tags.insert(path.to_string(), tag);
        }
    }
    let untagged = untagged.join("\n");
    let root: Value = match serde_yaml_ng::from_str(&untagged) {
        Ok(v) => v,
        Err(e) => {
            let msg = e.to_string();
            let text = match syntax_error(&msg) {
                Some(t) => t,
                None => {
                    let line = e
                        .location()
                        .map_or(String::new(), |l| format!("line {}: ", l.line()));
                    let msg = msg.split(" at line ").next().unwrap_or(&msg);
                    format!("{line}{msg}")
                }
            };
            return Err(fail(format!("Error unmarshaling yaml: yaml: {text}")));
        }
    };
    let scalar = |k: &str| match root.get(k) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Null) | None => None,
        Some(other) => Some(other.to_string()),
    };
    let variant = scalar("variant").unwrap_or_default();
    if variant.is_empty() {
        return Err(fail("error parsing variant; must be specified"));
    }
    let version_text = scalar("version").unwrap_or_default();
    if semver::Version::parse(&version_text).is_err() {
        return Err(fail("error parsing version; must be a valid semver"));
    }
    let version = match SpecVersion::parse(&version_text) {
        Some(v) if variant == "openshift" => v,
        _ if variant == "rhcos" => {
            return Err(fail(
                "rhcos variant has been removed; use openshift variant instead: https://coreos.github.io/butane/upgrading-openshift/",
            ))
        }
        _ => return Err(fail(format!("No translator exists for variant {variant} with version {version_text}"))),
    };
    let strip = |p: &str| p.strip_prefix("$.").unwrap_or("").to_string();
    let value_pos = |path: &str| {
        let mut p = strip(path);
        loop {
            if let Some(pos) = loc.value(&p) {
                return Some(pos);
            }
            match p.rsplit_once('.') {
                Some((parent, _)) => p = parent.to_string(),
                None => return loc.value("").or(Some(locate::Pos { line: 1, column: 1 })),
            }
        }
    };
    let lines: Vec<&str> = text.split('\n').collect();
    let scalars: schema::ScalarSource = loc
        .values()
        .filter_map(|(path, pos)| {
            let line = lines.get(pos.line - 1)?;
            let column = scalar::tag_at(line, pos.column - 1).map_or(pos.column - 1, |t| t.1);
            let token = scalar::token_at(line, column, loc.flow_items.contains(path))?;
            Some((path.to_string(), token))
        })
        .collect();
    let dup_keys: schema::DuplicateKeys = loc
        .mappings_with_duplicates()
        .into_iter()
        .map(|p| {
            let pairs = loc.duplicate_keys(&p);
            (p, pairs)
        })
        .collect();
    match translate::run(&root, &scalars, &dup_keys, &tags, version, files) {
        translate::Step::Fatal(msg) => Err(fail(format!("yaml: {msg}"))),
        translate::Step::Types(lines) => {
            let mut msg = String::from("yaml: unmarshal errors:");
            for (path, line, m) in lines {
                let line = line.unwrap_or_else(|| value_pos(&path).map_or(0, |p| p.line));
                msg.push_str(&format!("\n  line {line}: {m}"));
            }
            Err(fail(msg))
        }
        translate::Step::Done {
            findings,
            output,
            failure,
        } => {
            let entries = findings
                .into_iter()
                .map(|(path, message, warning)| {
                    let unused = message.starts_with("unused key ");
                    let pos = if unused {
                        loc.key(&strip(&path))
                    } else {
                        value_pos(&path)
                    };
                    Entry {
                        severity: if warning {
                            Severity::Warning
                        } else {
                            Severity::Error
                        },
                        path,
                        pos,
                        message,
                    }
                })
                .collect();
            let report = Report { entries };
            match (failure, output) {
                (None, Some(mc)) => {
                    if options.strict && !report.entries.is_empty() {
                        return Err(Failure {
                            report,
                            message: "Config produced warnings and --strict was specified".into(),
                        });
                    }
                    Ok(Translated {
                        machine_config: mc,
                        report,
                    })
                }
                (f, _) => Err(Failure {
                    report,
                    message: format!(
                        "Error translating config: {}",
                        f.unwrap_or("source config is invalid")
                    ),
                }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const HEAD: &str = "variant: openshift\nversion: 4.15.0\nmetadata:\n  name: 99-worker-x\n  labels:\n    machineconfiguration.openshift.io/role: worker\n";

    fn run(body: &str, files: Option<&FileSet>) -> Result<Translated, Failure> {
        translate(
            format!("{HEAD}{body}").as_bytes(),
            files,
            Options::default(),
        )
    }

    #[test]
    fn inline_contents_become_the_shortest_data_url() {
        let Ok(t) = run("storage:\n  files:\n    - path: /etc/a\n      mode: 0644\n      contents:\n        inline: a=1\n", None) else {
            panic!("translates");
        };
        let file = &t.machine_config["spec"]["config"]["storage"]["files"][0];
        assert_eq!(
            file["contents"],
            json!({"compression": "", "source": "data:,a%3D1"})
        );
        assert_eq!(file["mode"], json!(420));
        assert_eq!(
            t.machine_config["spec"]["config"]["ignition"]["version"],
            json!("3.4.0")
        );
    }

    #[test]
    fn gzip_is_taken_only_when_strictly_shorter_with_its_four_bytes() {
        let short = contents::make_data_url(b"x", None, true);
        assert_eq!(
            short,
            contents::DataUrl {
                source: "data:,x".into(),
                compression: Some("")
            }
        );
        let set = contents::make_data_url(b"x", Some("gzip"), true);
        assert_eq!(set.compression, None);
        let off = contents::make_data_url(&[b'a'; 4000], None, false);
        assert_eq!(off.compression, Some(""));
    }

    #[test]
    fn local_files_need_a_files_dir_and_stay_inside_it() {
        let body = "storage:\n  files:\n    - path: /etc/a\n      contents:\n        local: ../a\n";
        let Err(f) = run(body, None) else {
            panic!("fails")
        };
        assert!(f.report.entries[0].message.contains("-d/--files-dir"));
        let set = FileSet::new("{files}");
        let Err(f) = run(body, Some(&set)) else {
            panic!("fails")
        };
        assert_eq!(
            f.report.entries[0].message,
            "local file path traverses outside the files directory"
        );
        assert_eq!(f.report.entries[0].path, "$.storage.files.0.contents.local");
    }

    #[test]
    fn trees_give_modes_by_the_execute_bit() {
        let mut set = FileSet::new("{files}");
        set.insert("t/bin/run", b"#!/bin/sh\n".to_vec(), 0o755);
        set.insert("t/etc/conf", b"x\n".to_vec(), 0o600);
        let Ok(t) = run(
            "storage:\n  trees:\n    - local: t\n      path: /usr/local\n",
            Some(&set),
        ) else {
            panic!("translates");
        };
        let files = &t.machine_config["spec"]["config"]["storage"]["files"];
        assert_eq!(files[0]["path"], json!("/usr/local/bin/run"));
        assert_eq!(files[0]["mode"], json!(0o755));
        assert_eq!(files[1]["mode"], json!(0o644));
    }

    #[test]
    fn unknown_keys_warn_and_fail_under_strict() {
        let input = format!("{HEAD}openshift:\n  fipss: true\n");
        let Ok(t) = translate(input.as_bytes(), None, Options::default()) else {
            panic!("warns")
        };
        assert_eq!(t.report.entries[0].message, "unused key fipss");
        assert_eq!(
            t.report.entries[0].pos,
            Some(locate::Pos { line: 8, column: 3 })
        );
        let Err(f) = translate(input.as_bytes(), None, Options { strict: true }) else {
            panic!("fails")
        };
        assert_eq!(
            f.message,
            "Config produced warnings and --strict was specified"
        );
    }

    #[test]
    fn versions_follow_the_spec() {
        assert_eq!(
            SpecVersion::parse("4.13.0").map(SpecVersion::ignition_version),
            Some("3.2.0")
        );
        assert_eq!(
            SpecVersion::parse("4.19.0").map(SpecVersion::ignition_version),
            Some("3.5.0")
        );
        assert!(SpecVersion::parse("4.22.1").is_none());
        assert!(SpecVersion::parse("4.7.0").is_none());
        let Err(f) = translate(
            b"variant: openshift\nversion: 4.22.1\n",
            None,
            Options::default(),
        ) else {
            panic!()
        };
        assert_eq!(f.message, "Error translating config: No translator exists for variant openshift with version 4.22.1");
    }

    #[test]
    fn mount_units_escape_their_paths() {
        assert_eq!(
            sugar::unit_name_path_escape("/var/lib/containers"),
            "var-lib-containers"
        );
        assert_eq!(
            sugar::unit_name_path_escape("/dev/disk/by-partlabel/x"),
            "dev-disk-by\\x2dpartlabel-x"
        );
    }

    #[test]
    fn the_yaml_starts_with_butanes_comment() {
        let Ok(t) = run("", None) else {
            panic!("translates")
        };
        let yaml = emit::to_yaml(&t.machine_config);
        assert!(yaml.starts_with("# Generated by Butane; do not edit\napiVersion: machineconfiguration.openshift.io/v1\n"), "{yaml}");
        let back: serde_json::Value = serde_yaml_ng::from_str(&yaml).unwrap_or_default();
        assert_eq!(back, t.machine_config);
    }

    #[test]
    fn yaml_1_1_booleans_fill_bool_fields_and_stay_text_elsewhere() {
        let Ok(t) = run(
            "openshift:\n  fips: yes\n  kernel_arguments: [yes, 0x10, True]\n  kernel_type: \"realtime\"\n",
            None,
        ) else {
            panic!("translates")
        };
        let spec = &t.machine_config["spec"];
        assert_eq!(spec["fips"], json!(true));
        assert_eq!(spec["kernelArguments"], json!(["yes", "0x10", "True"]));
        let Err(f) = run("openshift:\n  fips: \"true\"\n", None) else {
            panic!("fails")
        };
        assert_eq!(
            f.message,
            "Error translating config: yaml: unmarshal errors:\n  line 8: cannot unmarshal !!str `true` into bool"
        );
        let Err(f) = run(
            "storage:\n  files:\n    - path: /etc/a\n      mode: '0644'\n",
            None,
        ) else {
            panic!("fails")
        };
        assert!(
            f.message
                .ends_with("cannot unmarshal !!str `0644` into int"),
            "{}",
            f.message
        );
    }

    #[test]
    fn duplicate_entries_are_refused_where_written() {
        let body = "openshift:\n  kernel_arguments: [a, b, a]\n  extensions: [x, x]\npasswd:\n  users:\n    - name: core\n      ssh_authorized_keys: [k1, k1]\nsystemd:\n  units:\n    - name: a.service\n      dropins:\n        - name: x.conf\n        - name: x.conf\n";
        let Err(f) = run(body, None) else {
            panic!("fails")
        };
        assert_eq!(
            f.message,
            "Error translating config: config generated was invalid"
        );
        let found: Vec<(&str, &str)> = f
            .report
            .entries
            .iter()
            .map(|e| (e.path.as_str(), e.message.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                ("$.openshift.kernel_arguments.2", "duplicate entry defined"),
                ("$.openshift.extensions.1", "duplicate entry defined"),
                (
                    "$.passwd.users.0.ssh_authorized_keys.1",
                    "duplicate entry defined"
                ),
                ("$.systemd.units.0.dropins.1", "duplicate entry defined"),
            ]
        );
        assert_eq!(
            f.report.entries[0].pos,
            Some(locate::Pos {
                line: 8,
                column: 28
            })
        );
    }

    #[test]
    fn cex_volumes_need_their_kernel_argument_and_no_clevis() {
        let head = HEAD.replace("4.15.0", "4.20.0");
        let luks = "storage:\n  luks:\n    - name: root\n      device: /dev/dasda2\n      cex:\n        enabled: true\n";
        let Err(f) = translate(format!("{head}{luks}").as_bytes(), None, Options::default()) else {
            panic!("fails")
        };
        assert_eq!(f.report.entries[0].path, "$.openshift.kernel_arguments");
        let clevis = format!("{head}{luks}      clevis:\n        tpm2: true\nopenshift:\n  kernel_arguments: [rd.luks.key=/etc/luks/cex.key]\n");
        let Err(f) = translate(clevis.as_bytes(), None, Options::default()) else {
            panic!("fails")
        };
        assert_eq!(f.report.entries[0].path, "$.storage.luks.0.cex");
        assert_eq!(f.report.entries[0].message, "cannot use cex with clevis");
        let boot = format!("{head}boot_device:\n  layout: s390x-virt\n  luks:\n    cex:\n      enabled: true\nopenshift:\n  kernel_arguments: [rd.luks.key=/etc/luks/cex.key]\n");
        let Ok(t) = translate(boot.as_bytes(), None, Options::default()) else {
            panic!("translates")
        };
        let luks = &t.machine_config["spec"]["config"]["storage"]["luks"][0];
        assert_eq!(luks["cex"], json!({"enabled": true}));
        assert_eq!(luks["device"], json!("/dev/disk/by-partlabel/root"));
        assert!(luks.get("clevis").is_none());
    }

    #[test]
    fn fields_of_later_specs_are_unknown_keys() {
        let body = "kernel_arguments:\n  should_exist:\n    - nosmt\n";
        let old = HEAD.replace("4.15.0", "4.12.0") + body;
        let Ok(t) = translate(old.as_bytes(), None, Options::default()) else {
            panic!("warns")
        };
        assert_eq!(t.report.entries[0].message, "unused key kernel_arguments");
        let Err(f) = run(body, None) else {
            panic!("fails")
        };
        assert_eq!(f.report.entries[0].path, "$.kernel_arguments");
    }
}
