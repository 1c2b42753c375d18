//! The simulator's replay over long synthetic trajectories (issue 10, item 12): a replay
//! must be linear in the rounds apart from the compactions themselves, so 100,000
//! messages replay in seconds. Strategies that only append (`none`) and the engine with
//! its defaults (`ours`) are measured at 10,000 and 100,000 messages with the heuristic
//! counter; doubling the rounds should roughly double the time.

mod support;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use llm_compactor::count::HeuristicCounter;
use llm_compactor::simulate::{Pricing, SimConfig, StrategyKind, simulate_trajectory};

fn simulate(c: &mut Criterion) {
    let mut group = c.benchmark_group("simulate");
    group.sample_size(10).measurement_time(Duration::from_secs(20));
    for rounds in [3_333usize, 33_333] {
        let mut trajectory = support::agent_run(rounds, |size| "x".repeat(size));
        trajectory.push(llm_compactor::Message::assistant("Done."));
        let config = SimConfig::new(128_000, Pricing::ANTHROPIC, Arc::new(HeuristicCounter));
        for kind in [StrategyKind::None, StrategyKind::Ours] {
            group.bench_with_input(BenchmarkId::new(kind.name(), trajectory.len()), &trajectory, |b, t| {
                b.iter(|| black_box(simulate_trajectory(t, &[kind], &config).unwrap()))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, simulate);
criterion_main!(benches);
