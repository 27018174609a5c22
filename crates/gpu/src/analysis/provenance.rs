//! Pointer provenance: which kernel parameter each pointer value was derived from.
//!
//! Sanitize mode (`GpuOptions::sanitize`) checks every global access against the extent of
//! "the buffer its pointer came from". In Triton's dialect a pointer is a parameter moved
//! by `addptr` and reshaped (splat, broadcast, expand_dims, reshape, trans, join, cat,
//! split, layout conversions), carried through loops and `if`s, or chosen by `select`. This
//! dataflow follows those edges (block arguments of `for`/`while`/`if` positionally, to a
//! fixpoint) and gives each pointer value one of:
//!
//! * [`Provenance::Param`]: derived from that one parameter only — the access is checked
//!   against that parameter's extent, so running off its end is caught even where the
//!   address lands inside another buffer;
//! * [`Provenance::Any`]: not unique — a `select` between pointers of two parameters, a
//!   pointer loaded from memory or made from an integer (`int_to_ptr`) — the access is
//!   checked against the union of all pointer parameters' extents (it must fall inside one
//!   of them), and a violation is reported against the nearest one.
//!
//! Values the analysis never reaches (not pointers) have no entry.

use std::collections::HashMap;
use trident_ir::{CastKind, Elem, Function, OpKind, Type, Value};

/// Where a pointer value came from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Provenance {
    /// Derived from IR parameter `i` (its index in `Function::params`) only.
    Param(usize),
    /// From more than one parameter, or from memory or an integer.
    Any,
}

impl Provenance {
    fn join(a: Option<Provenance>, b: Option<Provenance>) -> Option<Provenance> {
        match (a, b) {
            (None, x) | (x, None) => x,
            (Some(x), Some(y)) if x == y => Some(x),
            _ => Some(Provenance::Any),
        }
    }
}

fn is_ptr(t: &Type) -> bool {
    matches!(t.elem(), Elem::Ptr { .. })
}

/// The provenance of every pointer value of a function.
#[derive(Clone, Debug, Default)]
pub struct ProvenanceAnalysis {
    map: HashMap<Value, Provenance>,
}

impl ProvenanceAnalysis {
    pub fn run(f: &Function) -> ProvenanceAnalysis {
        let mut map: HashMap<Value, Provenance> = HashMap::new();
        for (i, p) in f.params.iter().enumerate() {
            if is_ptr(f.ty(p.value)) {
                map.insert(p.value, Provenance::Param(i));
            }
        }
        let ops = f.all_ops();
        // Joins only move up a lattice of height 2, so this ends after a few rounds.
        loop {
            let mut changed = false;
            let mut set = |map: &mut HashMap<Value, Provenance>, v: Value, p: Option<Provenance>| {
                if !is_ptr(f.ty(v)) {
                    return;
                }
                let old = map.get(&v).copied();
                let new = Provenance::join(old, p);
                if new != old {
                    if let Some(n) = new {
                        map.insert(v, n);
                        changed = true;
                    }
                }
            };
            for &op in &ops {
                let d = &f.ops[op];
                let get = |map: &HashMap<Value, Provenance>, v: Value| map.get(&v).copied();
                match &d.kind {
                    OpKind::Load { .. } | OpKind::AtomicRmw { .. } | OpKind::AtomicCas { .. } => {
                        for &r in &d.results {
                            set(&mut map, r, Some(Provenance::Any));
                        }
                    }
                    OpKind::Cast { kind: CastKind::IntToPtr, .. } => {
                        set(&mut map, d.results[0], Some(Provenance::Any));
                    }
                    OpKind::For => {
                        // operands [lb, ub, step, init...]; body args (iv, iter...); yield next.
                        let body = d.regions[0];
                        let yielded = terminator_operands(f, body);
                        for (i, &r) in d.results.iter().enumerate() {
                            let init = d.operands.get(3 + i).and_then(|&v| get(&map, v));
                            let next = yielded.get(i).and_then(|&v| get(&map, v));
                            let p = Provenance::join(init, next);
                            set(&mut map, r, p);
                            if let Some(&a) = f.blocks[body].args.get(1 + i) {
                                set(&mut map, a, p);
                            }
                        }
                    }
                    OpKind::If => {
                        for (i, &r) in d.results.iter().enumerate() {
                            let mut p = None;
                            for &b in &d.regions {
                                p = Provenance::join(p, terminator_operands(f, b).get(i).and_then(|&v| get(&map, v)));
                            }
                            set(&mut map, r, p);
                        }
                    }
                    OpKind::While => {
                        // before args ← init ⊔ after's yield; after args and results ← condition's forwarded.
                        let (before, after) = (d.regions[0], d.regions[1]);
                        let next = terminator_operands(f, after);
                        for (i, &a) in f.blocks[before].args.iter().enumerate() {
                            let init = d.operands.get(i).and_then(|&v| get(&map, v));
                            let p = Provenance::join(init, next.get(i).and_then(|&v| get(&map, v)));
                            set(&mut map, a, p);
                        }
                        let fwd = terminator_operands(f, before);
                        for i in 0..d.results.len() {
                            let p = fwd.get(1 + i).and_then(|&v| get(&map, v));
                            set(&mut map, d.results[i], p);
                            if let Some(&a) = f.blocks[after].args.get(i) {
                                set(&mut map, a, p);
                            }
                        }
                    }
                    _ if d.regions.is_empty() => {
                        // Everything else that yields a pointer derives it from its pointer operands
                        // (addptr, select, shape ops, layout conversions, bitcasts of pointers).
                        if d.results.iter().any(|&r| is_ptr(f.ty(r))) {
                            let mut p = None;
                            for &o in &d.operands {
                                if is_ptr(f.ty(o)) {
                                    p = Provenance::join(p, Some(get(&map, o).unwrap_or(Provenance::Any)));
                                }
                            }
                            // A pointer from no pointer operand (none today) is unknown.
                            let p = p.or(Some(Provenance::Any));
                            for &r in &d.results {
                                set(&mut map, r, p);
                            }
                        }
                    }
                    _ => {
                        // Other ops with regions (reduce, scan) over pointers: unknown.
                        for &r in &d.results {
                            set(&mut map, r, Some(Provenance::Any));
                        }
                    }
                }
            }
            if !changed {
                break;
            }
        }
        ProvenanceAnalysis { map }
    }

    /// The provenance of pointer value `v` (`Any` for one the analysis did not reach).
    pub fn of(&self, v: Value) -> Provenance {
        self.map.get(&v).copied().unwrap_or(Provenance::Any)
    }
}

fn terminator_operands(f: &Function, b: trident_ir::Block) -> Vec<Value> {
    f.blocks[b]
        .ops
        .last()
        .filter(|&&op| matches!(f.ops[op].kind, OpKind::Yield | OpKind::Condition))
        .map(|&op| f.ops[op].operands.to_vec())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_select_loops_and_loaded_pointers() {
        let text = r#"
kernel @k(%a: ptr<f32>, %b: ptr<f32>, %pp: ptr<i64>, %c: i1, %n: i32) {
  %one = constant [value = 1] : i32
  %a1 = addptr %a, %one : ptr<f32>
  %s = select %c, %a, %b : ptr<f32>
  %lb = constant [value = 0] : i32
  %pa, %pb = for %lb, %n, %one, %a1, %b {
  ^(%iv: i32, %p: ptr<f32>, %q: ptr<f32>):
    %p2 = addptr %p, %one : ptr<f32>
    yield %p2, %q
  } : ptr<f32>, ptr<f32>
  %mixed = for %lb, %n, %one, %a {
  ^(%jv: i32, %r: ptr<f32>):
    yield %b
  } : ptr<f32>
  %bits = load %pp : i64
  %fromint = cast %bits [kind = int_to_ptr] : ptr<f32>
  return
}
"#;
        let m = trident_ir::parse::parse_module(text).unwrap_or_else(|d| panic!("{}", d.message));
        let f = &m.funcs[0];
        let a = ProvenanceAnalysis::run(f);
        let named = |name: &str| {
            let ops = f.all_ops();
            let i = ["a1", "s", "pa", "pb", "mixed", "fromint"].iter().position(|n| *n == name).unwrap();
            let wanted = [1usize, 2, 4, 4, 5, 7][i];
            let r = if name == "pb" { 1 } else { 0 };
            f.ops[ops.iter().copied().filter(|&o| f.ops[o].parent == Some(f.body)).nth(wanted).unwrap()].results[r]
        };
        assert_eq!(a.of(named("a1")), Provenance::Param(0));
        assert_eq!(a.of(named("s")), Provenance::Any, "a select between two parameters");
        assert_eq!(a.of(named("pa")), Provenance::Param(0), "carried through a loop");
        assert_eq!(a.of(named("pb")), Provenance::Param(1));
        assert_eq!(a.of(named("mixed")), Provenance::Any, "a loop that swaps the parameter");
        assert_eq!(a.of(named("fromint")), Provenance::Any, "int_to_ptr");
    }
}
