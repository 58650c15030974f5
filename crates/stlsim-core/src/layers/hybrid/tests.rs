//! Tests of the hybrid layers.
