//! Typed, read-only views of a spec 3.x config.
