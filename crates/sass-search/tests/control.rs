//! Control-bit edits (`trident_sass_search::control`): the reuse slots the bank model and the
//! edit mask rely on, checked against what `ptxas` and `nvdisasm` do; random walks of edits
//! (and moves) in which every offered edit passes the verifier; short searches with edits on
//! the SASS emulator whose kept schedules re-check independently.

mod common;

use trident_sass::banks::{slot_operand, source_slots};
use trident_sass::disasm::section_text;
use trident_sass::rewrite::move_instr;
use trident_sass::verify::timing;
use trident_sass::Cubin;
use trident_sass_search::control::{edits, make};
use trident_sass_search::{search, Action, Algo, Budget, Edit, Env, Family, Mask, Options};

const KERNELS: [&str; 4] = ["softmax", "layernorm", "matmul", "attn_fwd"];

/// Every `.reuse` `nvdisasm` prints on a modelled form sits at the operand of a set flag's
/// slot and the reverse; every instruction with a flag has its yield bit set (the model's
/// "a yielding instruction keeps nothing"); and most of `ptxas`'s flags meet the edit mask's
/// rule (the next instruction reads the same register in the same slot) — many of the others
/// serve the instruction after it, which the model does not credit (README).
#[test]
fn reuse_flags_sit_at_the_slots_the_bank_model_names() {
    if !common::tools() {
        return;
    }
    let (mut flags, mut modelled, mut rule, mut second) = (0, 0, 0, 0);
    for which in KERNELS {
        for arch in ["sm_80", "sm_90a"] {
            let (cubin, k, text) = common::compiled(which, arch);
            let instrs = &cubin.kernels[k].instrs;
            for (i, t) in text.iter().enumerate() {
                let c = instrs[i].control();
                if c.reuse == 0 {
                    continue;
                }
                flags += c.reuse.count_ones();
                assert!(c.yield_bit, "{which} {arch}: `{}` has reuse flags and a cleared yield bit", t.line());
                let Some(slots) = source_slots(t) else { continue };
                modelled += c.reuse.count_ones();
                let printed: Vec<usize> = t
                    .operands
                    .split(',')
                    .enumerate()
                    .filter(|(_, o)| o.trim().ends_with(".reuse"))
                    .map(|(j, _)| j)
                    .collect();
                let named: Vec<usize> =
                    (0..4).filter(|s| c.reuse >> s & 1 == 1).filter_map(|s| slot_operand(t, s)).collect();
                assert_eq!(printed, named, "{which} {arch}: `{}` flags {:04b}", t.line(), c.reuse);
                let next = text.get(i + 1).and_then(source_slots);
                let after = text.get(i + 2).and_then(source_slots);
                for s in (0..4).filter(|s| c.reuse >> s & 1 == 1) {
                    if next.is_some_and(|n| n[s].is_some() && n[s] == slots[s]) {
                        rule += 1;
                    } else if after.is_some_and(|n| n[s].is_some() && n[s] == slots[s]) {
                        second += 1;
                    }
                }
            }
        }
    }
    eprintln!(
        "{flags} reuse flags, {modelled} on modelled forms: {rule} for the next instruction (same register, same slot), {second} for the one after"
    );
    assert!(modelled > 100 && modelled * 10 >= flags * 8, "the model covers most flags");
    // The edit rule (the next instruction) is the commonest case of ptxas's own flags.
    assert!(rule * 2 >= modelled, "ptxas's flags for the next instruction: {rule} of {modelled}");
}

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

/// Every edit offered on a schedule applied at once (not a legal schedule together, but each
/// word must be one `nvdisasm` can read): one disassembly checks all their encodings.
fn offered_edits_encode(cubin: &Cubin, k: usize, text: &[trident_sass::disasm::Text], what: &str) {
    let offered = edits(cubin.sm(), &cubin.kernels[k].instrs, text);
    let (mut all, mut t) = (cubin.clone(), text.to_vec());
    for a in &offered {
        let Action::Edit { at, edit } = *a else { unreachable!() };
        make(&mut all.kernels[k].instrs, &mut t, at, edit);
    }
    let bytes = all.write().unwrap();
    let back = common::disassembler()(&bytes).unwrap_or_else(|e| panic!("{what}: nvdisasm on all edits: {e}"));
    let again = Cubin::parse(&bytes).unwrap();
    assert_eq!(section_text(&again, &back, again.kernels[k].text_section).len(), t.len());
}

/// Random walks mixing control-bit edits and moves on four kernels, both targets: every fifth
/// state, every edit offered encodes to a word `nvdisasm` reads (all applied at once); at every
/// state every offered edit (up to 40, sampled) passes the verifier, a reuse edit only where
/// the next instruction reads the register in that slot; the stalls the mask keeps are not all
/// safe (the verifier rejects some), so it is not vacuous; the end state, written and read back
/// by `nvdisasm`, gives the same text (`.reuse` where the edits put it) and verifies.
#[test]
fn random_walks_of_offered_edits_always_verify() {
    if !common::tools() {
        return;
    }
    let dis = common::disassembler();
    for which in KERNELS {
        for arch in ["sm_80", "sm_90a"] {
            let (mut cubin, k, mut text) = common::compiled(which, arch);
            let sm = cubin.sm();
            // What a move's repair makes of a stall it grows to 12 or more: the yield bit
            // cleared. The edits offered there (lowering those stalls to 11 among them) encode.
            {
                let mut raised = cubin.clone();
                for a in edits(sm, &cubin.kernels[k].instrs, &text) {
                    if let Action::Edit { at, edit: Edit::LowerStall } = a {
                        let mut c = raised.kernels[k].instrs[at].control();
                        c.stall = 12;
                        c.yield_bit = false;
                        raised.kernels[k].instrs[at].set_control(c);
                    }
                }
                assert!(timing(sm, &raised.kernels[k].instrs, &text).is_empty());
                offered_edits_encode(&raised, k, &text, &format!("{which} {arch} with raised stalls"));
            }
            let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ (which.len() as u64 * 977 + arch.len() as u64);
            let (mut made, mut checked, mut withheld_unsafe) = (0, 0, 0);
            for step in 0..30 {
                if step % 5 == 0 {
                    offered_edits_encode(&cubin, k, &text, &format!("{which} {arch} step {step}"));
                }
                let offered = edits(sm, &cubin.kernels[k].instrs, &text);
                for a in &offered {
                    let Action::Edit { at, edit } = *a else { panic!("an edit mask offered {a:?}") };
                    if let Edit::SetReuse(s) = edit {
                        let (x, y) = (source_slots(&text[at]).unwrap(), source_slots(&text[at + 1]).unwrap());
                        assert!(x[s as usize].is_some() && x[s as usize] == y[s as usize], "{which} {arch}: {a:?}");
                    }
                }
                for _ in 0..offered.len().min(40) {
                    let a = offered[(xorshift(&mut seed) % offered.len() as u64) as usize];
                    let Action::Edit { at, edit } = a else { unreachable!() };
                    let (mut ins, mut t) = (cubin.kernels[k].instrs.clone(), text.clone());
                    make(&mut ins, &mut t, at, edit);
                    let v = timing(sm, &ins, &t);
                    assert!(v.is_empty(), "{which} {arch} step {step}: offered {a:?} fails: {}", v[0].describe(&t));
                    checked += 1;
                }
                // Stalls the mask withholds: some of them the verifier would reject.
                if step == 0 {
                    for at in 0..text.len() {
                        let a = Action::Edit { at, edit: Edit::LowerStall };
                        if cubin.kernels[k].instrs[at].control().stall < 2 || offered.contains(&a) {
                            continue;
                        }
                        let (mut ins, mut t) = (cubin.kernels[k].instrs.clone(), text.clone());
                        make(&mut ins, &mut t, at, Edit::LowerStall);
                        withheld_unsafe += !timing(sm, &ins, &t).is_empty() as usize;
                    }
                }
                // Step: an edit two times in three, else a legal move (whose repairs change
                // stalls and clear reuse flags the edits then meet).
                if !xorshift(&mut seed).is_multiple_of(3) && !offered.is_empty() {
                    let a = offered[(xorshift(&mut seed) % offered.len() as u64) as usize];
                    let Action::Edit { at, edit } = a else { unreachable!() };
                    make(&mut cubin.kernels[k].instrs, &mut text, at, edit);
                    made += 1;
                } else {
                    let moves = Mask::new(&text).actions(&text);
                    if moves.is_empty() {
                        continue;
                    }
                    let a = moves[(xorshift(&mut seed) % moves.len() as u64) as usize];
                    if let Ok(m) = move_instr(&mut cubin, k, &text, a.at(), a.by()) {
                        text = m.text;
                    }
                }
                assert!(timing(sm, &cubin.kernels[k].instrs, &text).is_empty());
            }
            assert!(made >= 10, "{which} {arch}: only {made} edits made");
            assert!(withheld_unsafe > 0, "{which} {arch}: the stall mask withheld nothing unsafe");
            let bytes = cubin.write().unwrap();
            let again = Cubin::parse(&bytes).unwrap();
            let back = section_text(&again, &dis(&bytes).unwrap(), again.kernels[k].text_section);
            // Equal but for `.reuse`, which a move's repair clears in the bits and leaves in
            // the text it returns; the edits' flags are where `nvdisasm` prints them.
            let plain = |t: &trident_sass::disasm::Text| t.line().replace(".reuse", "");
            assert_eq!(back.len(), text.len());
            for (i, (b, t)) in back.iter().zip(&text).enumerate() {
                assert_eq!(plain(b), plain(t), "{which} {arch}: instruction {i}");
                let c = again.kernels[k].instrs[i].control();
                if source_slots(b).is_some() {
                    let printed: Vec<usize> = b
                        .operands
                        .split(',')
                        .enumerate()
                        .filter(|(_, o)| o.ends_with(".reuse"))
                        .map(|(j, _)| j)
                        .collect();
                    let named: Vec<usize> =
                        (0..4).filter(|s| c.reuse >> s & 1 == 1).filter_map(|s| slot_operand(b, s)).collect();
                    assert_eq!(printed, named, "{which} {arch}: `{}`", b.line());
                }
            }
            assert!(timing(sm, &again.kernels[k].instrs, &back).is_empty());
            eprintln!(
                "{which} {arch}: {made} edits made, {checked} offered edits verified, {withheld_unsafe} withheld stalls unsafe"
            );
        }
    }
}

/// `Env`'s edits: refused where the mask says no, and a family selects the actions.
#[test]
fn env_offers_the_family_it_is_set_to_and_refuses_illegal_edits() {
    if !common::tools() {
        return;
    }
    let mut e = Env::new(common::problem("softmax", "sm_80"), common::disassembler()).unwrap();
    let orig = e.original().clone();
    e.family = Family::Moves;
    let moves = e.actions(&orig);
    assert!(!moves.is_empty() && moves.iter().all(|a| matches!(a, Action::Move { .. })));
    e.family = Family::Control;
    let edits = e.actions(&orig);
    assert!(!edits.is_empty() && edits.iter().all(|a| matches!(a, Action::Edit { .. })));
    e.family = Family::All;
    assert_eq!(e.actions(&orig).len(), moves.len() + edits.len());
    // A stall of 1 cannot go lower; an instruction past the end does not exist.
    let one = (0..orig.text.len()).find(|&i| orig.cubin.kernels[e.kernel].instrs[i].control().stall == 1).unwrap();
    assert!(e.apply(&orig, Action::Edit { at: one, edit: Edit::LowerStall }).is_err());
    assert!(e.apply(&orig, Action::Edit { at: orig.text.len() + 3, edit: Edit::SetReuse(0) }).is_err());
    let a = edits[0];
    let s = e.apply(&orig, a).unwrap();
    assert_eq!(s.moves.last().unwrap().action(), a);
    assert_eq!(e.stats.edits, 1);
}

/// Short searches with edits on the SASS emulator (greedy on softmax sm_80 with edits only;
/// annealing with everything on matmul sm_90a): they gain, every kept schedule re-checks
/// independently, nothing failed a check or the verifier, and the steps replay to the best.
#[test]
fn searches_with_edits_gain_and_keep_only_checked_schedules() {
    if !common::tools() {
        return;
    }
    for (which, arch, family, algo) in
        [("softmax", "sm_80", Family::Control, Algo::Greedy), ("matmul", "sm_90a", Family::All, Algo::Anneal)]
    {
        let mut e = Env::new(common::problem(which, arch), common::disassembler()).unwrap();
        e.family = family;
        let opts = Options { algo, budget: Budget::Evaluations(30), seed: 7 };
        let out = search(&mut e, &opts, &mut |_| {}).unwrap();
        assert!(out.best_cycles < out.original_cycles, "{which} {arch}: no gain from edits");
        assert!(out.best.moves.iter().any(|m| m.edit.is_some()));
        assert_eq!(out.stats.check_failures, 0);
        assert_eq!(out.stats.verifier_rejected, 0);
        common::recheck(&e, &out.bytes, 5);
        let mut s = e.original().clone();
        for m in &out.best.moves {
            s = e.apply(&s, m.action()).unwrap();
        }
        assert_eq!(s.cubin.kernels[e.kernel].instrs, out.best.cubin.kernels[e.kernel].instrs);
        eprintln!(
            "{which} {arch} {} {}: {} → {} cycles, {} steps ({} edits), {} evaluations",
            family.name(),
            algo.name(),
            out.original_cycles,
            out.best_cycles,
            out.best.moves.len(),
            out.best.moves.iter().filter(|m| m.edit.is_some()).count(),
            out.stats.evaluations
        );
    }
}
