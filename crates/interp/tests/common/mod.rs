//! Test helpers: a small kernel builder on top of `trident_ir::Builder`, random inputs.
#![allow(dead_code)]

use std::time::{SystemTime, UNIX_EPOCH};
use trident_core::{DType, HostTensor};
use trident_ir::*;

/// Builds one kernel op by op. Every op gets its own line of a fake source file
/// (`k.py`), whose text can be set with [`K::src`], so diagnostics can be checked.
pub struct K {
    pub f: Function,
    blocks: Vec<Block>,
    lines: Vec<String>,
    next_src: Option<String>,
}

pub fn num(d: DType) -> Type {
    Type::scalar(d)
}

pub fn ptr(d: DType) -> Type {
    Type::scalar(Elem::ptr(d))
}

pub fn ten(shape: &[u32], d: DType) -> Type {
    Type::tensor(shape, d)
}

pub fn ptrs(shape: &[u32], d: DType) -> Type {
    Type::tensor(shape, Elem::ptr(d))
}

impl K {
    pub fn new(name: &str, params: &[(&str, Type)]) -> K {
        let mut f = Function::new(name, params, vec![], true);
        f.loc = Loc { file: 0, line: 1, col: 1 };
        let body = f.body;
        K { f, blocks: vec![body], lines: vec![format!("def {name}(...):")], next_src: None }
    }

    pub fn arg(&self, i: usize) -> Value {
        self.f.params[i].value
    }

    /// Source text for the next op's line.
    pub fn src(&mut self, text: &str) -> &mut K {
        self.next_src = Some(text.to_string());
        self
    }

    fn loc(&mut self, name: &str) -> Loc {
        let text = self.next_src.take().unwrap_or_else(|| name.to_string());
        self.lines.push(format!("    {text}"));
        Loc { file: 0, line: self.lines.len() as u32, col: 5 }
    }

    pub fn op(&mut self, kind: OpKind, operands: &[Value], results: &[Type]) -> Vec<Value> {
        let loc = self.loc(kind.name());
        let block = *self.blocks.last().unwrap();
        let mut b = Builder::at_end(&mut self.f, block);
        b.loc = loc;
        let op = b.op(kind, operands, results);
        self.f.ops[op].results.to_vec()
    }

    pub fn op1(&mut self, kind: OpKind, operands: &[Value], result: Type) -> Value {
        self.op(kind, operands, &[result])[0]
    }

    pub fn ty(&self, v: Value) -> Type {
        self.f.ty(v).clone()
    }

    pub fn ci(&mut self, v: i64, d: DType) -> Value {
        self.op1(OpKind::Constant(Const::Int(v)), &[], num(d))
    }

    pub fn i32(&mut self, v: i64) -> Value {
        self.ci(v, DType::I32)
    }

    pub fn cf(&mut self, v: f64, d: DType) -> Value {
        self.op1(OpKind::Constant(Const::Float(v)), &[], num(d))
    }

    pub fn const_t(&mut self, c: Const, ty: Type) -> Value {
        self.op1(OpKind::Constant(c), &[], ty)
    }

    pub fn pid(&mut self, axis: u8) -> Value {
        self.op1(OpKind::ProgramId { axis }, &[], num(DType::I32))
    }

    pub fn arange(&mut self, n: u32) -> Value {
        self.op1(OpKind::Arange { start: 0, end: n as i32 }, &[], ten(&[n], DType::I32))
    }

    pub fn splat(&mut self, v: Value, shape: &[u32]) -> Value {
        let e = self.ty(v).elem();
        self.op1(OpKind::Splat, &[v], Type::tensor(shape, e))
    }

    pub fn bcast(&mut self, v: Value, shape: &[u32]) -> Value {
        let e = self.ty(v).elem();
        self.op1(OpKind::Broadcast, &[v], Type::tensor(shape, e))
    }

    pub fn expand(&mut self, v: Value, axis: u32) -> Value {
        let t = self.ty(v);
        let mut s = t.shape().to_vec();
        s.insert(axis as usize, 1);
        self.op1(OpKind::ExpandDims { axis }, &[v], Type::tensor(&s, t.elem()))
    }

    pub fn bin(&mut self, op: BinaryOp, a: Value, b: Value) -> Value {
        let t = self.ty(a);
        self.op1(OpKind::Binary(op), &[a, b], t)
    }

    pub fn un(&mut self, op: UnaryOp, a: Value) -> Value {
        let t = self.ty(a);
        self.op1(OpKind::Unary(op), &[a], t)
    }

    pub fn cmp(&mut self, p: CmpPred, a: Value, b: Value) -> Value {
        let t = self.ty(a).with_elem(DType::I1);
        self.op1(OpKind::Cmp(p), &[a, b], t)
    }

    pub fn select(&mut self, c: Value, a: Value, b: Value) -> Value {
        let t = self.ty(a);
        self.op1(OpKind::Select, &[c, a, b], t)
    }

    pub fn cast(&mut self, v: Value, d: impl Into<Elem>) -> Value {
        self.cast_with(v, d, CastKind::Convert, Rounding::Rtne)
    }

    pub fn cast_with(&mut self, v: Value, d: impl Into<Elem>, kind: CastKind, rounding: Rounding) -> Value {
        let t = self.ty(v).with_elem(d);
        self.op1(OpKind::Cast { kind, rounding }, &[v], t)
    }

    pub fn addptr(&mut self, p: Value, off: Value) -> Value {
        let t = self.ty(p);
        self.op1(OpKind::AddPtr, &[p, off], t)
    }

    pub fn load(&mut self, p: Value, mask: Option<Value>, other: Option<Value>) -> Value {
        let t = self.ty(p);
        let d = t.elem().pointee().unwrap();
        let mut ops = vec![p];
        ops.extend(mask);
        ops.extend(other);
        self.op1(
            OpKind::Load { cache: CacheModifier::None, evict: EvictionPolicy::Normal, volatile: false },
            &ops,
            t.with_elem(d),
        )
    }

    pub fn store(&mut self, p: Value, v: Value, mask: Option<Value>) {
        let mut ops = vec![p, v];
        ops.extend(mask);
        self.op(OpKind::Store { cache: CacheModifier::None, evict: EvictionPolicy::Normal }, &ops, &[]);
    }

    pub fn atomic(&mut self, op: RmwOp, p: Value, v: Value, mask: Option<Value>) -> Value {
        let t = self.ty(v);
        let mut ops = vec![p, v];
        ops.extend(mask);
        self.op1(OpKind::AtomicRmw { op, sem: MemSem::AcqRel, scope: MemScope::Gpu }, &ops, t)
    }

    /// Offsets `pid * block + arange(block)` and the mask `offs < n` for a 1-D kernel.
    pub fn offsets(&mut self, block: u32, n: Value) -> (Value, Value) {
        let pid = self.pid(0);
        let bs = self.i32(block as i64);
        let start = self.bin(BinaryOp::Mul, pid, bs);
        let r = self.arange(block);
        let s = self.splat(start, &[block]);
        let offs = self.bin(BinaryOp::Add, s, r);
        let nn = self.splat(n, &[block]);
        let mask = self.cmp(CmpPred::Lt, offs, nn);
        (offs, mask)
    }

    /// `ptr + offs` as a block of pointers.
    pub fn ptr_at(&mut self, p: Value, offs: Value) -> Value {
        let shape = self.ty(offs).shape().to_vec();
        let sp = self.splat(p, &shape);
        self.addptr(sp, offs)
    }

    /// Opens a region (block with arguments) on `op`, builds its body with `body`,
    /// which returns the values for the terminator `term`.
    pub fn region(&mut self, op: Op, args: &[Type], term: OpKind, body: impl FnOnce(&mut K, &[Value]) -> Vec<Value>) {
        let b = self.f.new_block(args);
        self.f.add_region(op, b);
        let vals = self.f.blocks[b].args.clone();
        self.blocks.push(b);
        let out = body(self, &vals);
        self.op(term, &out, &[]);
        self.blocks.pop();
    }

    /// Creates an op whose regions are added afterwards.
    pub fn raw(&mut self, kind: OpKind, operands: &[Value], results: &[Type]) -> Op {
        let loc = self.loc(kind.name());
        let block = *self.blocks.last().unwrap();
        let mut b = Builder::at_end(&mut self.f, block);
        b.loc = loc;
        b.op(kind, operands, results)
    }

    pub fn results(&self, op: Op) -> Vec<Value> {
        self.f.ops[op].results.to_vec()
    }

    /// `reduce` with a single-binary-op combine region.
    pub fn reduce(&mut self, x: Value, axis: u32, op: BinaryOp) -> Value {
        let t = self.ty(x);
        let mut s = t.shape().to_vec();
        s.remove(axis as usize);
        let rt = t.with_shape(&s);
        let r = self.raw(OpKind::Reduce { axis }, &[x], &[rt]);
        let et = Type::scalar(t.elem());
        self.region(r, &[et.clone(), et], OpKind::Yield, |k, a| vec![k.bin(op, a[0], a[1])]);
        self.results(r)[0]
    }

    pub fn for_loop(
        &mut self,
        lb: Value,
        ub: Value,
        step: Value,
        inits: &[Value],
        body: impl FnOnce(&mut K, Value, &[Value]) -> Vec<Value>,
    ) -> Vec<Value> {
        let tys: Vec<Type> = inits.iter().map(|&v| self.ty(v)).collect();
        let mut ops = vec![lb, ub, step];
        ops.extend_from_slice(inits);
        let op = self.raw(OpKind::For, &ops, &tys);
        let mut args = vec![self.ty(lb)];
        args.extend(tys);
        self.region(op, &args, OpKind::Yield, |k, a| body(k, a[0], &a[1..]));
        self.results(op)
    }

    pub fn if_else(
        &mut self,
        cond: Value,
        tys: &[Type],
        then: impl FnOnce(&mut K) -> Vec<Value>,
        els: impl FnOnce(&mut K) -> Vec<Value>,
    ) -> Vec<Value> {
        let op = self.raw(OpKind::If, &[cond], tys);
        self.region(op, &[], OpKind::Yield, |k, _| then(k));
        self.region(op, &[], OpKind::Yield, |k, _| els(k));
        self.results(op)
    }

    /// Finishes without running the verifier (for tests of ill-formed IR).
    pub fn finish_unverified(mut self) -> Module {
        self.op(OpKind::Return, &[], &[]);
        let text = self.lines.join("\n") + "\n";
        Module { funcs: vec![self.f], files: vec![SourceFile { path: "k.py".into(), text }] }
    }

    pub fn finish(mut self) -> Module {
        self.op(OpKind::Return, &[], &[]);
        let text = self.lines.join("\n") + "\n";
        if let Err(errs) = verify_function(&self.f) {
            let msgs: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
            panic!("test kernel `{}` does not verify:\n{}", self.f.name, msgs.join("\n"));
        }
        Module { funcs: vec![self.f], files: vec![SourceFile { path: "k.py".into(), text }] }
    }
}

/// A small deterministic generator; tests seed it from the clock and print the seed on failure.
pub struct Rng(pub u64);

impl Rng {
    pub fn from_time() -> Rng {
        let seed = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1) | 1;
        Rng(seed)
    }

    pub fn seed(&self) -> u64 {
        self.0
    }

    pub fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    pub fn f(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A tensor of random values in [-scale, scale), rounded to `dtype`, none all-zero.
    pub fn tensor(&mut self, dtype: DType, shape: &[usize], scale: f64) -> HostTensor {
        let n: usize = shape.iter().product();
        let v: Vec<f64> = (0..n)
            .map(|_| {
                let x = self.f() * scale;
                if dtype.is_int() {
                    x.round()
                } else {
                    x
                }
            })
            .collect();
        HostTensor::from_f64(dtype, shape, &v)
    }
}

/// A tensor filled with a recognisable poison value (NaN for floats, 0x5A bytes for ints).
pub fn poison(dtype: DType, shape: &[usize]) -> HostTensor {
    let n: usize = shape.iter().product();
    if dtype.is_float() {
        HostTensor::from_f64(dtype, shape, &vec![f64::NAN; n])
    } else {
        HostTensor { dtype, shape: shape.to_vec(), data: vec![0x5A; n * dtype.size_bytes()] }
    }
}

pub mod front;
pub mod kernels;
