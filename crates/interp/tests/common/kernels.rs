//! Hand-built tile IR of two real kernels (the shapes of kernels/matmul.py and
//! kernels/softmax.py), shared by tests and benchmarks.

use super::*;
use trident_core::DType;
use trident_ir::{BinaryOp, CmpPred, Const, InputPrecision, Module, OpKind, UnaryOp, Value};

impl K {
    /// `[n]` → `[n, 1]` broadcast to `shape`.
    pub fn as_col(&mut self, v: Value, shape: &[u32]) -> Value {
        let e = self.expand(v, 1);
        self.bcast(e, shape)
    }

    /// `[n]` → `[1, n]` broadcast to `shape`.
    pub fn as_row(&mut self, v: Value, shape: &[u32]) -> Value {
        let e = self.expand(v, 0);
        self.bcast(e, shape)
    }

    /// `v * s` for a block `v` and a scalar `s`.
    pub fn scale(&mut self, v: Value, s: Value) -> Value {
        let shape = self.ty(v).shape().to_vec();
        let ss = self.splat(s, &shape);
        self.bin(BinaryOp::Mul, v, ss)
    }

    /// `a op splat(s)`.
    pub fn with_scalar(&mut self, op: BinaryOp, v: Value, s: Value) -> Value {
        let shape = self.ty(v).shape().to_vec();
        let ss = self.splat(s, &shape);
        self.bin(op, v, ss)
    }

    pub fn cmp_scalar(&mut self, p: CmpPred, v: Value, s: Value) -> Value {
        let shape = self.ty(v).shape().to_vec();
        let ss = self.splat(s, &shape);
        self.cmp(p, v, ss)
    }
}

/// Blocked matmul `c = a @ b` (a: MxK, b: KxN, c: MxN, all of `dt`), fp32 accumulation,
/// every edge masked; grid = cdiv(M, bm) * cdiv(N, bn) programs.
pub fn matmul(dt: DType, bm: u32, bn: u32, bk: u32) -> Module {
    let i32t = num(DType::I32);
    let mut k = K::new(
        "matmul_kernel",
        &[
            ("a", ptr(dt)),
            ("b", ptr(dt)),
            ("c", ptr(dt)),
            ("M", i32t.clone()),
            ("N", i32t.clone()),
            ("K", i32t.clone()),
            ("stride_am", i32t.clone()),
            ("stride_ak", i32t.clone()),
            ("stride_bk", i32t.clone()),
            ("stride_bn", i32t.clone()),
            ("stride_cm", i32t.clone()),
            ("stride_cn", i32t),
        ],
    );
    let p: Vec<Value> = (0..12).map(|i| k.arg(i)).collect();
    let (a, b, c, mm, nn, kk) = (p[0], p[1], p[2], p[3], p[4], p[5]);
    let (sam, sak, sbk, sbn, scm, scn) = (p[6], p[7], p[8], p[9], p[10], p[11]);
    let pid = k.pid(0);
    let (cbm, cbn, cbk, one) = (k.i32(bm as i64), k.i32(bn as i64), k.i32(bk as i64), k.i32(1));
    // tiles_n = (N + bn - 1) / bn
    let t = k.bin(BinaryOp::Add, nn, cbn);
    let t = k.bin(BinaryOp::Sub, t, one);
    let tiles_n = k.bin(BinaryOp::Div, t, cbn);
    let tile_m = k.bin(BinaryOp::Div, pid, tiles_n);
    let tile_n = k.bin(BinaryOp::Rem, pid, tiles_n);
    let rm0 = k.bin(BinaryOp::Mul, tile_m, cbm);
    let rn0 = k.bin(BinaryOp::Mul, tile_n, cbn);
    let am = k.arange(bm);
    let an = k.arange(bn);
    let ks = k.arange(bk);
    let rows = k.with_scalar(BinaryOp::Add, am, rm0);
    let cols = k.with_scalar(BinaryOp::Add, an, rn0);
    // a_tile = a + rows[:, None] * stride_am + ks[None, :] * stride_ak
    let ra = k.scale(rows, sam);
    let ra = k.as_col(ra, &[bm, bk]);
    let ka = k.scale(ks, sak);
    let ka = k.as_row(ka, &[bm, bk]);
    let aoff = k.bin(BinaryOp::Add, ra, ka);
    let a_tile = k.ptr_at(a, aoff);
    let kb = k.scale(ks, sbk);
    let kb = k.as_col(kb, &[bk, bn]);
    let cb = k.scale(cols, sbn);
    let cb = k.as_row(cb, &[bk, bn]);
    let boff = k.bin(BinaryOp::Add, kb, cb);
    let b_tile = k.ptr_at(b, boff);
    let acc0 = k.const_t(Const::Float(0.0), ten(&[bm, bn], DType::F32));
    // for k0 in range(0, cdiv(K, bk))
    let t = k.bin(BinaryOp::Add, kk, cbk);
    let t = k.bin(BinaryOp::Sub, t, one);
    let kt = k.bin(BinaryOp::Div, t, cbk);
    let zero = k.i32(0);
    let res = k.for_loop(zero, kt, one, &[acc0, a_tile, b_tile], |k, k0, it| {
        let (acc, at, bt) = (it[0], it[1], it[2]);
        let cbk = k.i32(bk as i64);
        let done = k.bin(BinaryOp::Mul, k0, cbk);
        let k_left = k.bin(BinaryOp::Sub, kk, done);
        let rin = k.cmp_scalar(CmpPred::Lt, rows, mm);
        let rin = k.as_col(rin, &[bm, bk]);
        let kin = k.cmp_scalar(CmpPred::Lt, ks, k_left);
        let kin_r = k.as_row(kin, &[bm, bk]);
        let amask = k.bin(BinaryOp::And, rin, kin_r);
        let za = k.const_t(Const::Float(0.0), ten(&[bm, bk], dt));
        let ablk = k.src("a_blk = tl.load(a_tile, mask=..., other=0.0)").load(at, Some(amask), Some(za));
        let kin_c = k.as_col(kin, &[bk, bn]);
        let cin = k.cmp_scalar(CmpPred::Lt, cols, nn);
        let cin = k.as_row(cin, &[bk, bn]);
        let bmask = k.bin(BinaryOp::And, kin_c, cin);
        let zb = k.const_t(Const::Float(0.0), ten(&[bk, bn], dt));
        let bblk = k.load(bt, Some(bmask), Some(zb));
        let acc = k.src("acc = tl.dot(a_blk, b_blk, acc)").op1(
            OpKind::Dot { precision: InputPrecision::Tf32, max_num_imprecise_acc: 0 },
            &[ablk, bblk, acc],
            ten(&[bm, bn], DType::F32),
        );
        let da = k.bin(BinaryOp::Mul, cbk, sak);
        let das = k.splat(da, &[bm, bk]);
        let at = k.addptr(at, das);
        let db = k.bin(BinaryOp::Mul, cbk, sbk);
        let dbs = k.splat(db, &[bk, bn]);
        let bt = k.addptr(bt, dbs);
        vec![acc, at, bt]
    });
    let rc = k.scale(rows, scm);
    let rc = k.as_col(rc, &[bm, bn]);
    let cc = k.scale(cols, scn);
    let cc = k.as_row(cc, &[bm, bn]);
    let coff = k.bin(BinaryOp::Add, rc, cc);
    let c_tile = k.ptr_at(c, coff);
    let rin = k.cmp_scalar(CmpPred::Lt, rows, mm);
    let rin = k.as_col(rin, &[bm, bn]);
    let cin = k.cmp_scalar(CmpPred::Lt, cols, nn);
    let cin = k.as_row(cin, &[bm, bn]);
    let cmask = k.bin(BinaryOp::And, rin, cin);
    let out = k.cast(res[0], dt);
    k.src("tl.store(c_tile, acc.to(c.dtype.element_ty), mask=...)").store(c_tile, out, Some(cmask));
    k.finish()
}

/// Row softmax, one program per row, `block` >= n_cols (x, y of `dt`, computed in f32).
pub fn softmax(dt: DType, block: u32) -> Module {
    let i32t = num(DType::I32);
    let mut k = K::new(
        "softmax_kernel",
        &[
            ("x", ptr(dt)),
            ("y", ptr(dt)),
            ("x_row_stride", i32t.clone()),
            ("y_row_stride", i32t.clone()),
            ("n_cols", i32t),
        ],
    );
    let (x, y, xs, ys, n) = (k.arg(0), k.arg(1), k.arg(2), k.arg(3), k.arg(4));
    let row = k.pid(0);
    let cols = k.arange(block);
    let in_row = k.cmp_scalar(CmpPred::Lt, cols, n);
    let xo = k.bin(BinaryOp::Mul, row, xs);
    let xrow = k.addptr(x, xo);
    let px = k.ptr_at(xrow, cols);
    let ninf = k.const_t(Const::Float(f64::NEG_INFINITY), ten(&[block], dt));
    let vals = k.src("vals = tl.load(x + row * x_row_stride + cols, mask=in_row, other=-inf)").load(
        px,
        Some(in_row),
        Some(ninf),
    );
    let vals = if dt == DType::F32 { vals } else { k.cast(vals, DType::F32) };
    let mx = k.reduce(vals, 0, BinaryOp::Max);
    let shifted = k.with_scalar(BinaryOp::Sub, vals, mx);
    let num_ = k.un(UnaryOp::Exp, shifted);
    let den = k.reduce(num_, 0, BinaryOp::Add);
    let out = k.with_scalar(BinaryOp::Div, num_, den);
    let out = if dt == DType::F32 { out } else { k.cast(out, dt) };
    let yo = k.bin(BinaryOp::Mul, row, ys);
    let yrow = k.addptr(y, yo);
    let py = k.ptr_at(yrow, cols);
    k.store(py, out, Some(in_row));
    k.finish()
}
