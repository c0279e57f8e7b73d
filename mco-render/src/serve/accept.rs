//! Accept-header spec version negotiation.
