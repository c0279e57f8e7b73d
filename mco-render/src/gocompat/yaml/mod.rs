//! YAML as upstream's libraries write and read it (gopkg.in/yaml.v2 v2.4.0 behind
//! ghodss/yaml): the byte-exact emitter, its scalar analysis, implicit-type resolution, key
//! order, and the inputs its reader refuses.

mod byte_scan;
mod emit;
mod key_order;
mod marshal_check;
pub(crate) mod resolve;
mod scalar;

pub(crate) use emit::{stream_go_yaml, Sink};
pub use emit::{to_go_yaml, to_go_yaml_v3, write_go_yaml};
pub use marshal_check::{check_upstream_marshal, NameError};
