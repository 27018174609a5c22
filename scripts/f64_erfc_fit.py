#!/usr/bin/env python3
"""Coefficients of the GPU backend's f64 erfc (crates/gpu/src/ptx/math_f64.rs).

erfc(x) = exp(-x^2) g(x) for x >= 0.5, g fitted on each interval [a, b] by Chebyshev
interpolation in 60-digit arithmetic (mpmath), rewritten as a polynomial in t = x - (a+b)/2
and rounded to doubles. Prints the Rust table and, per interval, the largest relative error of
the rounded polynomial (evaluated exactly) against g over 2000 points. Needs mpmath
(the conformance venv has it): ~/.cache/trident-conformance/bin/python scripts/f64_erfc_fit.py
"""
import mpmath as mp

mp.mp.dps = 60
INTERVALS = [(0.5, 0.75), (0.75, 1), (1, 1.5), (1.5, 2), (2, 2.5), (2.5, 3), (3, 4), (4, 5), (5, 6.5), (6.5, 8.5), (8.5, 12), (12, 27)]


def g(x):
    return mp.erfc(x) * mp.exp(x * x)


def fit(a, b, n):
    a, b = mp.mpf(a), mp.mpf(b)
    c, h = (a + b) / 2, (b - a) / 2
    nodes = [mp.cos(mp.pi * (k + mp.mpf(1) / 2) / n) for k in range(n)]
    vals = [g(c + h * u) for u in nodes]
    # Chebyshev coefficients of g(c + h u), u in [-1, 1].
    cheb = [2 * mp.fsum(vals[k] * mp.cos(mp.pi * j * (k + mp.mpf(1) / 2) / n) for k in range(n)) / n for j in range(n)]
    cheb[0] /= 2
    # T_j(u) to monomials in u, then u = t / h.
    T = [[mp.mpf(1)], [mp.mpf(0), mp.mpf(1)]]
    for j in range(2, n):
        p = [mp.mpf(0)] + [2 * v for v in T[j - 1]]
        for i, v in enumerate(T[j - 2]):
            p[i] -= v
        T.append(p)
    mono = [mp.mpf(0)] * n
    for j in range(n):
        for i, v in enumerate(T[j]):
            mono[i] += cheb[j] * v
    coeffs = [float(mono[i] / h**i) for i in range(n)]
    err = 0
    for k in range(2001):
        x = a + (b - a) * k / 2000
        t = x - c
        p = mp.fsum(mp.mpf(coeffs[i]) * t**i for i in range(n))
        err = max(err, abs(p / g(x) - 1))
    return float(c), coeffs, float(err)


print("/// erfc(x) = exp(-x^2) g(x): per interval [a, b), g as a polynomial in x - c (c = (a + b) / 2),")
print("/// lowest power first (`scripts/f64_erfc_fit.py`; its largest relative error in the comment).")
print("const ERFC_G: &[(f64, f64, f64, &[f64])] = &[")
for a, b in INTERVALS:
    n = 12
    while True:
        c, co, err = fit(a, b, n)
        if err < 8e-17 or n >= 40:
            break
        n += 2
    print(f"    // [{a}, {b}): degree {n - 1}, max relative error {err:.2e}")
    print(f"    ({float(a)!r}, {float(b)!r}, {c!r}, &[{', '.join(repr(v) for v in co)}]),")
print("];")
