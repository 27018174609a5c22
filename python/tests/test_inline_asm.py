"""`tl.inline_asm_elementwise` (Triton's inline PTX): run by the PTX emulator (and the SASS
emulator where ptxas is installed) against numpy on fresh random inputs — one and several
results, operands broadcast, 16-bit registers, four int8s packed in a 32-bit register (Triton's
own packed example), the last group of a thread filled up — and refused by the interpreter
with a message saying where it runs, the output untouched."""

import pytest

np = pytest.importorskip("numpy")
trident = pytest.importorskip("trident")
pytest.importorskip("trident._native")

import trident.language as tl  # noqa: E402
from inline_asm_kernels import mad3, negate_halves_by_row, packed, sum_and_difference, through_pointers, widen_and_max  # noqa: E402,E501


def emulators():
    import os
    has_tools = all(os.path.isfile(os.environ.get(v, "")) for v in ("TRIDENT_PTXAS", "TRIDENT_NVDISASM"))
    return ["emu"] + (["sass-emu"] if has_tools else [])


@pytest.mark.parametrize("backend", emulators())
def test_one_result_two_arguments(rng, backend):
    n = 1000
    x = rng.integers(-2**20, 2**20, n, dtype=np.int32)
    y = rng.integers(-2**20, 2**20, n, dtype=np.int32)
    out = np.full(n, -1, np.int32)
    mad3[(trident.cdiv(n, 256),)](x, y, out, n, BLOCK=256, backend=backend)
    np.testing.assert_array_equal(out, x * 3 + y)


@pytest.mark.parametrize("backend", emulators())
@pytest.mark.parametrize("block", [4, 512, 1024])
def test_four_int8s_packed_in_a_register(rng, backend, block):
    # 1024 elements over 128 threads: 8 a thread, two groups of four; 4: one element a thread,
    # its group filled up with copies.
    x = rng.integers(0, 256, block, dtype=np.uint8)
    out = np.full(block, 0x55, np.int8)
    packed[(1,)](x, out, BLOCK=block, backend=backend)
    np.testing.assert_array_equal(out.view(np.uint8), ((x & 0x1F).astype(np.uint16) << 3).astype(np.uint8))


@pytest.mark.parametrize("backend", emulators())
def test_two_results_in_32_bit_registers(rng, backend):
    n = 256
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    o1, o2 = np.full(n, np.nan, np.float32), np.full(n, np.nan, np.float32)
    sum_and_difference[(1,)](x, y, o1, o2, BLOCK=n, backend=backend)
    np.testing.assert_array_equal(o1, x + y)
    np.testing.assert_array_equal(o2, x - y)


@pytest.mark.parametrize("backend", emulators())
def test_16_bit_registers_and_broadcast_operands(rng, backend):
    b = 32
    x = rng.standard_normal((b, b)).astype(np.float16)
    c = rng.standard_normal(b).astype(np.float16)
    out = np.full((b, b), np.nan, np.float16)
    negate_halves_by_row[(1,)](x, out, c, BLOCK=b, backend=backend)
    np.testing.assert_array_equal(out, -x + c[:, None])


@pytest.mark.parametrize("backend", emulators())
def test_packed_and_unpacked_operands_side_by_side(rng, backend):
    n = 512
    a = rng.integers(0, 256, n, dtype=np.uint8)
    b = (rng.standard_normal(n) * 200).astype(np.float32)
    c, d = np.full(n, -7, np.int32), np.full(n, np.nan, np.float32)
    widen_and_max[(1,)](a, b, c, d, BLOCK=n, backend=backend)
    np.testing.assert_array_equal(c, a.astype(np.int32))
    np.testing.assert_array_equal(d, np.maximum(a.astype(np.float32), b))


@pytest.mark.parametrize("backend", emulators())
def test_pointer_arguments_and_an_asm_that_stores(rng, backend):
    n = 512
    x = rng.integers(0, 256, n, dtype=np.uint8)
    y = np.full(n, 0xAA, np.uint8)
    through_pointers[(1,)](x, y, BLOCK=n, backend=backend)
    np.testing.assert_array_equal(y, (x.astype(np.uint16) << 3).astype(np.uint8))


def test_the_interpreter_refuses_inline_asm_and_says_where_it_runs(rng):
    x = rng.integers(0, 9, 16, dtype=np.int32)
    out = np.full(16, -1, np.int32)
    with pytest.raises(trident.LaunchError, match="runs PTX, which the interpreter cannot.*--backend emu"):
        mad3[(1,)](x, x, out, 16, BLOCK=16, backend="interp")
    assert (out == -1).all()


def test_bad_constraints_are_a_compile_error_at_the_call(rng):
    @trident.jit
    def bad(x, out, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        z = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r", [tl.load(x + offs)], dtype=tl.int32, is_pure=True,
                                      pack=1)
        tl.store(out + offs, z)

    x = np.zeros(16, np.int32)
    out = np.full(16, -1, np.int32)
    with pytest.raises(trident.CompilationError, match=r"must list 1 output register\(s\).*then 1 input"):
        bad[(1,)](x, out, BLOCK=16, backend="emu")
    assert (out == -1).all()
