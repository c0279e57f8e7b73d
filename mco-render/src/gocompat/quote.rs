//! Go's quoting in messages (`strconv.Quote`, `strconv.QuoteRune`, the `time` package's quote):
//! the Ignition engine's implementation, which upstream's other messages share.

pub use mco_ignition::gocompat::quote::{go_quote, go_quote_rune, time_quote};
