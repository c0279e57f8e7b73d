//! Go's `strconv` floats: `FormatFloat(f, 'g', -1, 64)` as the YAML encoder writes numbers, and
//! `ParseFloat(s, 32)` as the server reads Accept-header q values.

mod format_float;
mod parse_float;

pub(crate) use format_float::push_go_float;
pub(crate) use parse_float::parse_f32;
