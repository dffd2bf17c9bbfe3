//! The learners' random numbers: one ChaCha8 generator per learner, saved with its checkpoints
//! so that a resumed run draws exactly what an uninterrupted one would.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

/// Fills `out` with standard-normal samples.
pub(crate) fn fill_normal(rng: &mut ChaCha8Rng, out: &mut [f32]) {
    for x in out {
        *x = rng.sample(StandardNormal);
    }
}

/// Serializable state of a ChaCha8 generator.
pub(crate) fn rng_state(rng: &ChaCha8Rng) -> embodia_sim::RngState {
    embodia_sim::RngState { seed: rng.get_seed(), stream: rng.get_stream(), word_pos: rng.get_word_pos() }
}

/// Rebuilds a ChaCha8 generator from its saved state.
pub(crate) fn rng_from_state(s: &embodia_sim::RngState) -> ChaCha8Rng {
    use rand::SeedableRng;
    let mut rng = ChaCha8Rng::from_seed(s.seed);
    rng.set_stream(s.stream);
    rng.set_word_pos(s.word_pos);
    rng
}
