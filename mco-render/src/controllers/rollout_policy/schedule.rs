//! The schedule a rollout under a policy will follow (canaries, soak, batches under
//! `maxUnavailable`, windows) and when it will finish, for previews and admission warnings.
