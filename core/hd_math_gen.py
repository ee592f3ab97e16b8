#!/usr/bin/env python3
# Prints the constants of core/hd_math.hpp: the split constants (pi/2, ln2, 2/sqrt(pi)), the Taylor
# coefficients, the erfc underflow point and the erfc fits, from mpmath at 50 digits. Run with
#   /usr/bin/python3 core/hd_math_gen.py
# (about a minute) and paste the numbers into core/hd_math.hpp by hand. The fits are Chebyshev
# interpolants of erfcx(x) = exp(x^2) erfc(x) on [a, 2a], converted to powers of
# u = (x - 1.5a) / (a / 2) in [-1, 1]; the degree is the smallest whose interpolation error (with the
# coefficients unrounded) is below 2^-60. c0 and c1 are printed as double-doubles (hi, lo).
import mpmath as mp

mp.mp.dps = 50


def hexd(v):
    return float(v).hex()


def split(v):
    hi = float(v)
    lo = float(v - mp.mpf(hi))
    return hi, lo


def erfcx(x):
    return mp.erfc(x) * mp.exp(x * x)


def cheb_monomial(f, a, b, n):
    c = (mp.mpf(a) + b) / 2
    h = (mp.mpf(b) - a) / 2
    N = n + 1
    nodes = [mp.cos(mp.pi * (k + mp.mpf(1) / 2) / N) for k in range(N)]
    vals = [f(c + h * u) for u in nodes]
    T = [2 * sum(vals[k] * mp.cos(mp.pi * j * (k + mp.mpf(1) / 2) / N) for k in range(N)) / N for j in range(N)]
    T[0] /= 2
    polys = [[mp.mpf(1)], [mp.mpf(0), mp.mpf(1)]]
    for j in range(2, N):
        nxt = [mp.mpf(0)] * (j + 1)
        for i, v in enumerate(polys[-1]):
            nxt[i + 1] += 2 * v
        for i, v in enumerate(polys[-2]):
            nxt[i] -= v
        polys.append(nxt)
    mono = [mp.mpf(0)] * N
    for j in range(N):
        for i, v in enumerate(polys[j]):
            mono[i] += T[j] * v
    return mono


def fit_error(mono, a, b):
    c = (mp.mpf(a) + b) / 2
    h = (mp.mpf(b) - a) / 2
    err = 0
    for t in range(401):
        u = mp.mpf(-1) + 2 * mp.mpf(t) / 400
        p = mp.mpf(0)
        for cc in reversed(mono):
            p = p * u + cc
        err = max(err, abs(p / erfcx(c + h * u) - 1))
    return err


print("// constants")
for name, v in [("pio2", mp.pi / 2)]:
    p1 = float(v); r = v - mp.mpf(p1); p2 = float(r); r -= mp.mpf(p2); p3 = float(r)
    print(name, hexd(p1), hexd(p2), hexd(p3))
print("two_over_pi", hexd(2 / mp.pi))
print("inv_ln2", hexd(1 / mp.log(2)))
print("ln2 dd", *map(hexd, split(mp.log(2))))
print("two_over_sqrtpi dd", *map(hexd, split(2 / mp.sqrt(mp.pi))))
print("two_thirds dd", *map(hexd, split(mp.mpf(2) / 3)))
print("sqrt2", hexd(mp.sqrt(2)))
# erfc underflow: the smallest double x with erfc(x) < 2^-1075 rounds to 0
x = mp.mpf(27.2)
lo, hi = mp.mpf(27), mp.mpf(28)
for _ in range(200):
    mid = (lo + hi) / 2
    if mp.erfc(mid) < mp.mpf(2) ** -1075:
        hi = mid
    else:
        lo = mid
print("erfc below 2^-1075 from x =", mp.nstr(hi, 20), hexd(hi))
for a in [0.5, 1, 2, 4, 8, 16]:
    b = 2 * a
    for n in range(8, 40):
        mono = cheb_monomial(erfcx, a, b, n)
        err = fit_error(mono, a, b)
        if err < mp.mpf(2) ** -60:
            break
    c0 = split(mono[0]); c1 = split(mono[1])
    print(f"// erfcx on [{a}, {b}]: degree {n}, interpolation error 2^{float(mp.log(err, 2)):.1f}")
    print(f"interval {a} c0 {hexd(c0[0])} {hexd(c0[1])} c1 {hexd(c1[0])} {hexd(c1[1])}")
    print("  rest " + ", ".join(hexd(v) for v in mono[2:]))
print("// Taylor coefficients")
f = mp.factorial
print("exp 1/n! n=2..13:", ", ".join(hexd(1 / f(n)) for n in range(2, 14)))
print("sin (-1)^n/(2n+1)! n=1..8:", ", ".join(hexd((-1) ** n / f(2 * n + 1)) for n in range(1, 9)))
print("cos (-1)^n/(2n)! n=2..8:", ", ".join(hexd((-1) ** n / f(2 * n)) for n in range(2, 9)))
print("log 2/(2n+1) n=2..11:", ", ".join(hexd(mp.mpf(2) / (2 * n + 1)) for n in range(2, 12)))
c = 2 / mp.sqrt(mp.pi)
print("erf c(-1)^n/(n!(2n+1)) n=1..12:", ", ".join(hexd(c * (-1) ** n / (f(n) * (2 * n + 1))) for n in range(1, 13)))
hi = mp.mpf(int(mp.log(2) * 2**32)) / 2**32
print("ln2 split for exp (32 bits + rest):", hexd(hi), hexd(mp.log(2) - hi), "hi exact:", mp.mpf(float(hi)) == hi)
