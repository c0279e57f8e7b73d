//! Render MachineConfigPools exactly as the Machine Config Operator does.
//!
//! Pure: no I/O (but for the `load` module), clocks, randomness or global state. The same inputs
//! give the same bytes.
//!
//! The modules follow upstream's components:
//! - [`api`]: the objects (MachineConfig, MachineConfigPool, ControllerConfig, Node, ...).
//! - [`manifests`]: bytes in, objects out; what a cluster adds to a set of manifests.
//! - [`render`]: select, validate and merge a pool's MachineConfigs and name the result
//!   (upstream's render controller).
//! - [`plan`]: reconcilability, the diff between two rendered configs and the node disruption
//!   plan (upstream's daemon update path).
//! - [`serve`]: what the machine-config-server hands a booting machine.
//! - [`controllers`]: every controller's decisions as pure functions returning writes.
//! - [`about`]: what a build reproduces (releases, Butane, upstream commit), for `--version`.
//! - [`admission`]: what an object would do to the cluster before it is stored: the
//!   validating webhook's and `mco-render validate --cluster-dir`'s findings.
//! - [`check`]: rendered configs as the files `render --out-dir` writes, and how a folder's
//!   copy differs from them (`render --check`).
//! - [`report`]: what a change to a tree of manifests does to each pool (`mco-render report`).
//! - [`butane`]: Butane configs (`variant: openshift`) translated into MachineConfigs as
//!   Butane does, with its messages.
//! - [`gocompat`]: the Go behaviours upstream's output depends on, each in one place.
//! - `load` (feature `fs`, on with the default `cli`): the one place that reads manifests,
//!   template folders and policies from disk, for the binaries.
//!
//! `mco-render = { default-features = false }` embeds the pure core alone: no file system, no
//! command-line parser.

pub mod about;
pub mod admission;
pub mod api;
pub mod butane;
pub mod check;
pub mod controllers;
pub mod gocompat;
#[cfg(feature = "fs")]
pub mod load;
pub mod manifests;
pub mod plan;
pub mod release;
pub mod render;
pub mod report;
pub mod serve;
pub mod status;

/// The controller version this build stamps on rendered configs by default.
pub const CONTROLLER_VERSION: &str = "7ff337a4ffac8e7562692181178ede61e4b2eec5";

pub use render::error::{RenderError, RenderErrorKind};
pub use render::{render_pool, NameScheme, RenderFailure, RenderOptions, Rendered};

/// The README's code blocks, compiled and run as doctests (`cargo test -p mco-render --doc`);
/// `README.md` here links to the repository's, and `cargo package` ships its contents.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The Rust examples of the book (`docs/`), compiled and run as doctests the same way: one item
/// per chapter that holds Rust code (`.ci/run` checks that none is missing). `mdbook test` cannot
/// link this crate, so it skips them. Only doctests read these files, which are outside the
/// crate: `cargo package` neither ships nor needs them.
#[cfg(doctest)]
pub mod book {
    /// `docs/src/ci.md`: the CI checks from Rust.
    #[doc = include_str!("../../docs/src/ci.md")]
    pub struct InCi;

    /// `docs/src/library.md`: rendering a pool with the library.
    #[doc = include_str!("../../docs/src/library.md")]
    pub struct UsingTheLibrary;
}
