//! `mco-render certificates`: the certificates of CA bundles as the cluster records them
//! (upstream's template controller writes them into the ControllerConfig's
//! `status.controllerCertificates`; each pool's `status.certExpirys` repeats the API server
//! serving CA's), with their expiry.

use super::{write_stdout, Failure};
use mco_render::api::ControllerCertificate;
use mco_render::controllers::templates::certificates::{
    bundle_certificates, controller_certificates,
};
use mco_render::gocompat::json::to_go_indented;
use mco_render::gocompat::yaml::to_go_yaml;
use serde_json::json;
use std::path::{Path, PathBuf};

/// Output formats.
#[derive(Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub enum Output {
    /// One line per certificate.
    Text,
    /// `{"controllerCertificates": [...]}`, as the ControllerConfig's status holds them.
    Json,
    /// The same as YAML.
    Yaml,
}

/// The `certificates` command's arguments.
#[derive(clap::Args)]
pub struct Args {
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    output: Output,
    /// PEM files (`.pem`, `.crt`, `.cer`: one bundle each, named by the file name), or
    /// manifests or a cluster dump holding the ControllerConfig (its spec's bundles).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

fn is_pem(p: &Path) -> bool {
    matches!(
        p.extension().and_then(|e| e.to_str()),
        Some("pem" | "crt" | "cer")
    )
}

/// Prints the certificates.
pub fn run(args: &Args) -> Result<(), Failure> {
    let mut certs: Vec<ControllerCertificate> = Vec::new();
    let (pems, manifests): (Vec<&PathBuf>, Vec<&PathBuf>) =
        args.paths.iter().partition(|p| is_pem(p));
    for p in pems {
        let bytes =
            std::fs::read(p).map_err(|e| Failure::input(format!("{}: {e}", p.display())))?;
        let name = p
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        certs.extend(bundle_certificates(&bytes, &name));
    }
    if !manifests.is_empty() {
        let m = mco_render::load::read_manifests(&manifests)
            .map_err(|e| Failure::input(e.to_string()))?;
        super::reading::check(&m)?;
        let Some((file, cc)) = &m.controller_config else {
            return Err(Failure::input(
                "no ControllerConfig in the manifests (a cluster dump holds it: kubectl get controllerconfig machine-config-controller -o yaml)",
            ));
        };
        certs.extend(
            controller_certificates(&cc.spec)
                .map_err(|e| Failure::input(format!("{file}: {e}")))?,
        );
    }
    let value = json!({"controllerCertificates": certs});
    match args.output {
        Output::Json => write_stdout(&format!("{}\n", to_go_indented(&value, "    "))),
        Output::Yaml => write_stdout(&to_go_yaml(&value)),
        Output::Text => {
            let mut out = String::new();
            for c in &certs {
                out.push_str(&format!(
                    "{}\t{}\tnot after {}\tissued by {}\n",
                    c.bundle_file,
                    c.subject,
                    c.not_after.as_deref().unwrap_or("?"),
                    c.signer
                ));
            }
            if certs.is_empty() {
                out.push_str("no certificates\n");
            }
            write_stdout(&out);
        }
    }
    Ok(())
}
