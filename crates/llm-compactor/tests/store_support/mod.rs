//! Shared helpers of the session store tests: a throwaway PostgreSQL cluster and the
//! conformance suite every [`llm_compactor::store::SessionStore`] must pass.

pub mod conformance;
pub mod pg;
