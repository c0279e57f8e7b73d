//! Go behaviours the Ignition engine's output depends on, each implemented once: quoting in
//! messages (`strconv.Quote`, the `%q` verb) and `encoding/json` text (string escaping, compact
//! and indented writing). `mco-render`'s `gocompat` re-exports them next to the behaviours only
//! it needs.

pub mod json;
pub mod quote;
