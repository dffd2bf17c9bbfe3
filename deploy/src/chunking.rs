//! Temporal ensembling of action chunks (ACT, Zhao et al. 2023).
//!
//! A policy that predicts a chunk of `H` future goals every cycle gives, for the current
//! cycle, up to `H` predictions: from this cycle's chunk (its first entry), from the previous
//! one (its second), and so on. They are averaged with weights `exp(−m·i)`, `i = 0` for the
//! oldest prediction, as in ACT, which smooths the switch from one chunk to the next. A plain
//! policy is a chunk of 1: its goal passes unchanged.

/// Ring of the last `chunk` predicted chunks.
#[derive(Debug, Clone)]
pub struct ChunkEnsembler {
    chunk: usize,
    dim: usize,
    decay: f64,
    /// `[chunk (slot), chunk (step), dim]`; slot `k % chunk` holds the chunk of cycle `k`.
    ring: Vec<f64>,
    /// Cycles pushed so far.
    cycles: u64,
}

impl ChunkEnsembler {
    /// Ensembles chunks of `chunk` steps of `dim` values with weight decay `decay` (ACT: 0.01).
    pub fn new(chunk: usize, dim: usize, decay: f64) -> Self {
        let chunk = chunk.max(1);
        Self { chunk, dim, decay, ring: vec![0.0; chunk * chunk * dim], cycles: 0 }
    }

    /// Steps per chunk.
    pub fn chunk(&self) -> usize {
        self.chunk
    }

    /// Forgets every stored chunk (after a hold, old predictions are stale).
    pub fn reset(&mut self) {
        self.cycles = 0;
    }

    /// Stores this cycle's chunk (`[chunk, dim]`) and writes the ensembled goal (`[dim]`).
    pub fn push(&mut self, chunk: &[f64], out: &mut [f64]) {
        let (h, d) = (self.chunk, self.dim);
        let slot = (self.cycles % h as u64) as usize;
        self.ring[slot * h * d..(slot + 1) * h * d].copy_from_slice(&chunk[..h * d]);
        self.cycles += 1;
        let available = (self.cycles as usize).min(h);
        out[..d].fill(0.0);
        let mut total = 0.0;
        // i = 0 is the oldest chunk still covering this cycle; its entry `age` steps in.
        for i in 0..available {
            let age = available - 1 - i;
            let cycle = self.cycles - 1 - age as u64;
            let slot = (cycle % h as u64) as usize;
            let w = (-self.decay * i as f64).exp();
            let row = &self.ring[(slot * h + age) * d..(slot * h + age + 1) * d];
            for (o, v) in out.iter_mut().zip(row) {
                *o += w * v;
            }
            total += w;
        }
        for o in &mut out[..d] {
            *o /= total;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_of_one_passes_goals_through() {
        let mut e = ChunkEnsembler::new(1, 2, 0.01);
        let mut out = [0.0; 2];
        for k in 0..5 {
            e.push(&[k as f64, -(k as f64)], &mut out);
            assert_eq!(out, [k as f64, -(k as f64)]);
        }
    }

    #[test]
    fn overlapping_chunks_are_averaged_with_act_weights() {
        let m = 0.5;
        let mut e = ChunkEnsembler::new(3, 1, m);
        let mut out = [0.0];
        // Chunk of cycle k predicts 10k + step for cycles k, k+1, k+2.
        let chunk = |k: u64| [10.0 * k as f64, 10.0 * k as f64 + 1.0, 10.0 * k as f64 + 2.0];
        e.push(&chunk(0), &mut out);
        assert_eq!(out, [0.0]);
        e.push(&chunk(1), &mut out);
        // Oldest (cycle 0, entry 1 = 1.0) weight 1, newest (cycle 1, entry 0 = 10.0) weight e^-m.
        let w = (-m).exp();
        assert!((out[0] - (1.0 + w * 10.0) / (1.0 + w)).abs() < 1e-12);
        e.push(&chunk(2), &mut out);
        let (w1, w2) = ((-m).exp(), (-2.0 * m).exp());
        assert!((out[0] - (2.0 + w1 * 11.0 + w2 * 20.0) / (1.0 + w1 + w2)).abs() < 1e-12);
        e.push(&chunk(3), &mut out);
        // Cycle 3: chunks 1 (entry 2 = 12), 2 (entry 1 = 21), 3 (entry 0 = 30).
        assert!((out[0] - (12.0 + w1 * 21.0 + w2 * 30.0) / (1.0 + w1 + w2)).abs() < 1e-12);
        e.reset();
        e.push(&chunk(4), &mut out);
        assert_eq!(out, [40.0]);
    }
}
