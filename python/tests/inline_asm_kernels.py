"""Kernels with `tl.inline_asm_elementwise`, shared by `test_inline_asm.py` (the emulators) and
`scripts/gpu_package_check.py` (a GPU, on CUDA tensors)."""

import trident
import trident.language as tl


@trident.jit
def mad3(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(x + offs, mask=m)
    b = tl.load(y + offs, mask=m)
    z = tl.inline_asm_elementwise("mad.lo.s32 $0, $1, 3, $2;", "=r,r,r", [a, b], dtype=tl.int32, is_pure=True,
                                  pack=1)
    tl.store(out + offs, z, mask=m)


@trident.jit
def packed(x, out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(x + offs)
    z = tl.inline_asm_elementwise("and.b32 $0, $1, 0x1F1F1F1F; \n shl.b32 $0, $0, 3;", "=r,r", [a], dtype=tl.int8,
                                  is_pure=True, pack=4)
    tl.store(out + offs, z)


@trident.jit
def sum_and_difference(x, y, o1, o2, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(x + offs)
    b = tl.load(y + offs)
    s, d = tl.inline_asm_elementwise(
        "{ .reg .f32 t; add.f32 t, $2, $3; mov.b32 $0, t; sub.f32 $1, $2, $3; }",
        "=r,=f,f,r", [a, b], dtype=(tl.float32, tl.float32), is_pure=True, pack=1)
    tl.store(o1 + offs, s)
    tl.store(o2 + offs, d)


@trident.jit
def negate_halves_by_row(x, out, c, BLOCK: tl.constexpr):
    # `c` is a column broadcast against the tile: operands are broadcast to one shape.
    r = tl.arange(0, BLOCK)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    a = tl.load(x + r)
    col = tl.load(c + tl.arange(0, BLOCK))[:, None]
    z = tl.inline_asm_elementwise("{ .reg .f16 t; neg.f16 t, $1; add.f16 $0, t, $2; }", "=h,h,h", [a, col],
                                  dtype=tl.float16, is_pure=True, pack=1)
    tl.store(out + r, z)


@trident.jit
def widen_and_max(a_ptr, b_ptr, c_ptr, d_ptr, BLOCK: tl.constexpr):
    # pack=4: the four uint8s of `a` share one register ($8), the four int32/f32 values of
    # each other operand take a register each ($0-$3, $4-$7, $9-$12).
    a = tl.load(a_ptr + tl.arange(0, BLOCK))
    b = tl.load(b_ptr + tl.arange(0, BLOCK))
    c, d = tl.inline_asm_elementwise(
        asm="""
        {
            .reg .b8 t<4>;
            mov.b32 {t0, t1, t2, t3}, $8;
            cvt.u32.u8 $0, t0;
            cvt.u32.u8 $1, t1;
            cvt.u32.u8 $2, t2;
            cvt.u32.u8 $3, t3;
        }
        cvt.rn.f32.s32 $4, $0;
        cvt.rn.f32.s32 $5, $1;
        cvt.rn.f32.s32 $6, $2;
        cvt.rn.f32.s32 $7, $3;
        max.f32 $4, $4, $9;
        max.f32 $5, $5, $10;
        max.f32 $6, $6, $11;
        max.f32 $7, $7, $12;
        """,
        constraints="=r,=r,=r,=r,=r,=r,=r,=r,r,r,r,r,r",
        args=[a, b], dtype=(tl.int32, tl.float32), is_pure=True, pack=4)
    tl.store(c_ptr + tl.arange(0, BLOCK), c)
    tl.store(d_ptr + tl.arange(0, BLOCK), d)


@trident.jit
def through_pointers(x_ptr, y_ptr, BLOCK: tl.constexpr):
    # Pointer tensors in 64-bit registers; the asm loads and stores itself (not pure).
    tl.inline_asm_elementwise("ld.global.b8 $0, [$1];\n shl.b32 $0, $0, 3;\n st.global.b8 [$2], $0;", "=r,l,l",
                              [x_ptr + tl.arange(0, BLOCK), y_ptr + tl.arange(0, BLOCK)], dtype=tl.int8,
                              is_pure=False, pack=1)
