//! The pure planning core: cut, sticky, eligibility, stubs, trim, assembly, validation.
//! No I/O, no async, no clock, no randomness.
