//! Translation between spec versions.
