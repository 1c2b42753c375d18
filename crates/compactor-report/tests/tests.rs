//! The integration tests of this crate, in one binary: each file of tests/ is a module
//! here (linking one test binary instead of one per file; see ripgrep's tests/tests.rs).
//! Support modules are declared once, below, and used by the tests as `crate::NAME`.

#[allow(dead_code, unused_imports)]
mod support;

mod browser;
mod report;
