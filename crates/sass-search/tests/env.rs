//! The environment at the level of instructions and text: only legal actions are offered,
//! every applied move is a verified legal reordering, a move and its inverse give the
//! original order back, and the correctness check catches a wrong kernel.

mod common;

use trident_sass::rewrite::legal_range;
use trident_sass::verify::{reordering, timing};
use trident_sass_search::{is_memory, Action, Env};

fn env(which: &str, arch: &str) -> Env {
    Env::new(common::problem(which, arch), common::disassembler()).unwrap_or_else(|e| panic!("{which} {arch}: {e}"))
}

#[test]
fn actions_are_legal_memory_moves_and_every_move_verifies() {
    if !common::tools() {
        return;
    }
    for (which, arch) in [("softmax", "sm_80"), ("softmax", "sm_90a"), ("matmul", "sm_80")] {
        let mut e = env(which, arch);
        assert!(e.original_cycles > 0);
        let orig = e.original().clone();
        let k = e.kernel;
        let mut s = orig.clone();
        let mut applied = 0;
        // A walk of legal moves: every state's actions checked, every move re-verified here.
        for step in 0..24 {
            let actions = e.actions(&s);
            assert!(!actions.is_empty(), "{which} {arch}: no legal move at step {step}");
            for a in &actions {
                assert!(
                    is_memory(&s.text[a.at()]),
                    "{which} {arch}: {} is not a memory instruction",
                    s.text[a.at()].line()
                );
                let (lo, hi) = legal_range(&s.text, a.at()).unwrap();
                let to = a.at() as isize + a.by();
                assert!(lo as isize <= to && to <= hi as isize, "{which} {arch}: {a:?} outside [{lo}, {hi}]");
            }
            // Moves the mask forbids are never offered: a memory instruction whose range is
            // just itself has no action.
            for (i, t) in s.text.iter().enumerate() {
                if is_memory(t) && legal_range(&s.text, i).is_ok_and(|(lo, hi)| lo == i && hi == i) {
                    assert!(actions.iter().all(|a| a.at() != i));
                }
            }
            let a = actions[(step * 7) % actions.len()];
            let before = s.clone();
            let Ok(next) = e.apply(&s, a) else { continue };
            // `apply` leaves its input alone.
            assert_eq!(before.cubin.kernels[k].instrs, s.cubin.kernels[k].instrs);
            let ki = &next.cubin.kernels[k].instrs;
            assert!(timing(e.sm, ki, &next.text).is_empty(), "{which} {arch}: a move left a timing violation");
            assert!(
                reordering((&orig.cubin.kernels[k].instrs, &orig.text), (ki, &next.text)).is_empty(),
                "{which} {arch}: a move is not a legal reordering of the original"
            );
            assert_eq!(next.moves.len(), s.moves.len() + 1);
            let m = next.moves.last().unwrap();
            assert_eq!((m.from as isize + a.by()) as usize, m.to);
            assert_eq!(next.text[m.to], s.text[m.from], "the text moved with the instruction");
            s = next;
            applied += 1;
        }
        assert!(applied >= 10, "{which} {arch}: only {applied} moves applied");
        e.check(&s, 7).unwrap_or_else(|why| panic!("{which} {arch}: a walk of legal moves is wrong: {why}"));
    }
}

#[test]
fn a_move_and_its_inverse_give_the_original_order_back() {
    if !common::tools() {
        return;
    }
    let mut e = env("softmax", "sm_80");
    let orig = e.original().clone();
    let k = e.kernel;
    let actions = e.actions(&orig);
    assert!(!actions.is_empty());
    for a in actions {
        let there = e.apply(&orig, a).unwrap();
        let to = (a.at() as isize + a.by()) as usize;
        let back = e.apply(&there, Action::Move { at: to, up: !a.up() }).unwrap();
        assert_eq!(back.text, orig.text, "{a:?}: the order after the inverse move");
        // The words are the original's up to control bits: repairs may have grown stalls.
        for (x, y) in back.cubin.kernels[k].instrs.iter().zip(&orig.cubin.kernels[k].instrs) {
            let mask = !(((1u64 << 23) - 1) << 41);
            assert_eq!(x.lo, y.lo);
            assert_eq!(x.hi & mask, y.hi & mask, "{a:?}: only control bits may differ");
            assert!(x.control().stall >= y.control().stall, "{a:?}: a repair never lowers a stall");
        }
        assert_eq!(back.moves.len(), 2);
    }
}

#[test]
fn illegal_actions_are_refused_and_scores_are_cached() {
    if !common::tools() {
        return;
    }
    let mut e = env("vadd", "sm_80");
    let orig = e.original().clone();
    let exit = orig.text.iter().position(|t| t.opcode == "EXIT").unwrap();
    assert!(e.apply(&orig, Action::Move { at: exit, up: true }).is_err(), "EXIT never moves");
    assert!(e.apply(&orig, Action::Move { at: 0, up: true }).is_err(), "nothing moves above the first instruction");
    assert!(e.apply(&orig, Action::Move { at: orig.text.len() + 5, up: false }).is_err(), "out of range");
    let a = e.actions(&orig)[0];
    let s = e.apply(&orig, a).unwrap();
    let runs = e.stats.evaluations;
    let c1 = e.evaluate(&s).unwrap();
    let c2 = e.evaluate(&s).unwrap();
    assert_eq!(c1, c2);
    assert_eq!(e.stats.evaluations, runs + 1, "the second score came from the cache");
    assert_eq!(e.stats.cache_hits, 1);
    assert_eq!(e.evaluate(&orig).unwrap(), e.original_cycles, "the original is cached by Env::new");
}

#[test]
fn the_check_catches_a_wrong_kernel() {
    if !common::tools() {
        return;
    }
    let mut e = env("vadd", "sm_80");
    let orig = e.original().clone();
    assert!(e.check(&orig, 1).is_ok());
    let k = e.kernel;
    // Swap a dependent adjacent pair, bypassing the mask and the repair: the check must
    // refuse it (the verifier against the original).
    let b = trident_sass::deps::blocks(&orig.text);
    let edge = b
        .iter()
        .flat_map(|&b| trident_sass::deps::dependences(&orig.text, b))
        .find(|x| x.to == x.from + 1 && matches!(x.why, trident_sass::deps::Why::Raw(_)))
        .expect("an adjacent RAW pair");
    let at = edge.from;
    let mut bad = orig.clone();
    let instrs = &mut bad.cubin.kernels[k].instrs;
    instrs.swap(at, at + 1);
    let (o1, o2) = (instrs[at].offset, instrs[at + 1].offset);
    instrs[at].offset = o2;
    instrs[at + 1].offset = o1;
    bad.text.swap(at, at + 1);
    let why = e.check(&bad, 1).expect_err("an unrepaired dependent swap passed the check");
    assert!(why.contains("verifier"), "{why}");
    assert_eq!(e.stats.checks, 2);
    assert_eq!(e.stats.check_failures, 1);
}

#[test]
fn outputs_are_compared_bit_for_bit_on_fresh_inputs() {
    use trident_core::{DType, HostTensor};
    use trident_emu::KernelArg;
    use trident_sass_search::check::{first_difference, fresh_inputs};
    let args = vec![
        KernelArg::Buffer(HostTensor::zeros(DType::F32, &[4, 8])),
        KernelArg::Buffer(HostTensor::from_f64(DType::I32, &[3], &[1.0, 2.0, 3.0])),
        KernelArg::Scalar(32),
        KernelArg::Null,
    ];
    let a = fresh_inputs(&args, 1);
    let b = fresh_inputs(&args, 2);
    assert_eq!(first_difference(&a, &fresh_inputs(&args, 1)), None, "the same seed, the same inputs");
    assert!(first_difference(&a, &b).is_some(), "another seed, other floats");
    let (KernelArg::Buffer(t), KernelArg::Buffer(i)) = (&a[0], &a[1]) else { panic!() };
    assert_eq!(t.shape, vec![4, 8]);
    assert!(t.to_f64_vec().iter().all(|v| (-4.0..4.0).contains(v)) && t.to_f64_vec().iter().any(|v| *v != 0.0));
    assert_eq!(i.to_f64_vec(), vec![1.0, 2.0, 3.0], "integer buffers are kept");
    // One bit of one element is a difference, and it is located.
    let mut c = a.clone();
    if let KernelArg::Buffer(t) = &mut c[0] {
        t.data[4 * 5] ^= 1;
    }
    let d = first_difference(&a, &c).expect("a flipped bit");
    assert!(d.starts_with("argument 0 element 5"), "{d}");
}
