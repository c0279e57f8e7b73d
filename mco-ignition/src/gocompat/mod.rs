//! Go behaviours the Ignition engine's output depends on, each implemented once: quoting in
//! messages (`strconv.Quote`, the `%q` verb). `mco-render`'s `gocompat` re-exports them next to
//! the behaviours only it needs.

pub mod quote;
