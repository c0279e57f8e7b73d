//! Kubernetes label selectors.
