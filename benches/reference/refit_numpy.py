"""NumPy/SciPy reference for `cargo bench --bench refit -- '^refit_step/1000$'` (README "Benchmarks").

One refit step of Algorithm 1 at N = 1000 with 10·N random ordered comparisons, written the
way one would in NumPy/SciPy: the bias-aware Bradley–Terry model with one covariate (priors
λ_θ = 1, λ_c = 0.1, λ_κ = 0.01), a Newton MAP warm-started from the fit before the last 8
verdicts (tolerance 1e-9 on the gradient, Armijo backtracking, dense Hessian and Cholesky), the
Laplace posterior Σ = H⁻¹, top-k membership from S = 1000 draws (k = 10), and 8 top-k picks
(score = Fisher weight of the open orders × (π_a(1 − π_a) + π_b(1 − π_b)) × Var(θ_a − θ_b),
both orders of a pair, Sherman–Morrison step after each pick). The data are drawn here (same
sizes and model as the Rust bench, not the same numbers).

    pip install numpy scipy
    OPENBLAS_NUM_THREADS=2 python3 benches/reference/refit_numpy.py [repeats]

Prints the median, the minimum and every time of one refit step (ms). Run it on an idle
machine, right after the Rust bench: with two threads OpenBLAS slows down many times over when
anything else runs on the cores.
"""

import sys
import time

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.special import expit

N, K, S, R = 1000, 10, 1000, 8
LAM = np.r_[np.ones(N), 0.1, 0.01]


def data(seed=1):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=N)
    x = 0.3 * theta + np.sqrt(1 - 0.09) * rng.normal(size=N)
    pairs = set()
    while len(pairs) < 10 * N:
        a, b = rng.integers(0, N, 2)
        if a != b:
            pairs.add((int(a), int(b)))
    p = np.array(sorted(pairs))
    eta = theta[p[:, 0]] - theta[p[:, 1]] + (x[p[:, 0]] - x[p[:, 1]]) + 0.5
    y = (rng.random(len(p)) < expit(eta)).astype(float)
    return p, x, y


def design(p, x):
    q = len(p)
    rows = np.repeat(np.arange(q), 4)
    cols = np.column_stack([p[:, 0], p[:, 1], np.full(q, N), np.full(q, N + 1)]).ravel()
    vals = np.column_stack([np.ones(q), -np.ones(q), x[p[:, 0]] - x[p[:, 1]], np.ones(q)]).ravel()
    return sp.csr_matrix((vals, (rows, cols)), shape=(q, N + 2))


def loss(d, y, beta):
    eta = d @ beta
    return np.sum(np.logaddexp(0, eta) - y * eta) + 0.5 * np.sum(LAM * beta * beta)


def fit(d, y, beta, tol=1e-9):
    dt = d.T.tocsr()
    for _ in range(100):
        s = expit(d @ beta)
        g = dt @ (s - y) + LAM * beta
        w = s * (1 - s)
        h = (dt @ sp.diags(w) @ d).toarray() + np.diag(LAM)
        c = sla.cho_factor(h, lower=True)
        if np.max(np.abs(g)) < tol:
            return beta, c
        step = -sla.cho_solve(c, g)
        f0, slope, t = loss(d, y, beta), g @ step, 1.0
        while loss(d, y, beta + t * step) > f0 + 1e-4 * t * slope + 1e-13 * max(abs(f0), 1):
            t *= 0.5
        beta = beta + t * step
    raise RuntimeError("not converged")


def refit(d, y, warm, queried, x, seed):
    beta, c = fit(d, y, warm)
    sigma = sla.cho_solve(c, np.eye(N + 2))
    l = np.tril(c[0])
    rng = np.random.default_rng(seed)
    u = sla.solve_triangular(l.T, rng.standard_normal((N + 2, S)), lower=False)
    th = beta[:N, None] + u[:N]
    top = np.argpartition(-th, K - 1, axis=0)[:K]
    pi = np.bincount(top.ravel(), minlength=N) / S
    bw = pi * (1 - pi)
    # Candidate pairs a < b touching a base with 0 < π < 1, with at least one open order.
    is_hot = bw > 0
    hot = np.flatnonzero(is_hot)
    other = np.arange(N)[None, :]
    # Each pair once: a hot base with any other base, or with a hot base of larger index.
    mask = (other != hot[:, None]) & (~is_hot[other] | (other > hot[:, None]))
    rows, b = np.nonzero(mask)
    a = hot[rows]
    a, b = np.minimum(a, b), np.maximum(a, b)
    open_ab = ~queried[a, b]
    open_ba = ~queried[b, a]
    g = beta[:N] + beta[N] * x
    kappa = beta[N + 1]
    p_ab, p_ba = expit(g[a] - g[b] + kappa), expit(g[b] - g[a] + kappa)
    fw = open_ab * p_ab * (1 - p_ab) + open_ba * p_ba * (1 - p_ba)
    weight = fw * (bw[a] + bw[b])
    v = sigma[a, a] + sigma[b, b] - 2 * sigma[a, b]
    picks = []
    while len(picks) < R:
        best = int(np.argmax(weight * v))
        i, j = int(a[best]), int(b[best])
        weight[best] = -np.inf
        for (s_, t_) in ((i, j), (j, i)):
            dv = np.zeros(N + 2)
            dv[s_], dv[t_], dv[N], dv[N + 1] = 1, -1, x[s_] - x[t_], 1
            sd = sigma @ dv
            p = expit(g[s_] - g[t_] + kappa)
            f = p * (1 - p) / (1 + p * (1 - p) * dv @ sd)
            sigma -= f * np.outer(sd, sd)
            v -= f * (sd[a] - sd[b]) ** 2
            picks.append((s_, t_))
    return picks


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    p, x, y = data()
    d = design(p, x)
    warm, _ = fit(d[:-R], y[:-R], np.zeros(N + 2))
    queried = np.zeros((N, N), dtype=bool)
    queried[p[:, 0], p[:, 1]] = True
    times = []
    for r in range(repeats):
        t0 = time.perf_counter()
        refit(d, y, warm, queried, x, seed=r)
        times.append((time.perf_counter() - t0) * 1e3)
    print(f"refit step (NumPy/SciPy): median {np.median(times):.1f} ms, min {min(times):.1f} ms")
    print("times (ms):", " ".join(f"{t:.1f}" for t in times))


if __name__ == "__main__":
    main()
