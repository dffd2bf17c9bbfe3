//! Estimated Cortex-M4 cycles of an executed instruction sequence.
//!
//! QEMU models no timing, so [`CycleModel`] prices each instruction of an execution trace with
//! the Cortex-M4 and FPv4-SP timings of ARM's technical reference manual (r0p1, tables 3-1 and
//! 7-1): one cycle for most integer and FPU arithmetic (`vadd`, `vmul`), 3 for the chained and
//! fused multiply-accumulates (`vmla`, `vfma`), 14 for `vdiv`/`vsqrt`, 2 for a single load or
//! store and 1 for one that directly follows another (their address and data phases
//! pipeline), 1 + N for the N-word multiple transfers (`ldm`, `push`, `vldm`, `vpush`), and
//! 1 + P for a taken branch with a pipeline refill P of [`BRANCH_REFILL`] cycles (not-taken: 1).
//! Memory has no wait states: an STM32F405 at 168 MHz reads flash with 5, which its ART
//! accelerator hides for instructions in loops but only partly for constant weights streamed
//! from flash, so a real chip runs slower than this estimate, the more so the more weights.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use super::{McuError, run_tool};

/// Pipeline refill of a taken branch, cycles: the manual gives 1 to 3 depending on the target's
/// alignment and width; the middle is used.
pub const BRANCH_REFILL: u64 = 2;

/// One disassembled instruction.
#[derive(Debug, Clone)]
struct Instruction {
    /// Bytes (2 or 4 in Thumb-2).
    size: u64,
    mnemonic: String,
    operands: String,
}

/// The firmware's instructions by address, priced by [`CycleModel::cycles`].
#[derive(Debug, Clone, Default)]
pub struct CycleModel {
    instructions: HashMap<u64, Instruction>,
}

impl CycleModel {
    /// Disassembles `elf` with `arm-none-eabi-objdump -d`.
    pub fn of_elf(elf: &Path) -> Result<Self, McuError> {
        Ok(Self::parse(&run_tool(Command::new("arm-none-eabi-objdump").arg("-d").arg(elf))?))
    }

    /// Reads objdump's `  addr:\thex [hex] \tmnemonic\toperands` lines; others are skipped.
    fn parse(disassembly: &str) -> Self {
        let mut instructions = HashMap::new();
        for line in disassembly.lines() {
            let mut fields = line.split('\t');
            let (Some(addr), Some(hex), Some(mnemonic)) = (fields.next(), fields.next(), fields.next()) else {
                continue;
            };
            let Some(Ok(addr)) = addr.trim().strip_suffix(':').map(|a| u64::from_str_radix(a, 16)) else { continue };
            let halfwords = hex.split_whitespace().count() as u64;
            if !(1..=2).contains(&halfwords) || hex.split_whitespace().any(|h| h.len() != 4) {
                continue; // data words (`.word`) and literal pools
            }
            let operands = fields.next().unwrap_or("").split(';').next().unwrap_or("").trim().to_string();
            instructions.insert(addr, Instruction { size: 2 * halfwords, mnemonic: mnemonic.trim().into(), operands });
        }
        Self { instructions }
    }

    /// Estimated cycles of the instructions at `pcs`, executed in that order; `next` is the PC
    /// executed after the last one (it decides whether that one was a taken branch). An address
    /// that is not an instruction of the image counts one cycle.
    pub fn cycles(&self, pcs: &[u64], next: u64) -> u64 {
        let mut total = 0;
        let mut after_transfer = false;
        for (i, &pc) in pcs.iter().enumerate() {
            let Some(ins) = self.instructions.get(&pc) else {
                total += 1;
                after_transfer = false;
                continue;
            };
            let following = pcs.get(i + 1).copied().unwrap_or(next);
            let taken = following != pc + ins.size;
            let (cycles, transfer) = price(ins, taken, after_transfer);
            total += cycles;
            after_transfer = transfer;
        }
        total
    }
}

/// Cycles of `ins`, and whether it is a single load or store (which the next one pipelines with).
fn price(ins: &Instruction, taken: bool, after_transfer: bool) -> (u64, bool) {
    // `vldr.32` → `vldr`, `ldr.w` → `ldr`, `addeq` stays: the condition suffix matters only
    // for branches, which are matched by prefix.
    let m = ins.mnemonic.split('.').next().unwrap_or("");
    let ops = ins.operands.as_str();
    let writes_pc = ops.split(',').next().is_some_and(|d| d.trim() == "pc");
    let single_transfer = |m: &str| {
        ["ldr", "str", "vldr", "vstr"].iter().any(|p| m.starts_with(p))
            && !m.starts_with("ldrd")
            && !m.starts_with("strd")
    };
    if single_transfer(m) {
        let cycles = if after_transfer { 1 } else { 2 };
        return (cycles + if writes_pc { BRANCH_REFILL } else { 0 }, true);
    }
    let refill = if taken { BRANCH_REFILL } else { 0 };
    let cycles = match m {
        _ if m.starts_with("ldrd") || m.starts_with("strd") => 3,
        "push" | "pop" | "vpush" | "vpop" | "stmdb" | "stmia" | "stm" | "ldmia" | "ldm" | "ldmdb" | "vldmia"
        | "vstmia" | "vldmdb" | "vstmdb" | "vldm" | "vstm" => {
            1 + register_words(ops) + if ops.contains("pc") { refill } else { 0 }
        }
        "b" | "bl" | "bx" | "blx" | "cbz" | "cbnz" => 1 + refill,
        _ if m.len() == 3 && m.starts_with('b') && !["bic", "bfi", "bfc"].contains(&m) => 1 + refill, // b<cond>
        "vmla" | "vmls" | "vnmla" | "vnmls" | "vfma" | "vfms" | "vfnma" | "vfnms" => 3,
        "vdiv" | "vsqrt" => 14,
        "mla" | "mls" => 2,
        "sdiv" | "udiv" => 7, // 2 to 12 by operand size
        _ if writes_pc => 1 + BRANCH_REFILL,
        _ => 1,
    };
    (cycles, false)
}

/// 32-bit words a register list `{r4, r5-r7, d8-d11}` transfers (a `d` register is two).
fn register_words(operands: &str) -> u64 {
    let Some(list) = operands.split_once('{').and_then(|(_, r)| r.split_once('}')).map(|(l, _)| l) else {
        return 1;
    };
    list.split(',')
        .map(|item| {
            let item = item.trim();
            let words = if item.starts_with('d') { 2 } else { 1 };
            let count = match item.split_once('-') {
                Some((a, b)) => register_number(b).saturating_sub(register_number(a)) + 1,
                None => 1,
            };
            words * count
        })
        .sum()
}

fn register_number(name: &str) -> u64 {
    name.trim().trim_start_matches(|c: char| c.is_ascii_alphabetic()).parse().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING: &str = "
0000068c <dense>:
     68c:\te92d 4ff0 \tstmdb\tsp!, {r4, r5, r6, r7, r8, r9, sl, fp, lr}
     690:\ted2d 8b08 \tvpush\t{d8-d11}
     694:\tb085      \tsub\tsp, #20
     6da:\ted91 7a00 \tvldr\ts14, [r1]
     6de:\tedd1 4a01 \tvldr\ts9, [r1, #4]
     70e:\tee26 0a85 \tvmul.f32\ts0, s13, s10
     71e:\tee37 7a00 \tvadd.f32\ts14, s14, s0
     720:\teea0 1a20 \tvfma.f32\ts2, s0, s1
     724:\td058      \tbeq.n\t7a0 <dense+0x114>
     726:\tbd70      \tpop\t{r4, r5, r6, pc}
     a20:\t3f800000 \t.word\t0x3f800000
";

    #[test]
    fn instructions_are_priced_by_the_manuals_timings() {
        let m = CycleModel::parse(LISTING);
        assert!(!m.instructions.contains_key(&0xa20), "literal pool words are not instructions");
        // stmdb of 9 registers: 10; vpush of 4 d registers (8 words): 9; sub: 1.
        assert_eq!(m.cycles(&[0x68c, 0x690, 0x694], 0x696), 10 + 9 + 1);
        // Two loads in a row pipeline: 2 + 1; then vmul 1, vadd 1, vfma 3.
        assert_eq!(m.cycles(&[0x6da, 0x6de, 0x70e, 0x71e, 0x720], 0x724), 3 + 1 + 1 + 3);
        // A conditional branch: 1 not taken, 1 + refill taken.
        assert_eq!(m.cycles(&[0x724], 0x726), 1);
        assert_eq!(m.cycles(&[0x724], 0x7a0), 1 + BRANCH_REFILL);
        // pop {.., pc}: 1 + 4 words + refill.
        assert_eq!(m.cycles(&[0x726], 0x100), 5 + BRANCH_REFILL);
        // Unknown addresses count one cycle each.
        assert_eq!(m.cycles(&[0x9999], 0x999b), 1);
    }

    #[test]
    fn register_lists_count_words() {
        assert_eq!(register_words("sp!, {r4, r5-r7, lr}"), 5);
        assert_eq!(register_words("{d8-d11}"), 8);
        assert_eq!(register_words("fp!, {s13}"), 1);
        assert_eq!(register_words("r0, [r1]"), 1);
    }
}
