//! Every parser of user or device input on mutated inputs (`embodia bench fuzz` at a small
//! size; the campaign's figures are in docs/results/robustness.md): no input panics, and every
//! target's seed corpus parses.

use embodia::bench::fuzz::{TARGETS, run_target, target};

#[test]
fn no_parser_panics_on_three_thousand_mutated_inputs_each() {
    let scratch = std::env::temp_dir().join(format!("embodia-fuzz-test-{}", std::process::id()));
    let mut failures = Vec::new();
    for name in TARGETS {
        let mut t = target(name, &scratch).unwrap();
        let r = run_target(&mut t, 3000, 7);
        // Every 16th input is an unmutated seed, which must parse.
        if r.panics > 0 || r.accepted < r.inputs / 16 {
            failures.push(format!(
                "{name}: {} panics, {} of {} accepted, first: {:?}",
                r.panics, r.accepted, r.inputs, r.first_panic
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    assert!(failures.is_empty(), "{failures:#?}");
}
