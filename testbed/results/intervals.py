"""The statistics behind a verdict: the mean of what was measured, Student's t (its 0.975 quantile and its distribution
function), the 95% t interval on the mean of a few trials, a spread and its coefficient of
variation with that coefficient's standard error."""
import math
import statistics

# Student's t, two-sided 95% (0.975 quantile), by degrees of freedom; 1.96 beyond 30
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042]


def mean(values):
    """The mean of the values measured (None, a value not measured, left out); None when none were."""
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def t975(df):
    return T975[df - 1] if 1 <= df <= len(T975) else 1.96


def _betacf(a, b, x):
    """The continued fraction of the regularised incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return h


def incomplete_beta(a, b, x):
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t, df):
    """P(T <= t) for Student's t with `df` degrees of freedom."""
    tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def interval(values):
    """(mean, median, lo, hi) with the 95% t interval on the mean; lo = hi = mean for one value."""
    n = len(values)
    mean, median = statistics.fmean(values), statistics.median(values)
    if n < 2:
        return mean, median, mean, mean
    half = t975(n - 1) * statistics.stdev(values) / math.sqrt(n)
    return mean, median, mean - half, mean + half


def spread(values):
    """(mean, sample standard deviation, coefficient of variation = sd / mean) of two or more
    values; cv is None when the mean is 0."""
    if len(values) < 2:
        raise ValueError(f"a spread needs two values or more, got {len(values)}")
    mean, sd = statistics.fmean(values), statistics.stdev(values)
    return mean, sd, (sd / abs(mean) if mean else None)


def cv_standard_error(cv, n):
    """The standard error of a coefficient of variation estimated from `n` normal values:
    cv / sqrt(2 (n - 1)) x sqrt(1 + 2 cv^2) (McKay's approximation); from 5 trials it is
    about a third of the CV itself."""
    if n < 2:
        raise ValueError(f"a coefficient of variation needs two values or more, got {n}")
    return cv / math.sqrt(2 * (n - 1)) * math.sqrt(1 + 2 * cv * cv)
