//! Axis analysis: what is known about the values of integer and pointer tensors
//! along each dimension, for coalescing and vectorising memory accesses.
//!
//! Per dim `d` of a value:
//! * `contig[d]`: elements come in runs of at least this many consecutive values
//!   (`x, x+1, x+2, ...` along `d`), runs starting at multiples of `contig[d]`;
//! * `div[d]`: the first element of every run (every element when `contig[d] == 1`)
//!   is a multiple of this power of two (pointers: their byte address);
//! * `constancy[d]`: elements come in aligned runs of at least this many equal values.
//!
//! Facts are seeded from parameter divisibility (`ParamAttrs::divisibility`),
//! constants, `arange`, and the `multiple_of`/`max_contiguous`/`max_constancy` hints,
//! and propagated through arithmetic. Loop-carried values are solved to a fixed point.
//! Scalars are treated as rank-1 values of one element.

use smallvec::{smallvec, SmallVec};
use std::collections::HashMap;
use trident_ir::{BinaryOp, Block, CastKind, CmpPred, Const, Elem, Function, Op, OpKind, Type, Value, ValueDef};

/// Largest divisibility we track (values beyond are clamped): "divisible by anything we care about".
pub const MAX_DIV: u64 = 1 << 30;

type Dims = SmallVec<[u64; 4]>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AxisInfo {
    pub contig: Dims,
    pub div: Dims,
    pub constancy: Dims,
    /// The value of every element, when known.
    pub constant: Option<i64>,
}

fn pow2_divisor(v: i64) -> u64 {
    if v == 0 {
        MAX_DIV
    } else {
        (1u64 << v.unsigned_abs().trailing_zeros()).min(MAX_DIV)
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    // All our quantities are powers of two (or shape sizes, also powers of two).
    a.min(b).max(1)
}

impl AxisInfo {
    /// Nothing known.
    pub fn unknown(rank: usize) -> AxisInfo {
        let r = rank.max(1);
        AxisInfo { contig: smallvec![1; r], div: smallvec![1; r], constancy: smallvec![1; r], constant: None }
    }

    /// A scalar or splat known to be divisible by `div`.
    pub fn uniform(shape: &[u32], div: u64, constant: Option<i64>) -> AxisInfo {
        let r = shape.len().max(1);
        let constancy: Dims = if shape.is_empty() { smallvec![1] } else { shape.iter().map(|&d| d as u64).collect() };
        AxisInfo { contig: smallvec![1; r], div: smallvec![div.min(MAX_DIV); r], constancy, constant }
    }

    fn rank(&self) -> usize {
        self.div.len()
    }

    /// Meet of two facts (what holds for both), for values with several definitions.
    pub fn meet(&self, o: &AxisInfo) -> AxisInfo {
        let z = |a: &Dims, b: &Dims| -> Dims { a.iter().zip(b).map(|(&x, &y)| gcd(x, y)).collect() };
        AxisInfo {
            contig: z(&self.contig, &o.contig),
            div: z(&self.div, &o.div),
            constancy: z(&self.constancy, &o.constancy),
            constant: if self.constant == o.constant { self.constant } else { None },
        }
    }

    /// Elementwise divisibility: what every element (not just run starts) is divisible by.
    fn elem_div(&self, d: usize) -> u64 {
        if self.contig[d] > 1 {
            1
        } else {
            self.div[d]
        }
    }
}

/// The analysis result for one function.
#[derive(Clone, Debug, Default)]
pub struct AxisAnalysis {
    pub info: HashMap<Value, AxisInfo>,
}

impl AxisAnalysis {
    pub fn run(f: &Function) -> AxisAnalysis {
        let mut a = AxisAnalysis::default();
        for p in &f.params {
            let ty = f.ty(p.value);
            let div = p.attrs.divisibility.map_or(1, |d| d as u64);
            a.info.insert(p.value, AxisInfo::uniform(ty.shape(), pow2_floor(div), None));
        }
        a.block(f, f.body);
        a
    }

    pub fn get(&self, v: Value) -> Option<&AxisInfo> {
        self.info.get(&v)
    }

    /// The fact for `v`, or "nothing known" of the right rank.
    pub fn of(&self, f: &Function, v: Value) -> AxisInfo {
        self.info.get(&v).cloned().unwrap_or_else(|| AxisInfo::unknown(f.ty(v).shape().len()))
    }

    fn set(&mut self, v: Value, i: AxisInfo) {
        self.info.insert(v, i);
    }

    fn block(&mut self, f: &Function, b: Block) {
        for &op in &f.blocks[b].ops {
            self.op(f, op);
        }
    }

    fn op(&mut self, f: &Function, op: Op) {
        let d = &f.ops[op];
        match &d.kind {
            OpKind::For => self.for_loop(f, op),
            OpKind::If => {
                for &r in &d.regions {
                    self.block(f, r);
                }
                let yields: Vec<Vec<Value>> =
                    d.regions.iter().filter_map(|&r| f.terminator(r)).map(|t| f.ops[t].operands.to_vec()).collect();
                for (i, &res) in d.results.iter().enumerate() {
                    let mut acc: Option<AxisInfo> = None;
                    for y in &yields {
                        if let Some(&v) = y.get(i) {
                            let x = self.of(f, v);
                            acc = Some(match acc {
                                None => x,
                                Some(a) => a.meet(&x),
                            });
                        }
                    }
                    let rank = f.ty(res).shape().len();
                    self.set(res, acc.unwrap_or_else(|| AxisInfo::unknown(rank)));
                }
            }
            OpKind::While => {
                // Loop-carried values of a while: nothing assumed.
                for &r in &d.regions {
                    for &a in &f.blocks[r].args {
                        self.set(a, AxisInfo::unknown(f.ty(a).shape().len()));
                    }
                    self.block(f, r);
                }
                for &res in &d.results {
                    self.set(res, AxisInfo::unknown(f.ty(res).shape().len()));
                }
            }
            _ => {
                for &r in &d.regions {
                    for &a in &f.blocks[r].args {
                        self.set(a, AxisInfo::unknown(f.ty(a).shape().len()));
                    }
                    self.block(f, r);
                }
                let infos = self.compute(f, op);
                for (&r, i) in d.results.iter().zip(infos) {
                    self.set(r, i);
                }
            }
        }
    }

    fn for_loop(&mut self, f: &Function, op: Op) {
        let d = &f.ops[op];
        let body = d.regions[0];
        let args = f.blocks[body].args.clone();
        let inits: Vec<Value> = d.operands[3..].to_vec();
        // Induction variable: lb + k*step.
        let lb = self.of(f, d.operands[0]);
        let step = self.of(f, d.operands[2]);
        let iv_div = gcd(lb.div[0], step.div[0]);
        self.set(args[0], AxisInfo::uniform(&[], iv_div, None));
        let mut cur: Vec<AxisInfo> = inits.iter().map(|&v| self.of(f, v)).collect();
        for _ in 0..8 {
            for (a, i) in args[1..].iter().zip(&cur) {
                self.set(*a, i.clone());
            }
            self.block(f, body);
            let yields: Vec<Value> = f.terminator(body).map(|t| f.ops[t].operands.to_vec()).unwrap_or_default();
            let next: Vec<AxisInfo> = cur
                .iter()
                .enumerate()
                .map(|(i, c)| yields.get(i).map_or(c.clone(), |&y| c.meet(&self.of(f, y))))
                .collect();
            if next == cur {
                break;
            }
            cur = next;
        }
        for (a, i) in args[1..].iter().zip(&cur) {
            self.set(*a, i.clone());
        }
        for (r, i) in d.results.iter().zip(&cur) {
            self.set(*r, i.clone());
        }
    }

    fn compute(&self, f: &Function, op: Op) -> Vec<AxisInfo> {
        let d = &f.ops[op];
        let res_ty = |i: usize| f.ty(d.results[i]);
        let nres = d.results.len();
        if nres == 0 {
            return vec![];
        }
        let shape: Vec<u32> = res_ty(0).shape().to_vec();
        let rank = shape.len();
        let arg = |i: usize| self.of(f, d.operands[i]);
        let one = match &d.kind {
            OpKind::Constant(c) => {
                let (div, k) = match *c {
                    Const::Int(v) => (pow2_divisor(v), Some(v)),
                    Const::Bool(b) => (if b { 1 } else { MAX_DIV }, Some(b as i64)),
                    Const::Float(_) => (1, None),
                };
                AxisInfo::uniform(&shape, div, k)
            }
            OpKind::Arange { start, end } => AxisInfo {
                contig: smallvec![(*end - *start) as u64],
                div: smallvec![pow2_divisor(*start as i64)],
                constancy: smallvec![1],
                constant: None,
            },
            OpKind::ProgramId { .. } | OpKind::NumPrograms { .. } => AxisInfo::uniform(&[], 1, None),
            OpKind::Splat => {
                let s = arg(0);
                AxisInfo::uniform(&shape, s.div[0], s.constant)
            }
            OpKind::Broadcast => {
                let s = arg(0);
                let src_shape = f.ty(d.operands[0]).shape().to_vec();
                let mut r = s.clone();
                for (k, &size) in shape.iter().enumerate() {
                    if src_shape.get(k) == Some(&1) && size > 1 {
                        r.contig[k] = 1;
                        r.constancy[k] = size as u64;
                        // The single source element is every element: its divisibility holds everywhere.
                        r.div[k] = s.elem_div(k);
                    }
                }
                r
            }
            OpKind::ExpandDims { axis } => {
                let s = arg(0);
                let a = *axis as usize;
                let mut r = s.clone();
                if f.ty(d.operands[0]).is_scalar() {
                    return vec![AxisInfo::uniform(&shape, s.div[0], s.constant)];
                }
                let div = (0..s.rank()).map(|k| s.elem_div(k)).min().unwrap_or(1).max(1);
                r.contig.insert(a, 1);
                r.div.insert(a, div);
                r.constancy.insert(a, 1);
                r
            }
            OpKind::MultipleOf { values } => {
                let mut r = arg(0);
                for (k, &v) in values.iter().enumerate().take(r.rank()) {
                    r.div[k] = pow2_floor(v as u64).max(r.div[k]);
                }
                r
            }
            OpKind::MaxContiguous { values } => {
                let mut r = arg(0);
                for (k, &v) in values.iter().enumerate().take(r.rank()) {
                    r.contig[k] = pow2_floor(v as u64).max(r.contig[k]);
                }
                r
            }
            OpKind::MaxConstancy { values } => {
                let mut r = arg(0);
                for (k, &v) in values.iter().enumerate().take(r.rank()) {
                    r.constancy[k] = pow2_floor(v as u64).max(r.constancy[k]);
                }
                r
            }
            OpKind::Binary(b) if res_ty(0).elem().is_int() => binary(*b, &arg(0), &arg(1)),
            OpKind::AddPtr => {
                let p = arg(0);
                let o = arg(1);
                let bytes = res_ty(0).elem().pointee().map_or(1, |t| t.size_bytes() as u64);
                let scaled = AxisInfo {
                    div: o.div.iter().map(|&x| (x * bytes).min(MAX_DIV)).collect(),
                    constant: o.constant.map(|c| c.wrapping_mul(bytes as i64)),
                    ..o.clone()
                };
                let mut r = binary(BinaryOp::Add, &p, &scaled);
                r.constant = None;
                r
            }
            OpKind::Cmp(pred) => cmp(*pred, &arg(0), &arg(1)),
            OpKind::Select => {
                let c = arg(0);
                let a = arg(1);
                let b = arg(2);
                let mut r = a.meet(&b);
                for k in 0..r.rank() {
                    r.constancy[k] = gcd(r.constancy[k], c.constancy[k]);
                    // Both sides contiguous and the choice constant over their runs.
                    r.contig[k] = gcd(gcd(a.contig[k], b.contig[k]), c.constancy[k]);
                }
                r
            }
            OpKind::Cast { kind, .. } => {
                let a = arg(0);
                let src = f.ty(d.operands[0]).elem();
                let dst = res_ty(0).elem();
                let keeps_value = match kind {
                    CastKind::Convert => src.is_int() && dst.is_int() && !dst.is_bool(),
                    CastKind::Bitcast | CastKind::PtrToInt | CastKind::IntToPtr => true,
                };
                if keeps_value {
                    a
                } else {
                    AxisInfo { contig: smallvec![1; a.rank()], div: smallvec![1; a.rank()], constant: None, ..a }
                }
            }
            // The same values in another layout or read back from shared memory.
            OpKind::ConvertLayout | OpKind::LocalLoad => arg(0),
            OpKind::Load { .. } | OpKind::DescLoad { .. } => {
                let p = arg(0);
                AxisInfo { constancy: p.constancy.clone(), ..AxisInfo::unknown(rank) }
            }
            OpKind::Reduce { .. } | OpKind::Scan { .. } | OpKind::Dot { .. } => AxisInfo::unknown(rank),
            OpKind::Trans { perm } => {
                let a = arg(0);
                let pick =
                    |v: &Dims| -> Dims { perm.iter().map(|&p| v.get(p as usize).copied().unwrap_or(1)).collect() };
                AxisInfo {
                    contig: pick(&a.contig),
                    div: pick(&a.div),
                    constancy: pick(&a.constancy),
                    constant: a.constant,
                }
            }
            OpKind::Binary(_) | OpKind::Unary(_) | OpKind::Fma => {
                // Float arithmetic: only constancy survives.
                let mut r = AxisInfo::unknown(rank);
                for i in 0..d.operands.len() {
                    let a = arg(i);
                    for k in 0..r.rank().min(a.rank()) {
                        r.constancy[k] = if i == 0 { a.constancy[k] } else { gcd(r.constancy[k], a.constancy[k]) };
                    }
                }
                r
            }
            _ => AxisInfo::unknown(rank),
        };
        let mut v = vec![one];
        for i in 1..nres {
            v.push(AxisInfo::unknown(res_ty(i).shape().len()));
        }
        v
    }
}

fn pow2_floor(x: u64) -> u64 {
    if x == 0 {
        MAX_DIV
    } else {
        (1u64 << (63 - x.leading_zeros())).min(MAX_DIV)
    }
}

fn binary(op: BinaryOp, a: &AxisInfo, b: &AxisInfo) -> AxisInfo {
    let rank = a.rank().min(b.rank());
    let mut r = AxisInfo::unknown(rank);
    let konst = match (a.constant, b.constant) {
        (Some(x), Some(y)) => match op {
            BinaryOp::Add => Some(x.wrapping_add(y)),
            BinaryOp::Sub => Some(x.wrapping_sub(y)),
            BinaryOp::Mul => Some(x.wrapping_mul(y)),
            _ => None,
        },
        _ => None,
    };
    for k in 0..rank {
        r.constancy[k] = gcd(a.constancy[k], b.constancy[k]);
        match op {
            BinaryOp::Add | BinaryOp::Sub => {
                // A run of a plus a value constant over it stays a run (b - a is not, a - b is).
                let ca = gcd(a.contig[k], b.constancy[k]);
                let cb = if op == BinaryOp::Add { gcd(b.contig[k], a.constancy[k]) } else { 1 };
                r.contig[k] = ca.max(cb);
                r.div[k] = gcd(a.div[k], b.div[k]);
            }
            BinaryOp::Mul => {
                r.div[k] = (a.elem_div(k) * b.elem_div(k)).min(MAX_DIV);
                if b.constant == Some(1) {
                    r.contig[k] = a.contig[k];
                    r.div[k] = a.div[k];
                } else if a.constant == Some(1) {
                    r.contig[k] = b.contig[k];
                    r.div[k] = b.div[k];
                }
            }
            BinaryOp::Shl => {
                if let Some(s) = b.constant.filter(|s| (0..30).contains(s)) {
                    r.div[k] = (a.elem_div(k) << s).min(MAX_DIV);
                    if s == 0 {
                        r.contig[k] = a.contig[k];
                        r.div[k] = a.div[k];
                    }
                }
            }
            BinaryOp::Div => {
                if let Some(c) = b.constant.filter(|&c| c > 0 && (c as u64).is_power_of_two()) {
                    let c = c as u64;
                    // A run starting at a multiple of c is constant over c elements after division.
                    if a.div[k] >= c {
                        r.constancy[k] = r.constancy[k].max(gcd(a.contig[k], c));
                    }
                    r.div[k] = (a.elem_div(k) / c).max(1);
                }
            }
            BinaryOp::Rem => {
                if let Some(c) = b.constant.filter(|&c| c > 0 && (c as u64).is_power_of_two()) {
                    let c = c as u64;
                    r.contig[k] = gcd(a.contig[k], c);
                    r.div[k] = gcd(a.div[k], c);
                    if a.constancy[k] > 1 {
                        r.constancy[k] = a.constancy[k];
                    }
                }
            }
            BinaryOp::And => {
                if let Some(m) = b.constant.or(a.constant) {
                    // x & (2^k - 1) keeps runs shorter than 2^k aligned to it.
                    if m > 0 && ((m as u64) + 1).is_power_of_two() {
                        let (x, _) = if b.constant.is_some() { (a, b) } else { (b, a) };
                        r.contig[k] = gcd(x.contig[k], m as u64 + 1);
                        r.div[k] = gcd(x.div[k], m as u64 + 1);
                    }
                }
            }
            _ => {}
        }
    }
    r.constant = konst;
    r
}

fn cmp(pred: CmpPred, a: &AxisInfo, b: &AxisInfo) -> AxisInfo {
    let rank = a.rank().min(b.rank());
    let mut r = AxisInfo::unknown(rank);
    // A run x0..x0+s (x0 a multiple of s) against a bound that is a multiple of s and
    // constant over the run: `run < bound` and `run >= bound` are the same over the run.
    let block = |run: &AxisInfo, bound: &AxisInfo, k: usize| {
        gcd(gcd(run.contig[k], run.div[k]), gcd(bound.elem_div(k), bound.constancy[k]))
    };
    for k in 0..rank {
        let mut c = gcd(a.constancy[k], b.constancy[k]);
        match pred {
            CmpPred::Lt | CmpPred::Ge => c = c.max(block(a, b, k)),
            CmpPred::Gt | CmpPred::Le => c = c.max(block(b, a, k)),
            _ => {}
        }
        r.constancy[k] = c;
    }
    r
}

/// Whether a value's defining op is a constant (used by passes to rematerialise cheaply).
pub fn is_constant_def(f: &Function, v: Value) -> bool {
    matches!(f.values[v].def, ValueDef::Result(op, _) if matches!(f.ops[op].kind, OpKind::Constant(_)))
}

/// Element type of a value.
pub fn elem_of(f: &Function, v: Value) -> Elem {
    f.ty(v).elem()
}

/// The type of a value.
pub fn type_of(f: &Function, v: Value) -> &Type {
    f.ty(v)
}
