//! The cheap action mask (`Mask`: one pass over adjacent pairs, updated after each move)
//! gives exactly the actions `rewrite::legal_range` gives, on Triton's kernels through
//! `ptxas` (sm_80 and sm_90a) and along random walks of moves.

mod common;

use trident_sass::disasm::Text;
use trident_sass::rewrite::{legal_range, move_instr};
use trident_sass_search::{is_memory, Action, Mask};

/// The reference: each memory instruction, one slot up or down where `legal_range` allows.
fn reference(text: &[Text]) -> Vec<Action> {
    let mut out = vec![];
    for (i, t) in text.iter().enumerate() {
        if !is_memory(t) {
            continue;
        }
        let Ok((lo, hi)) = legal_range(text, i) else { continue };
        if lo < i {
            out.push(Action::Move { at: i, up: true });
        }
        if hi > i {
            out.push(Action::Move { at: i, up: false });
        }
    }
    out
}

#[test]
fn the_mask_gives_legal_ranges_actions_on_real_kernels_and_random_walks() {
    if !common::tools() {
        return;
    }
    // (kernel, target, steps, compare with the reference every `every` steps): the
    // reference costs a block's dependence graph per memory instruction, so the 900-instruction
    // attention kernel is compared less often (the incremental mask is carried all the way).
    let cases = [
        ("softmax", "sm_80", 40, 1),
        ("softmax", "sm_90a", 40, 1),
        ("layernorm", "sm_80", 40, 1),
        ("matmul", "sm_80", 60, 2),
        ("matmul", "sm_90a", 60, 2),
        ("attn_fwd", "sm_80", 60, 20),
        ("attn_fwd", "sm_90a", 60, 20),
    ];
    for (which, arch, steps, every) in cases {
        let t0 = std::time::Instant::now();
        let (mut cubin, k, mut text) = common::compiled(which, arch);
        let t1 = t0.elapsed();
        let mut mask = Mask::new(&text);
        let mut seed = 0x2545_f491_4f6c_dd1du64 ^ (which.len() as u64 * 131 + arch.len() as u64);
        let mut moved = 0;
        for step in 0..=steps {
            let actions = mask.actions(&text);
            if step % every == 0 || step == steps {
                assert_eq!(actions, reference(&text), "{which} {arch}: step {step}: mask ≠ legal_range");
                assert_eq!(mask, Mask::new(&text), "{which} {arch}: step {step}: incremental ≠ fresh");
            }
            if actions.is_empty() || step == steps {
                break;
            }
            // xorshift: a walk that differs per kernel, the same every run.
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let a = actions[(seed % actions.len() as u64) as usize];
            let Ok(m) = move_instr(&mut cubin, k, &text, a.at(), a.by()) else { continue };
            text = m.text;
            mask = mask.after_swap(&text, m.from.min(m.to));
            moved += 1;
        }
        assert!(moved >= steps / 2, "{which} {arch}: only {moved} moves made");
        eprintln!(
            "{which} {arch}: {moved} moves, mask = legal_range throughout ({} instructions; compile {t1:?}, all {:?})",
            text.len(),
            t0.elapsed()
        );
    }
}
