//! `mco-render`: render, validate, convert and compare MachineConfigs offline.

use clap::{Parser, Subcommand, ValueEnum};
use mco_ignition::SpecVersion;
use mco_render::admission::{self, ClusterView, Operation, ReviewOptions};
use mco_render::api::{ControllerConfigSpec, MachineConfig, MachineConfigPool};
use mco_render::controllers::generate::upstream_json;
use mco_render::controllers::render_sync::check_transition;
use mco_render::controllers::templates::{generate_template_machine_configs, TemplateTree};
use mco_render::controllers::validation_overrides::validation_overrides_in;
use mco_render::load;
use mco_render::manifests::expand::{expand_manifests, template_options, ClusterOptions};
use mco_render::manifests::Manifests;
use mco_render::plan::reconcile::{RenderedInput, StorageOverride};
use mco_render::plan::{self, MachineConfiguration};
use mco_render::release::Release;
use mco_render::render::{render_pool, render_pool_owned, NameScheme, RenderOptions, Rendered};
use mco_render::serve;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[path = "cli/butane.rs"]
mod butane;

/// `print!` to standard output; a reader that went away (`mco-render render | head`) ends
/// the program quietly, as it would a C tool, instead of a panic.
macro_rules! out {
    ($($arg:tt)*) => {
        write_stdout(&format!($($arg)*))
    };
}

/// `println!` through [`out!`].
macro_rules! outln {
    ($($arg:tt)*) => {
        write_stdout(&format!("{}\n", format_args!($($arg)*)))
    };
}

fn write_stdout(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: writing the output: {e}");
        std::process::exit(2);
    }
}

#[path = "cli/build_request.rs"]
mod build_request;
#[path = "cli/certificates.rs"]
mod certificates;
#[path = "cli/check.rs"]
mod check;
#[path = "cli/completions.rs"]
mod completions;
#[path = "cli/decode.rs"]
mod decode;
#[path = "cli/man.rs"]
mod man;
#[path = "cli/output.rs"]
mod output;
#[path = "cli/reading.rs"]
mod reading;
#[path = "cli/release.rs"]
mod release;
#[path = "cli/report.rs"]
mod report;
#[path = "cli/status.rs"]
mod status;
#[path = "cli/validate.rs"]
mod validate;

/// Render MachineConfigPools exactly as the Machine Config Operator does, before anything
/// reaches a cluster.
#[derive(Parser)]
#[command(name = "mco-render", version, long_version = mco_render::about::long_version(), about, long_about = None)]
struct Cli {
    /// Warnings are errors: what kubectl apply or the API server would refuse or do otherwise
    /// in the manifests read (a kind or version not served, an unknown field, a document that
    /// is no object, an object defined in two files); for `butane`, Butane's warnings.
    #[arg(short = 's', long, global = true)]
    strict: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Format {
    Yaml,
    Json,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum DiffFormat {
    Text,
    Json,
    Yaml,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Scheme {
    /// Upstream's md5-based names (byte-identical to the cluster's).
    Upstream,
    /// sha256 over the same bytes.
    Sha256,
}

#[derive(Subcommand)]
enum Command {
    /// Render every pool found in the manifests (or only --pool) into its rendered MachineConfig.
    Render {
        /// Only this pool.
        #[arg(long)]
        pool: Option<String>,
        /// Output format (JSON: one `v1 List`; --out-dir: one object per file).
        #[arg(short = 'o', long = "output", value_enum, default_value = "yaml")]
        output: Format,
        /// Write `<pool>.yaml` / `<pool>.json` here instead of printing, and remove the
        /// rendered configs here of pools that no longer render (not with --pool).
        #[arg(long)]
        out_dir: Option<PathBuf>,
        /// With --out-dir: write nothing, exit 1 with a diff when the folder is not up to date.
        #[arg(long, requires = "out_dir")]
        check: bool,
        /// Controller version stamped on the output; generated inputs must carry it. Left at
        /// its default on a cluster dump, the one its rendered configs carry.
        #[arg(long, default_value = mco_render::CONTROLLER_VERSION)]
        controller_version: String,
        /// The MCO release to render as (4.14 to 4.22), whose controller names the rendered
        /// configs; default: the release the manifests' ControllerConfig or rendered configs
        /// name (a cluster dump), else the newest.
        #[arg(long)]
        release: Option<Release>,
        /// How to name rendered configs.
        #[arg(long, value_enum, default_value = "upstream")]
        name_scheme: Scheme,
        /// A folder of role templates: render the template controller's MachineConfigs from
        /// the manifests' ControllerConfig and include them.
        #[arg(long)]
        templates: Option<PathBuf>,
        /// Files or folders of YAML/JSON manifests (`-`: standard input).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Print the template controller's MachineConfigs (00-<role>, 01-<role>-container-runtime,
    /// 01-<role>-kubelet, ...) rendered from a folder of templates and a ControllerConfig.
    Templates {
        /// The folder of templates (`<role>/<name>/<overlay>/{files,units,extensions}/...`).
        #[arg(long)]
        templates: PathBuf,
        /// Output format (JSON: one `v1 List`).
        #[arg(short = 'o', long = "output", value_enum, default_value = "yaml")]
        output: Format,
        /// Controller version stamped on the MachineConfigs.
        #[arg(long, default_value = mco_render::CONTROLLER_VERSION)]
        controller_version: String,
        /// Files or folders holding the ControllerConfig (and optionally the APIServer
        /// `cluster`, whose TLS profile the templates see); `-`: standard input.
        #[arg(required = true)]
        controller_config: Vec<PathBuf>,
    },
    /// Validate every MachineConfig; print errors and warnings with file, name and JSON path.
    ///
    /// With --cluster-dir, review each object (MachineConfig, KubeletConfig,
    /// ContainerRuntimeConfig, MachineConfigPool) against that cluster dump exactly as the
    /// admission webhook does: the same errors (exit 1) and warnings.
    Validate {
        /// A folder of the cluster's objects (pools, MachineConfigs, ControllerConfig, ...).
        #[arg(long)]
        cluster_dir: Option<PathBuf>,
        /// Minutes one node takes to drain, update and reboot, for rollout estimates.
        #[arg(long, default_value_t = 5)]
        node_minutes: u64,
        /// Controller version the cluster's generated configs carry.
        #[arg(long, default_value = mco_render::CONTROLLER_VERSION)]
        controller_version: String,
        /// The MCO release to review as (4.14 to 4.22), with --cluster-dir; default: the release the manifests' ControllerConfig or rendered configs
        /// name (a cluster dump), else the newest.
        #[arg(long)]
        release: Option<Release>,
        /// How findings are printed.
        #[arg(
            short = 'o',
            long = "output",
            alias = "format",
            value_enum,
            default_value = "text"
        )]
        format: validate::ValidateFormat,
        /// Files or folders of YAML/JSON manifests (`-`: standard input).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Preview each pool's rollout: whether its rendered config changes with CHANGE, and the
    /// schedule its RolloutPolicy (or upstream's plain rollout) gives it: canaries, soak,
    /// batches under maxUnavailable, maintenance windows, and the estimated finish.
    Schedule {
        /// A folder of the cluster's objects: pools, MachineConfigs, Nodes (optional: else the
        /// pools' machineCount), RolloutPolicies.
        #[arg(long)]
        cluster_dir: PathBuf,
        /// Only this pool.
        #[arg(long)]
        pool: Option<String>,
        /// Minutes one node takes to drain, update and reboot.
        #[arg(long, default_value_t = 5)]
        node_minutes: u64,
        /// When the rollout begins (RFC 3339); default now.
        #[arg(long)]
        now: Option<jiff::Timestamp>,
        /// Output format.
        #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
        output: DiffFormat,
        /// Controller version the cluster's rendered configs carry (left at its default, the
        /// one the dump's rendered configs carry).
        #[arg(long, default_value = mco_render::CONTROLLER_VERSION)]
        controller_version: String,
        /// The MCO release to render as (4.14 to 4.22), whose controller names the rendered
        /// configs; default: the release the manifests' ControllerConfig or rendered configs
        /// name (a cluster dump), else the newest.
        #[arg(long)]
        release: Option<Release>,
        /// Files or folders of changed or added manifests (MachineConfigs, pools, Nodes,
        /// RolloutPolicies), replacing the cluster's objects of the same kind and name (`-`:
        /// standard input).
        changes: Vec<PathBuf>,
    },
    Report(report::ReportArgs),
    Status(status::Args),
    /// Print a pool's rendered Ignition config converted to a spec version, as the server serves it.
    Ignition {
        /// Target spec version: 3.5.0, 3.4.0, 3.3.0, 3.2.0, 3.1.0 or 2.2.0.
        #[arg(long)]
        spec_version: String,
        /// The pool (required when the manifests hold several).
        #[arg(long)]
        pool: Option<String>,
        /// Controller version; generated inputs must carry it.
        #[arg(long, default_value = mco_render::CONTROLLER_VERSION)]
        controller_version: String,
        /// The MCO release to render as (4.14 to 4.22), whose controller names the rendered
        /// configs; default: the release the manifests' ControllerConfig or rendered configs
        /// name (a cluster dump), else the newest.
        #[arg(long)]
        release: Option<Release>,
        /// Files or folders of YAML/JSON manifests (`-`: standard input).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Show what changes on a node moving from OLD to NEW, and the plan: drain, reloads, reboot.
    Diff {
        /// A rendered MachineConfig file, or a folder of manifests (then --pool renders it);
        /// `-`: standard input.
        old: PathBuf,
        /// A rendered MachineConfig file, or a folder of manifests; `-`: standard input.
        new: PathBuf,
        /// The pool to render when OLD/NEW are manifest folders.
        #[arg(long)]
        pool: Option<String>,
        /// A MachineConfiguration manifest with user node disruption policies.
        #[arg(long)]
        policies: Option<PathBuf>,
        /// Output format.
        #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
        output: DiffFormat,
        /// Controller version for rendering folders.
        #[arg(long, default_value = mco_render::CONTROLLER_VERSION)]
        controller_version: String,
        /// The MCO release to render as (4.14 to 4.22), whose controller names the rendered
        /// configs; default: the release the manifests' ControllerConfig or rendered configs
        /// name (a cluster dump), else the newest.
        #[arg(long)]
        release: Option<Release>,
    },
    /// Print the MachineConfigs the KubeletConfigs, ContainerRuntimeConfigs, Image config,
    /// mirror sets, FeatureGate and Node in the manifests generate, as upstream's controllers
    /// write them.
    Generate {
        /// Output format (JSON: one `v1 List`).
        #[arg(short = 'o', long = "output", value_enum, default_value = "yaml")]
        output: Format,
        /// Controller version stamped on generated MachineConfigs.
        #[arg(long, default_value = mco_render::CONTROLLER_VERSION)]
        controller_version: String,
        /// The MCO release to generate as (4.14 to 4.22); default: the release the
        /// manifests' ControllerConfig or rendered configs name, else the newest.
        #[arg(long)]
        release: Option<Release>,
        /// Files or folders of YAML/JSON manifests: the resources, pools, the role template
        /// MachineConfigs, and optionally the FeatureGate, APIServer and Node `cluster`, the
        /// Image `cluster`, the ClusterVersion `version` and the mirror sets (`-`: standard
        /// input).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Translate a Butane config (`variant: openshift`) into a MachineConfig, as Butane does.
    Butane(butane::Args),
    /// The MachineOSBuild, ConfigMaps, Secrets and Job the build controller creates for a
    /// MachineOSConfig (on-cluster image layering), as a `List`.
    BuildRequest(build_request::Args),
    Completions(completions::Args),
    Man(man::Args),
    /// Print the documents of manifest files as kubectl reads them (YAML 1.1, as
    /// sigs.k8s.io/yaml decodes it: `0644` is 420, `yes` is true), as a `v1` `List`.
    Decode(decode::Args),
    /// Print the certificates of CA bundles (PEM files, or the ControllerConfig of manifests or
    /// a cluster dump) as the cluster records them in `status.controllerCertificates`, with
    /// their expiry.
    Certificates(certificates::Args),
}

/// A failure the user must fix: printed on stderr, exit code 1 (2 for unreadable input).
struct Failure {
    code: u8,
    lines: Vec<String>,
}

impl Failure {
    fn input(msg: impl Into<String>) -> Self {
        Failure {
            code: 2,
            lines: vec![msg.into()],
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    reading::set_strict(cli.strict);
    let result = match cli.command {
        Command::Render {
            pool,
            output,
            out_dir,
            check,
            controller_version,
            release,
            name_scheme,
            templates,
            paths,
        } => cmd_render(
            &paths,
            pool.as_deref(),
            output,
            out_dir.as_deref().map(|d| (d, check)),
            (&controller_version, release),
            name_scheme,
            templates.as_deref(),
        ),
        Command::Templates {
            templates,
            output,
            controller_version,
            controller_config,
        } => cmd_templates(&templates, &controller_config, output, &controller_version),
        Command::Validate {
            cluster_dir: None,
            paths,
            format,
            ..
        } => validate::cmd_validate(&paths, format),
        Command::Validate {
            cluster_dir: Some(dir),
            node_minutes,
            controller_version,
            release,
            paths,
            format,
        } => cmd_review(
            &dir,
            &paths,
            node_minutes,
            (&controller_version, release),
            format,
        ),
        Command::Ignition {
            spec_version,
            pool,
            controller_version,
            release,
            paths,
        } => cmd_ignition(
            &paths,
            pool.as_deref(),
            &spec_version,
            (&controller_version, release),
        ),
        Command::Diff {
            old,
            new,
            pool,
            policies,
            output,
            controller_version,
            release,
        } => cmd_diff(
            &old,
            &new,
            pool.as_deref(),
            policies.as_deref(),
            output,
            (&controller_version, release),
        ),
        Command::Report(args) => report::cmd_report(&args),
        Command::Status(args) => status::run(&args),
        Command::Generate {
            output,
            controller_version,
            release,
            paths,
        } => cmd_generate(&paths, output, &controller_version, release),
        Command::Schedule {
            cluster_dir,
            pool,
            node_minutes,
            now,
            output,
            controller_version,
            release,
            changes,
        } => cmd_schedule(&ScheduleArgs {
            dir: &cluster_dir,
            pool: pool.as_deref(),
            per_node: std::time::Duration::from_secs(node_minutes.saturating_mul(60)),
            // The binary may read the clock; the library never does.
            now: now.unwrap_or_else(jiff::Timestamp::now),
            output,
            controller_version: &controller_version,
            release,
            changes: &changes,
        }),
        Command::BuildRequest(args) => build_request::run(&args),
        Command::Decode(args) => decode::run(&args),
        Command::Certificates(args) => certificates::run(&args),
        Command::Butane(args) => butane::run(&args, cli.strict).map_err(|code| Failure {
            code,
            lines: Vec::new(),
        }),
        Command::Completions(args) => completions::run(&args),
        Command::Man(args) => man::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            for l in f.lines {
                eprintln!("{l}");
            }
            ExitCode::from(f.code)
        }
    }
}

/// Reads the manifests, printing what reading noticed (failing on it under `--strict`).
fn load(paths: &[PathBuf]) -> Result<Manifests, Failure> {
    let (m, skipped) =
        load::read_manifests_listed(paths).map_err(|e| Failure::input(e.to_string()))?;
    // Links are followed once; a cycle or a link that cannot be followed is said.
    for s in skipped.iter().filter(|s| s.is_warning()) {
        eprintln!("warning: {s}");
    }
    reading::check(&m)?;
    Ok(m)
}

fn read_templates(dir: &Path) -> Result<TemplateTree, Failure> {
    load::read_templates(dir).map_err(|e| Failure::input(e.to_string()))
}

/// `--controller-version` and `--release` as given.
type Renderer<'a> = (&'a str, Option<Release>);

/// Loads the manifests and adds the MachineConfigs the cluster's controllers would generate
/// from them (a resource whose generation fails is an error); with the options to render them
/// as the release and controller `renderer` resolves to on them.
fn load_cluster(
    paths: &[PathBuf],
    renderer: Renderer<'_>,
    templates: Option<&Path>,
) -> Result<(Manifests, RenderOptions), Failure> {
    let mut m = load(paths)?;
    let render = RenderOptions {
        controller_version: release::controller_version_for(renderer.0, &m),
        release: release::release_for(renderer.1, &m)?,
        ..RenderOptions::default()
    };
    let opts = ClusterOptions {
        controller_version: render.controller_version.clone(),
        templates: templates.map(read_templates).transpose()?,
        release: render.release,
    };
    let errors = expand_manifests(&mut m, &opts);
    if errors.is_empty() {
        Ok((m, render))
    } else {
        Err(Failure {
            code: 1,
            lines: errors.iter().map(|e| format!("error: {e}")).collect(),
        })
    }
}

fn controller_spec(m: &Manifests) -> ControllerConfigSpec {
    m.controller_config
        .as_ref()
        .map(|(_, c)| c.spec.clone())
        .unwrap_or_default()
}

fn pools<'a>(m: &'a Manifests, only: Option<&str>) -> Result<Vec<&'a MachineConfigPool>, Failure> {
    let all: Vec<&MachineConfigPool> = m.pools.iter().map(|(_, p)| p).collect();
    if all.is_empty() {
        return Err(Failure::input(
            "no MachineConfigPool found in the manifests",
        ));
    }
    match only {
        None => Ok(all),
        Some(name) => {
            let found: Vec<_> = all.into_iter().filter(|p| p.name() == name).collect();
            if found.is_empty() {
                Err(Failure::input(format!(
                    "no MachineConfigPool named {name:?} in the manifests"
                )))
            } else {
                Ok(found)
            }
        }
    }
}

fn render_all(
    m: &mut Manifests,
    only: Option<&str>,
    opts: &RenderOptions,
) -> Result<Vec<(String, Rendered)>, Failure> {
    let cc = controller_spec(m);
    // Stamped with the ControllerConfig's release image version, as the controller renders.
    let opts = &m.render_options(opts);
    // The Ignition configs move to the copies rendered from (they are not needed afterwards),
    // so only the small rest of each MachineConfig is copied; the last pool takes the copies
    // and parses the configs in place.
    let mut configs = Some(
        m.machine_configs
            .iter_mut()
            .map(|(_, mc)| {
                let config = mc.spec.config.take();
                let mut copy = mc.clone();
                copy.spec.config = config;
                copy
            })
            .collect::<Vec<_>>(),
    );
    let mut out = Vec::new();
    let mut lines = Vec::new();
    let selected = pools(m, only)?;
    let last = selected.len().saturating_sub(1);
    for (i, pool) in selected.into_iter().enumerate() {
        let result = match configs.take() {
            Some(all) if i == last => render_pool_owned(pool, all, &cc, opts),
            Some(all) => {
                let r = render_pool(pool, &all, &cc, opts);
                configs = Some(all);
                r
            }
            None => render_pool(pool, &[], &cc, opts),
        };
        match result {
            Ok(r) => out.push((pool.name().to_string(), r)),
            Err(f) => {
                lines.push(format!("error: pool {:?} failed to render:", pool.name()));
                for e in &f.errors {
                    let file = e
                        .machine_config
                        .as_deref()
                        .and_then(|mc| m.file_of(mc))
                        .map(|f| format!("{f}: "))
                        .unwrap_or_default();
                    for l in e.describe().lines() {
                        lines.push(format!("  {file}{l}"));
                    }
                }
            }
        }
    }
    if lines.is_empty() {
        Ok(out)
    } else {
        Err(Failure { code: 1, lines })
    }
}

fn to_yaml(v: &impl serde::Serialize) -> Result<String, Failure> {
    serde_yaml_ng::to_string(v).map_err(|e| Failure::input(format!("cannot write YAML: {e}")))
}

fn to_json(v: &impl serde::Serialize) -> Result<String, Failure> {
    serde_json::to_string_pretty(v).map_err(|e| Failure::input(format!("cannot write JSON: {e}")))
}

fn cmd_render(
    paths: &[PathBuf],
    pool: Option<&str>,
    output: Format,
    out_dir: Option<(&Path, bool)>,
    renderer: Renderer<'_>,
    scheme: Scheme,
    templates: Option<&Path>,
) -> Result<(), Failure> {
    let (mut m, opts) = load_cluster(paths, renderer, templates)?;
    let opts = RenderOptions {
        name_scheme: match scheme {
            Scheme::Upstream => NameScheme::Upstream,
            Scheme::Sha256 => NameScheme::ContentSha256,
        },
        ..opts
    };
    let overrides = validation_overrides_in(m.others.iter().map(|(_, v)| v));
    let current = pools_current_configs(&m, pool)?;
    let rendered = render_all(&mut m, pool, &opts)?;
    if let Some(before) = current {
        check_transitions(&m, &before, &rendered, &overrides)?;
    }
    if let Some((dir, check_only)) = out_dir {
        let format = match output {
            Format::Yaml => mco_render::check::OutputFormat::Yaml,
            Format::Json => mco_render::check::OutputFormat::Json,
        };
        let files = mco_render::check::rendered_files(&rendered, format)
            .map_err(|e| Failure::input(e.to_string()))?;
        // With --pool, the folder's files for other pools are not this command's.
        let coverage = match pool {
            Some(_) => mco_render::check::Coverage::SelectedPools,
            None => mco_render::check::Coverage::AllPools,
        };
        return if check_only {
            check::check_out_dir(dir, &files, coverage)
        } else {
            check::write_out_dir(dir, &files, coverage)
        };
    }
    let all: Vec<&MachineConfig> = rendered.iter().map(|(_, r)| &r.machine_config).collect();
    // One pool asked for by name prints its object alone, as `kubectl get KIND NAME -o json`
    // does; several print as one `v1 List`.
    match (pool, all.as_slice()) {
        (Some(_), [one]) => out!("{}", output::object_text(one, output)?),
        _ => out!("{}", output::objects_text(&all, output)?),
    }
    Ok(())
}

/// Every MachineConfig of the tree, when a selected pool's `spec.configuration` names a
/// rendered config the tree holds (a dump): the render controller checks the move from it.
fn pools_current_configs(
    m: &Manifests,
    only: Option<&str>,
) -> Result<Option<Vec<MachineConfig>>, Failure> {
    let current = pools(m, only)?.into_iter().any(|p| {
        let name = &p.spec.configuration.name;
        !name.is_empty() && m.machine_configs.iter().any(|(_, mc)| mc.name() == name)
    });
    Ok(current.then(|| m.machine_configs.iter().map(|(_, mc)| mc.clone()).collect()))
}

/// Refuses, as the render controller does (its pool RenderDegraded), a rendered config that
/// the pool's current one cannot move to in place; `overrides` are the storage sections the
/// tree's MachineConfiguration `cluster` exempts.
fn check_transitions(
    m: &Manifests,
    before: &[MachineConfig],
    rendered: &[(String, Rendered)],
    overrides: &[StorageOverride],
) -> Result<(), Failure> {
    let mut lines = Vec::new();
    for (name, r) in rendered {
        let Some((_, pool)) = m.pools.iter().find(|(_, p)| p.name() == name) else {
            continue;
        };
        if let Err(e) = check_transition(pool, before, &r.machine_config, &r.source, overrides) {
            lines.push(format!("error: pool {name:?} failed to render:"));
            lines.push(format!("  could not generate rendered MachineConfig: {e}"));
            lines.push(format!(
                "  (the controller keeps the pool on {} and reports RenderDegraded)",
                pool.spec.configuration.name
            ));
        }
    }
    if lines.is_empty() {
        Ok(())
    } else {
        Err(Failure { code: 1, lines })
    }
}

/// The objects of `paths` as the API server would hand them to the webhook.
fn objects_under_review(m: &Manifests) -> Vec<serde_json::Value> {
    let with_kind = |mut v: serde_json::Value, kind: &str| {
        if let Some(o) = v.as_object_mut() {
            o.insert("kind".into(), kind.into());
        }
        v
    };
    let mut out = Vec::new();
    for (_, mc) in &m.machine_configs {
        out.extend(
            serde_json::to_value(mc)
                .ok()
                .map(|v| with_kind(v, "MachineConfig")),
        );
    }
    for (_, p) in &m.pools {
        out.extend(
            serde_json::to_value(p)
                .ok()
                .map(|v| with_kind(v, "MachineConfigPool")),
        );
    }
    for (_, v) in &m.others {
        if matches!(
            v.get("kind").and_then(serde_json::Value::as_str),
            Some("KubeletConfig" | "ContainerRuntimeConfig")
        ) {
            out.push(v.clone());
        }
    }
    out
}

/// The stored version of `object` in the cluster, if any (as JSON).
fn stored(cluster: &ClusterView, object: &serde_json::Value) -> Option<serde_json::Value> {
    let kind = object.get("kind").and_then(serde_json::Value::as_str)?;
    let name = object
        .pointer("/metadata/name")
        .and_then(serde_json::Value::as_str)?;
    let m = cluster.manifests();
    match kind {
        "MachineConfig" => m
            .machine_configs
            .iter()
            .find(|(_, x)| x.name() == name)
            .and_then(|(_, x)| serde_json::to_value(x).ok()),
        "MachineConfigPool" => m
            .pools
            .iter()
            .find(|(_, x)| x.name() == name)
            .and_then(|(_, x)| serde_json::to_value(x).ok()),
        _ => m
            .others
            .iter()
            .map(|(_, v)| v)
            .find(|v| {
                v.get("kind").and_then(serde_json::Value::as_str) == Some(kind)
                    && v.pointer("/metadata/name")
                        .and_then(serde_json::Value::as_str)
                        == Some(name)
            })
            .cloned(),
    }
}

fn cmd_review(
    dir: &Path,
    paths: &[PathBuf],
    node_minutes: u64,
    renderer: Renderer<'_>,
    format: validate::ValidateFormat,
) -> Result<(), Failure> {
    let dump = load(&[dir.to_path_buf()])?;
    let render = RenderOptions {
        controller_version: release::controller_version_for(renderer.0, &dump),
        release: release::release_for(renderer.1, &dump)?,
        ..RenderOptions::default()
    };
    let cluster = ClusterView::new(dump, render);
    let under = match load::read_manifests(paths) {
        Ok(m) => m,
        Err(e) => {
            let findings = validate::read_findings(e)?;
            return validate::print_findings(&findings, 0, "objects reviewed", format);
        }
    };
    let objects = objects_under_review(&under);
    let read = validate::notice_findings(&under);
    if objects.is_empty() && read.is_empty() {
        return Err(Failure::input(
            "no MachineConfig, KubeletConfig, ContainerRuntimeConfig or MachineConfigPool found",
        ));
    }
    let opts = ReviewOptions {
        node_duration: std::time::Duration::from_secs(node_minutes.saturating_mul(60)),
        // The windows of the pools' RolloutPolicies are judged from now, as the webhook does.
        now: Some(jiff::Timestamp::now()),
    };
    let mut findings = read;
    for object in &objects {
        let old = stored(&cluster, object);
        let op = if old.is_some() {
            Operation::Update
        } else {
            Operation::Create
        };
        let f = admission::review(object, op, old.as_ref(), &cluster, &opts);
        let errors = f.errors.iter().map(|e| (validate::Severity::Error, e));
        let warnings = f.warnings.iter().map(|w| (validate::Severity::Warning, w));
        findings.extend(
            errors.chain(warnings).map(|(severity, e)| {
                validate::review_finding(&under, object, severity, &e.message)
            }),
        );
    }
    validate::print_findings(&findings, objects.len(), "objects reviewed", format)
}

fn cmd_ignition(
    paths: &[PathBuf],
    pool: Option<&str>,
    version: &str,
    renderer: Renderer<'_>,
) -> Result<(), Failure> {
    let target = SpecVersion::parse(version)
        .filter(|v| *v != SpecVersion::V3_0)
        .ok_or_else(|| Failure::input(format!("unsupported spec version {version:?}: use 3.5.0, 3.4.0, 3.3.0, 3.2.0, 3.1.0 or 2.2.0")))?;
    let (mut m, opts) = load_cluster(paths, renderer, None)?;
    if pool.is_none() && m.pools.len() > 1 {
        return Err(Failure::input(
            "the manifests hold several pools: choose one with --pool",
        ));
    }
    let rendered = render_all(&mut m, pool, &opts)?;
    let Some((_, r)) = rendered.first() else {
        return Err(Failure::input("nothing rendered"));
    };
    let profile = opts.release.profile();
    if target > profile.rendered_ignition {
        return Err(Failure::input(format!(
            "{} serves spec {} at the newest; {target} was asked",
            opts.release, profile.rendered_ignition
        )));
    }
    let served = serve::convert_for(r.ignition(), target, &profile).map_err(|e| Failure {
        code: 1,
        lines: vec![format!("error: {e}")],
    })?;
    outln!("{}", to_json(&served)?);
    Ok(())
}

fn rendered_input(
    path: &Path,
    pool: Option<&str>,
    renderer: Renderer<'_>,
) -> Result<RenderedInput, Failure> {
    let (mut m, opts) = load_cluster(&[path.to_path_buf()], renderer, None)?;
    if m.pools.is_empty() {
        let rendered: Vec<&MachineConfig> = m.machine_configs.iter().map(|(_, mc)| mc).collect();
        let [mc] = rendered.as_slice() else {
            return Err(Failure::input(format!(
                "{}: expected one rendered MachineConfig, or manifests with a pool",
                load::stdin::display_name(path)
            )));
        };
        return input_from_mc(mc).map_err(|e| Failure {
            code: 1,
            lines: vec![format!("{}: {e}", load::stdin::display_name(path))],
        });
    }
    if pool.is_none() && m.pools.len() > 1 {
        return Err(Failure::input(format!(
            "{}: several pools: choose one with --pool",
            load::stdin::display_name(path)
        )));
    }
    let rendered = render_all(&mut m, pool, &opts)?;
    let Some((_, r)) = rendered.into_iter().next() else {
        return Err(Failure::input("nothing rendered"));
    };
    input_from_mc(&r.machine_config).map_err(|e| Failure {
        code: 1,
        lines: vec![e],
    })
}

fn input_from_mc(mc: &MachineConfig) -> Result<RenderedInput, String> {
    plan::input::rendered_input(mc.name(), &mc.spec).map_err(|e| format!("{}: {e}", mc.name()))
}

fn cmd_diff(
    old: &Path,
    new: &Path,
    pool: Option<&str>,
    policies: Option<&Path>,
    output: DiffFormat,
    renderer: Renderer<'_>,
) -> Result<(), Failure> {
    let old_in = rendered_input(old, pool, renderer)?;
    let new_in = rendered_input(new, pool, renderer)?;
    let mc: Option<MachineConfiguration> = policies
        .map(load::read_policies)
        .transpose()
        .map_err(|e| Failure::input(e.to_string()))?;
    let plan = plan::compute(&old_in, &new_in, mc.as_ref());
    let report = plan::report::PlanReport::new(&plan, &old_in, &new_in);
    match output.data() {
        Some(data) => out!("{}", output::data_text(&report, data)?),
        None => {
            outln!("{} -> {}", old_in.name, new_in.name);
            out!("{}", report.details());
            if !report.reconcilable {
                return Err(Failure {
                    code: 1,
                    lines: vec![
                        "error: this update is not reconcilable: a pool moving to it would degrade"
                            .into(),
                    ],
                });
            }
        }
    }
    Ok(())
}

fn cmd_generate(
    paths: &[PathBuf],
    output: Format,
    controller_version: &str,
    release: Option<Release>,
) -> Result<(), Failure> {
    use mco_render::controllers::generate::sequence::generate_cluster;
    let m = load(paths)?;
    let (mut input, files, undecoded) =
        mco_render::manifests::expand::cluster_input(&m, controller_version);
    input.release = release::release_for(release, &m)?;
    if input.resources.is_empty()
        && undecoded.is_empty()
        && !input
            .config_objects
            .triggers_sync(input.node_config.is_some())
    {
        return Err(Failure::input(
            "no KubeletConfig, ContainerRuntimeConfig, Image, FeatureGate or Node found in the manifests",
        ));
    }
    let results = generate_cluster(&input);
    let mut generated = Vec::new();
    let mut lines: Vec<String> = undecoded
        .iter()
        .map(|e| format!("error: {}: {} {:?}: {}", e.file, e.kind, e.name, e.message))
        .collect();
    for r in &results {
        match &r.outcome.error {
            Some(e) => {
                let file = files
                    .get(&(r.kind.clone(), r.name.clone()))
                    .map(|f| format!("{f}: "))
                    .unwrap_or_default();
                let also: String = r
                    .blamed
                    .iter()
                    .map(|b| {
                        let f = files
                            .get(&(b.kind.clone(), b.name.clone()))
                            .map(|f| format!(" ({f})"))
                            .unwrap_or_default();
                        format!(", {} {:?}{f}", b.kind, b.name)
                    })
                    .collect();
                lines.push(format!("error: {file}{} {:?}{also}: {e}", r.kind, r.name));
            }
            None if r.kind == "KubeletConfig" || r.kind == "ContainerRuntimeConfig" => {
                generated.extend(r.outcome.machine_configs_json())
            }
            None => {
                // The cluster-config syncs' MachineConfigs, written or up to date, by name.
                let mut mcs = r.outcome.machine_configs_json();
                mcs.extend(r.up_to_date.iter().map(upstream_json));
                mcs.sort_by(|a, b| {
                    let name = |v: &serde_json::Value| {
                        v.pointer("/metadata/name")
                            .and_then(serde_json::Value::as_str)
                            .map(str::to_string)
                    };
                    name(a).cmp(&name(b))
                });
                generated.extend(mcs)
            }
        }
    }
    // A MachineConfig written by several syncs prints once, in its last version.
    let mut last: Vec<serde_json::Value> = Vec::with_capacity(generated.len());
    for mc in generated.into_iter().rev() {
        let name = mc.pointer("/metadata/name").cloned();
        if !last
            .iter()
            .any(|m| m.pointer("/metadata/name").cloned() == name)
        {
            last.push(mc);
        }
    }
    last.reverse();
    let generated = last;
    out!("{}", output::objects_text(&generated, output)?);
    if lines.is_empty() {
        Ok(())
    } else {
        Err(Failure { code: 1, lines })
    }
}

fn cmd_templates(
    dir: &Path,
    paths: &[PathBuf],
    output: Format,
    controller_version: &str,
) -> Result<(), Failure> {
    let tree = read_templates(dir)?;
    let m = load(paths)?;
    let Some((_, cc)) = &m.controller_config else {
        return Err(Failure::input("no ControllerConfig found in the manifests"));
    };
    let opts = template_options(&m, controller_version).map_err(|e| Failure {
        code: 1,
        lines: vec![format!("error: {e}")],
    })?;
    let mcs = generate_template_machine_configs(&tree, cc, &opts).map_err(|e| Failure {
        code: 1,
        lines: vec![format!("error: {}: {e}", dir.display())],
    })?;
    out!("{}", output::objects_text(&mcs, output)?);
    Ok(())
}

struct ScheduleArgs<'a> {
    dir: &'a Path,
    pool: Option<&'a str>,
    per_node: std::time::Duration,
    now: jiff::Timestamp,
    output: DiffFormat,
    controller_version: &'a str,
    release: Option<Release>,
    changes: &'a [PathBuf],
}

/// Replaces `into`'s items named as `from`'s, and adds the others.
fn merge_named<T>(into: &mut Vec<(String, T)>, from: Vec<(String, T)>, name: impl Fn(&T) -> &str) {
    for (file, item) in from {
        match into.iter_mut().find(|(_, x)| name(x) == name(&item)) {
            Some(slot) => *slot = (file, item),
            None => into.push((file, item)),
        }
    }
}

/// The cluster dump with the changes applied: objects of the same kind and name replaced.
fn with_changes(mut m: Manifests, changes: Manifests) -> Manifests {
    merge_named(&mut m.machine_configs, changes.machine_configs, |x| {
        x.name()
    });
    merge_named(&mut m.pools, changes.pools, |x| x.name());
    merge_named(&mut m.nodes, changes.nodes, |x| x.name());
    merge_named(&mut m.rollout_policies, changes.rollout_policies, |x| {
        x.name()
    });
    let key = |v: &serde_json::Value| {
        (
            v.get("kind").cloned().unwrap_or_default(),
            v.pointer("/metadata/name").cloned().unwrap_or_default(),
        )
    };
    for (file, v) in changes.others {
        match m.others.iter_mut().find(|(_, x)| key(x) == key(&v)) {
            Some(slot) => *slot = (file, v),
            None => m.others.push((file, v)),
        }
    }
    if changes.controller_config.is_some() {
        m.controller_config = changes.controller_config;
    }
    m
}

/// One pool's preview.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct PoolPreview {
    pool: String,
    /// The rendered config today (none for a new pool).
    from: Option<String>,
    to: String,
    changes: bool,
    /// `drain and reboot`, `drain, no reboot`, `no drain, no reboot`.
    disruption: Option<String>,
    paused: bool,
    schedule: Option<mco_render::controllers::rollout_policy::schedule::Schedule>,
}

fn cmd_schedule(a: &ScheduleArgs<'_>) -> Result<(), Failure> {
    use mco_render::controllers::node_pool::nodes_for_pool;
    use mco_render::controllers::rollout_policy::schedule::{
        schedule, Members, PoolNodes, ScheduleInput,
    };
    let before = load(&[a.dir.to_path_buf()])?;
    let after = if a.changes.is_empty() {
        before.clone()
    } else {
        with_changes(before.clone(), load(a.changes)?)
    };
    let opts = RenderOptions {
        controller_version: release::controller_version_for(a.controller_version, &before),
        release: release::release_for(a.release, &before)?,
        ..RenderOptions::default()
    };
    let policies: Option<MachineConfiguration> = after
        .others
        .iter()
        .map(|(_, v)| v)
        .find(|v| {
            v.get("kind").and_then(serde_json::Value::as_str) == Some("MachineConfiguration")
                && v.pointer("/metadata/name")
                    .and_then(serde_json::Value::as_str)
                    == Some("cluster")
        })
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    let all_pools: Vec<MachineConfigPool> = after.pools.iter().map(|(_, p)| p.clone()).collect();
    let all_nodes: Vec<mco_render::api::Node> =
        after.nodes.iter().map(|(_, n)| n.clone()).collect();
    let (cc_before, cc_after) = (controller_spec(&before), controller_spec(&after));
    let mut previews = Vec::new();
    let mut lines = Vec::new();
    for pool in pools(&after, a.pool)? {
        let new = match render_pool(pool, &after.configs(), &cc_after, &opts) {
            Ok(r) => r,
            Err(f) => {
                lines.push(format!("error: pool {:?} failed to render:", pool.name()));
                for e in &f.errors {
                    lines.extend(e.describe().lines().map(|l| format!("  {l}")));
                }
                continue;
            }
        };
        let old = before
            .pools
            .iter()
            .find(|(_, p)| p.name() == pool.name())
            .and_then(|(_, p)| render_pool(p, &before.configs(), &cc_before, &opts).ok());
        let to = new.machine_config.name().to_string();
        let from = old.as_ref().map(|r| r.machine_config.name().to_string());
        let changes = from.as_deref() != Some(to.as_str());
        let disruption = match &old {
            Some(o) if changes => {
                let (oi, ni) = (
                    input_from_mc(&o.machine_config).map_err(Failure::input)?,
                    input_from_mc(&new.machine_config).map_err(Failure::input)?,
                );
                let report = plan::report::PlanReport::new(
                    &plan::compute(&oi, &ni, policies.as_ref()),
                    &oi,
                    &ni,
                );
                Some(match (&report.reason, report.reboot, report.drain) {
                    (Some(r), _, _) => format!("not reconcilable: {r}"),
                    (None, true, _) => "drain and reboot".to_string(),
                    (None, false, true) => "drain, no reboot".to_string(),
                    (None, false, false) => "no drain, no reboot".to_string(),
                })
            }
            _ => None,
        };
        let (mine, _) = nodes_for_pool(pool, &all_pools, &all_nodes);
        let count = pool
            .status
            .as_ref()
            .map(|s| usize::try_from(s.machine_count).unwrap_or(0))
            .unwrap_or(0);
        let nodes = if all_nodes.is_empty() {
            PoolNodes::Count(count)
        } else {
            PoolNodes::Known(&mine)
        };
        let policy = after
            .rollout_policies
            .iter()
            .map(|(_, p)| p)
            .find(|p| p.name() == pool.name());
        let sched = if changes {
            match schedule(&ScheduleInput {
                pool,
                policy,
                nodes,
                target: &to,
                now: a.now,
                per_node: a.per_node,
                windows: true,
            }) {
                Ok(s) => Some(s),
                Err(e) => {
                    lines.push(format!("error: pool {}: {e}", pool.name()));
                    continue;
                }
            }
        } else {
            None
        };
        previews.push(PoolPreview {
            pool: pool.name().to_string(),
            from,
            to,
            changes,
            disruption,
            paused: pool.spec.paused,
            schedule: sched,
        });
    }
    match a.output.data() {
        Some(data) => out!("{}", output::data_text(&previews, data)?),
        None => {
            let t = mco_render::controllers::rollout_policy::rfc3339;
            for p in &previews {
                let Some(s) = &p.schedule else {
                    outln!("pool {}: {} unchanged: nothing to roll out", p.pool, p.to);
                    continue;
                };
                let from = p.from.as_deref().unwrap_or("(new pool)");
                let how = p
                    .disruption
                    .as_ref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default();
                outln!("pool {}: {from} -> {}{how}", p.pool, p.to);
                outln!("  {s}");
                if p.paused {
                    outln!("  the pool is paused: nothing rolls out until it is unpaused");
                }
                for step in &s.steps {
                    let who = match &step.nodes {
                        Members::Named(v) => v.join(", "),
                        Members::Count(0) => String::new(),
                        Members::Count(1) => "1 node".to_string(),
                        Members::Count(n) => format!("{n} nodes"),
                    };
                    let line = format!(
                        "  {} .. {}  {:<6}  {who}",
                        t(step.start),
                        t(step.end),
                        step.kind.as_str()
                    );
                    outln!("{}", line.trim_end());
                }
                outln!("  finish {}", t(s.finish));
            }
        }
    }
    if lines.is_empty() {
        Ok(())
    } else {
        Err(Failure { code: 1, lines })
    }
}
