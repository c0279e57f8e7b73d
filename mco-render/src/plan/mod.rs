//! Node disruption plans.
