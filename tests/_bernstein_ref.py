"""Independent Bernstein references in 60-digit decimal arithmetic (Ethayarajh 2020)."""
from decimal import Decimal as D
from decimal import getcontext

getcontext().prec = 60


def _d(x):
    return D(repr(float(x))) if not isinstance(x, (int, D)) else D(x)


def L(confidence):
    return (D(2) / (D(1) - _d(confidence))).ln()


def halfwidth(n, sigma2, C, gamma, confidence):
    """Root t > 0 of 2 exp(-n t^2 / (2 s2 + 2 C t / (3 g))) = 1 - rho, by bisection."""
    n, s2, C, g, l = _d(n), _d(sigma2), _d(C), _d(gamma), L(confidence)

    def excess(t):  # > 0 once the bound is below 1 - rho
        return n * t * t - l * (2 * s2 + 2 * C * t / (3 * g))

    lo, hi = D(0), D(1)
    while excess(hi) <= 0:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if excess(mid) > 0:
            hi = mid
        else:
            lo = mid
    return (lo + hi) / 2


def min_samples(delta, sigma2, C, gamma, confidence):
    """Smallest integer n with halfwidth(n) < |delta| (n t^2 is increasing in n at fixed t)."""
    d = abs(_d(delta))
    s2, C, g, l = _d(sigma2), _d(C), _d(gamma), L(confidence)
    need = l * (2 * s2 + 2 * C * d / (3 * g)) / (d * d)  # halfwidth(n) < d  <=>  n > need
    n = int(need.to_integral_value(rounding="ROUND_FLOOR")) + 1
    return max(n, 1)


def amortized_interval(cost, codes, C, confidence):
    """(estimate, sigma2 (ddof=1), gamma, t) exactly, from the paper's amortized disparity."""
    from fractions import Fraction as F
    n = len(cost)
    n_a = sum(1 for c in codes if c == 1)
    n_b = sum(1 for c in codes if c == -1)
    ga, gb = F(n_a, n), F(n_b, n)
    z = [F(c) / ga if f == 1 else (-F(c) / gb if f == -1 else F(0))
         for c, f in zip([F(repr(float(c))) for c in cost], codes)]
    mean = sum(z, F(0)) / n
    var = sum(((v - mean) ** 2 for v in z), F(0)) / (n - 1)
    gamma = min(ga, gb)
    t = halfwidth(n, D(var.numerator) / D(var.denominator), C,
                  D(gamma.numerator) / D(gamma.denominator), confidence)
    return mean, var, gamma, t


def ustat_adaptive(estimate, k, confidence):
    """Every theta in [0, 1] with k d^2 <= L (2 theta (1 - theta) + 2 d / 3), d = |e - theta|
    (the set is an interval around e on each side: found by bisection on theta)."""
    e, k, l = _d(estimate), D(int(k)), L(confidence)

    def ok(theta):
        d = abs(e - theta)
        return k * d * d <= l * (2 * theta * (1 - theta) + 2 * d / 3)

    def edge(target):
        inside, outside = e, target
        if ok(target):
            return target
        for _ in range(200):
            mid = (inside + outside) / 2
            if ok(mid):
                inside = mid
            else:
                outside = mid
        return (inside + outside) / 2

    return edge(D(0)), edge(D(1))


def ustat_bound(estimate, k, confidence):
    t = halfwidth(k, D(1) / 4, 1, 1, confidence)
    e = _d(estimate)
    return max(e - t, D(0)), min(e + t, D(1))
