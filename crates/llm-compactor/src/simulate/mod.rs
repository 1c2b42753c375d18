//! The cache-aware cost simulator.
