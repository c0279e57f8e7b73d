//! Go behaviours upstream's output depends on, each implemented once: the yaml.v2 emitter,
//! `compress/flate` and `compress/gzip` at best compression (Butane's data URLs),
//! `encoding/base64`,
//! `encoding/json` text, `%q` quoting, strconv floats, semver as Go's libraries read it, Go's
//! stable sort, `time.Duration`, BurntSushi TOML, docker image references, `resource.Quantity`, Go structs under `encoding/json`, os-release as the daemon's library
//! reads it, certificate names as `crypto/x509` prints them, and `text/template`.

pub mod base64;
pub mod duration;
pub mod flate;
pub(crate) mod gostruct;
pub mod gzip;
pub mod json;
pub mod kube_yaml;
pub mod os_release;
pub mod pkix;
pub mod quantity;
pub mod quote;
pub mod reference;
pub(crate) mod semver;
pub(crate) mod sort;
pub mod strconv;
pub mod template;
pub mod toml;
pub mod yaml;
