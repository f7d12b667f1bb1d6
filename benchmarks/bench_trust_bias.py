"""Trust bias: a ranker trained on simulated trust-biased clicks, with IPS, the affine correction, and EM's estimate.

Clicks: ``simulate_click_log`` with ``PositionBasedModel(trust_bias="vardasbi2020")`` on ``make_ranking`` queries,
the top 10 of a logging ranking of quality ``w`` shown per session. Each session is one training list. The
rankers are evaluated by NDCG@10 of the true grades on held-out queries.

    python benchmarks/bench_trust_bias.py [n_queries] [sessions] [max_epochs]
"""

import sys
import time

import numpy as np

from sklearn_ltr import RankNetRanker
from sklearn_ltr.clicks import PositionBasedModel, estimate_trust_bias_em, simulate_click_log
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.metrics import ndcg_score


def main(n_queries=200, sessions=20, max_epochs=10, seed=0):
    X, y, qid = make_ranking(n_queries=2 * n_queries, n_features=20, random_state=seed)
    train, test = qid < n_queries, qid >= n_queries
    model = PositionBasedModel(trust_bias="vardasbi2020")
    log = simulate_click_log(y[train], qid[train], click_model=model, w=0.7, sessions=sessions, top_k=10,
                             random_state=seed)
    X_log = X[train][log.rows]
    alpha, beta = model.affine_parameters(log.positions)
    theta = alpha + beta  # position 1's relevant-document click rate is 1 under PBM: examination theta_k eps_plus_k
    start = time.perf_counter()
    estimate = estimate_trust_bias_em(log.clicks, log.positions, log.groups, documents=log.rows, max_position=10)
    em_seconds = time.perf_counter() - start
    variants = {
        "clicks, no correction": None,
        "IPS, propensity alpha + beta": np.clip(theta, 1e-3, 1),
        "affine, true (alpha, beta)": np.column_stack([alpha, beta]),
        "affine, EM estimate": estimate.affine_of(log.positions),
    }
    print(f"{len(log.clicks)} impressions, {log.clicks.sum()} clicks; EM {estimate.n_iter} iterations in "
          f"{em_seconds:.1f} s")
    for name, propensity in variants.items():
        for loss in ("softmax", "sigmoid_ce"):
            ranker = RankNetRanker(loss=loss, max_epochs=max_epochs, random_state=seed)
            fit_params = {} if propensity is None else {"propensity": propensity}
            ranker.fit(X_log, log.clicks, log.sessions, **fit_params)
            score = ndcg_score(y[test], ranker.predict(X[test]), qid[test], k=10)
            print(f"{name:32s} {loss:10s} NDCG@10 {score:.4f}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
