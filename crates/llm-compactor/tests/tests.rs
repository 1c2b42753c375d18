//! The integration tests of this crate, in one binary: each file of tests/ is a module
//! here (linking one test binary instead of one per file; see ripgrep's tests/tests.rs).
//! Support modules are declared once, below, and used by the tests as `crate::NAME`.

#[path = "../examples/agent_loop.rs"]
#[allow(unused_imports)]
mod agent_loop;
#[allow(dead_code, unused_imports)]
mod chat_support;
#[path = "format_support/codex_run.rs"]
#[allow(dead_code, unused_imports)]
mod codex_run;
#[allow(dead_code, unused_imports)]
mod common;
#[cfg(feature = "bpe")]
#[allow(dead_code, unused_imports)]
mod count_support;
#[allow(dead_code, unused_imports)]
mod engine_support;
#[allow(dead_code, unused_imports)]
mod format_support;
#[cfg(feature = "http")]
#[allow(dead_code, unused_imports)]
mod http_support;
#[cfg(feature = "local")]
#[allow(dead_code, unused_imports)]
mod local_support;
#[path = "../examples/one_shot.rs"]
mod one_shot;
#[allow(dead_code, unused_imports)]
mod session_support;
#[allow(dead_code, unused_imports)]
mod store_support;

mod aging_index;
mod breakpoint_props;
mod budget_sweep;
mod conversation;
mod cost_policy_choice;
#[cfg(feature = "bpe")]
mod count_adapters;
#[cfg(feature = "bpe")]
mod count_bpe;
mod count_calibrated;
mod count_incremental;
#[cfg(feature = "bpe")]
mod count_memo;
mod door_budgets;
mod engine_compact;
mod engine_exec;
mod engine_ledger;
mod engine_output_cap;
mod engine_policies;
mod engine_props;
mod engine_repetition_retry;
mod engine_trajectories;
mod example_one_shot;
mod exec_limits;
mod expand_handles;
mod format_compaction_items;
mod format_convert;
mod format_errors;
mod format_openhands;
mod format_real;
mod format_responses;
mod format_roles;
mod format_roundtrip;
mod fuzz_inputs;
mod grounding_props;
mod hardening_engine;
mod hardening_props;
mod http_backend;
mod http_cache_reading;
mod http_fault_matrix;
mod http_odd_usage;
mod http_redaction;
mod http_redirect;
mod identity_real;
mod instruction_survival;
mod ledger_rules;
mod ledger_sized;
mod local_compact;
mod local_fetch;
mod local_model;
mod local_tokenizer;
mod media_counting;
mod message_digest;
mod model_verify;
mod pass_context;
mod pins_configured;
mod plan_core;
#[cfg(feature = "bpe")]
mod plan_trim_counted;
mod policy_props;
mod prepared_check;
mod seed_edges;
mod seed_rules;
mod session_agent_loop;
mod session_crash;
mod session_manager;
mod session_manager_counts;
mod session_pace;
mod session_prepared;
mod session_receipt;
mod session_replay_prop;
mod session_thinking;
mod session_tolerance;
mod session_transcript;
mod simulate_cost;
mod simulate_default;
mod simulate_determinism;
mod simulate_linear;
mod simulate_peers;
#[cfg(feature = "bpe")]
mod simulate_strategies;
mod store_conformance;
mod store_postgres;
