"""SetRankRanker and its network: MSAB/IMSAB, equivariance, padding, initial ranks, routing."""


import numpy as np
import pytest
import sklearn
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.metadata_routing import MetadataRequest

from sklearn_ltr import NDCGScorer, ndcg_scorer
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.metrics import ndcg_score
from sklearn_ltr.nn._attention import MultiHeadAttention, key_padding_mask
from sklearn_ltr.nn._setrank import SetRankNet
from sklearn_ltr.preprocessing import Log1pTransformer
from sklearn_ltr.rankers._setrank import SetRankRanker

TINY = {"d_model": 16, "n_blocks": 1, "n_heads": 2, "device": "auto"}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=60, n_features=8, random_state=0)
    # SetRank has no built-in feature transform: tame the heavy-tailed synthetic features.
    X = StandardScaler().fit_transform(Log1pTransformer().fit_transform(X))
    return X, y, qid, _initial_ranks(X[:, 0], qid)


def _initial_ranks(first_stage_scores, qid):
    """1-based rank of each row in its query by a first-stage score (descending)."""
    ranks = np.empty(len(qid), dtype=np.int64)
    for q in np.unique(qid):
        rows = np.flatnonzero(qid == q)
        ranks[rows[np.argsort(-first_stage_scores[rows], kind="stable")]] = np.arange(1, len(rows) + 1)
    return ranks


@pytest.fixture(scope="module")
def fitted(data):
    X, y, qid, _ = data
    return SetRankRanker(**TINY, max_epochs=12, lr=5e-3, random_state=0).fit(X, y, qid)


def _net(**kwargs):
    torch.manual_seed(0)
    return SetRankNet(5, **{"d_model": 8, "n_blocks": 2, "n_heads": 2, "n_inducing_points": 3, **kwargs}).eval()


@settings(max_examples=30, deadline=None)
@given(n_docs=st.integers(1, 12), seed=st.integers(0, 2**16), block=st.sampled_from(["msab", "imsab"]),
       with_ranks=st.booleans())
def test_permutation_equivariance(n_docs, seed, block, with_ranks):
    """Proposition 1: permuting the documents (with their initial ranks) permutes the scores."""
    net = _net(block=block, use_initial_rank=with_ranks, max_rank=8)
    generator = torch.Generator().manual_seed(seed)
    X = torch.randn(1, n_docs, 5, generator=generator)
    ranks = torch.randperm(n_docs, generator=generator)[None].float() + 1  # some beyond max_rank
    mask = torch.ones(1, n_docs, dtype=torch.bool)
    permutation = torch.randperm(n_docs, generator=generator)
    extra = {"initial_rank": ranks} if with_ranks else {}
    extra_permuted = {"initial_rank": ranks[:, permutation]} if with_ranks else {}
    with torch.no_grad():
        scores = net(X, mask, **extra)[0]
        permuted = net(X[:, permutation], mask, **extra_permuted)[0]
    torch.testing.assert_close(permuted, scores[permutation], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("block", ["msab", "imsab"])
def test_padding_and_other_queries_do_not_change_scores(block):
    net = _net(block=block)
    torch.manual_seed(1)
    alone = torch.randn(1, 4, 5)
    with torch.no_grad():
        reference = net(alone, torch.ones(1, 4, dtype=torch.bool))[0]
        X = torch.randn(3, 11, 5) * 5
        X[1, :4] = alone[0]
        X[1, 4:] = 1e6
        mask = torch.ones(3, 11, dtype=torch.bool)
        mask[1, 4:] = False
        mask[2, 7:] = False
        batched = net(X, mask)
    torch.testing.assert_close(batched[1, :4], reference, rtol=1e-5, atol=1e-6)
    assert torch.all(batched[~mask] == 0)


def test_attention_masks_padded_keys_and_guards_empty_lists():
    attention = MultiHeadAttention(4, n_heads=2).eval()
    x = torch.randn(2, 3, 4)
    mask = torch.tensor([[True, True, False], [False, False, False]])
    assert key_padding_mask(torch.ones(2, 3, dtype=torch.bool)) is None
    guarded = key_padding_mask(mask)
    assert guarded[0, 0, 0].tolist() == [True, True, False] and guarded[1].all()
    with torch.no_grad():
        out = attention(x, x, mask)
        changed = x.clone()
        changed[0, 2] = 1e4  # a padded key of the first list
        assert torch.isfinite(out).all()
        torch.testing.assert_close(attention(changed, changed, mask)[0, :2], out[0, :2])
    attention.train()
    attention.dropout = 0.5  # the CPU dropout path masks the same keys
    torch.manual_seed(0)
    assert torch.isfinite(attention(changed, changed, mask)).all()


def test_fit_predict_and_learning(data, fitted):
    X, y, qid, _ = data
    scores = fitted.predict(X, groups=qid)
    assert scores.shape == y.shape and np.isfinite(scores).all()
    assert not fitted.uses_initial_rank_ and fitted.net_.module_.rank_embedding is None
    X_test, y_test, q_test = make_ranking(n_queries=40, n_features=8, random_state=1)
    X_test = StandardScaler().fit_transform(Log1pTransformer().fit_transform(X_test))
    random = ndcg_score(y_test, np.random.default_rng(0).normal(size=len(y_test)), q_test, k=10)
    assert fitted.score(X_test, y_test, q_test) > random + 0.1


def test_imsab_trains(data):
    X, y, qid, _ = data
    ranker = SetRankRanker(**TINY, block="imsab", n_inducing_points=4, attention_dropout=0.0, max_epochs=2,
                           random_state=0).fit(X, y, qid)
    assert ranker.net_.module_.blocks[0].summarise.attention.dropout == 0.0
    assert len(ranker.net_.module_.blocks[0].inducing_points) == 4
    assert np.isfinite(ranker.predict(X, qid)).all()


def test_initial_rank(data):
    X, y, qid, ranks = data
    ranker = SetRankRanker(**TINY, max_epochs=2, max_rank=10, random_state=0).fit(X, y, qid, initial_rank=ranks)
    assert ranker.uses_initial_rank_ and ranker.net_.module_.rank_embedding.num_embeddings == 10
    scores = ranker.predict(X, qid, initial_rank=ranks)
    reversed_ranks = _initial_ranks(-X[:, 0], qid)
    assert not np.allclose(scores, ranker.predict(X, qid, initial_rank=reversed_ranks))
    permutation = np.random.default_rng(1).permutation(len(y))
    np.testing.assert_array_equal(
        ranker.predict(X[permutation], qid[permutation], initial_rank=ranks[permutation]), scores[permutation]
    )
    assert ranker.score(X, y, qid, initial_rank=ranks) == pytest.approx(ndcg_score(y, scores, qid, k=10))
    with pytest.raises(ValueError, match="fitted with initial_rank"):
        ranker.predict(X, qid)
    plain = SetRankRanker(**TINY, max_epochs=1).fit(X, y, qid)
    with pytest.raises(ValueError, match="fitted without initial_rank"):
        plain.predict(X, qid, initial_rank=ranks)


@pytest.mark.parametrize(
    ("ranks", "match"),
    [
        (lambda r: r[:-1], "one rank per row"),
        (lambda r: r - 1, "whole numbers >= 1"),
        (lambda r: r + 0.5, "whole numbers >= 1"),
        (lambda r: np.where(r == 1, np.nan, r), "finite"),
    ],
)
def test_bad_initial_rank(data, ranks, match):
    X, y, qid, initial = data
    with pytest.raises(ValueError, match=match):
        SetRankRanker(**TINY, max_epochs=1).fit(X, y, qid, initial_rank=ranks(initial.astype(float)))


class SpySetRank(SetRankRanker):
    """Records what every ``fit`` and ``predict`` receives (class-level log, n_jobs=1)."""

    log = []  # noqa: RUF012

    def fit(self, X, y, groups=None, initial_rank=None):
        type(self).log.append(("fit", groups, initial_rank))
        return super().fit(X, y, groups, initial_rank=initial_rank)

    def predict(self, X, groups=None, initial_rank=None):
        type(self).log.append(("predict", groups, initial_rank))
        return super().predict(X, groups, initial_rank=initial_rank)


class RankAwareScorer(NDCGScorer):
    """NDCG scorer that also forwards ``initial_rank`` to ``predict``."""

    def __call__(self, estimator, X, y_true, groups=None, initial_rank=None, sample_weight=None):
        scores = estimator.predict(X, groups=groups, initial_rank=initial_rank)
        return ndcg_score(y_true, scores, groups, k=self.k)

    def get_metadata_routing(self):
        request = MetadataRequest(owner=type(self).__name__)
        request.score.add_request(param="groups", alias=True)
        request.score.add_request(param="initial_rank", alias=True)
        return request


@pytest.mark.parametrize("with_ranks", [False, True])
def test_routed_grid_search_pipeline(data, with_ranks):
    X, y, qid, ranks = data
    SpySetRank.log.clear()
    cv = GroupKFold(3)
    params = {"groups": qid, **({"initial_rank": ranks} if with_ranks else {})}
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(
            Pipeline([("scale", StandardScaler()), ("rank", SpySetRank(**TINY, max_epochs=1, random_state=0))]),
            {"rank__block": ["msab", "imsab"]}, cv=cv, scoring=RankAwareScorer() if with_ranks else ndcg_scorer,
        ).fit(X, y, **params)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    folds = {tuple(qid[test]) for _, test in cv.split(X, y, qid)}
    predicted = [(g, r) for method, g, r in SpySetRank.log if method == "predict"]
    assert len(predicted) == 6 and {tuple(g) for g, _ in predicted} == folds
    fits = [(g, r) for method, g, r in SpySetRank.log if method == "fit"]
    assert len(fits) == 7  # 2 candidates x 3 folds + refit
    for groups, initial_rank in fits + predicted:
        assert (initial_rank is not None) == with_ranks
        if with_ranks:  # each row's rank travelled with it
            rows = np.concatenate([np.flatnonzero(qid == q) for q in np.unique(groups)])
            assert sorted(initial_rank.tolist()) == sorted(ranks[rows].tolist())


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"d_model": 0}, "'d_model' parameter"),
        ({"d_model": 10, "n_heads": 4}, "divisible by n_heads"),
        ({"block": "isab"}, "'block' parameter"),
        ({"n_inducing_points": 0}, "'n_inducing_points' parameter"),
        ({"ff_size": 0}, "'ff_size' parameter"),
        ({"dropout": -0.1}, "'dropout' parameter"),
        ({"max_rank": 0}, "'max_rank' parameter"),
        ({"n_blocks": -1}, "'n_blocks' parameter"),
        ({"loss": "focal"}, "focal"),
        ({"attention_dropout": -1}, "'attention_dropout' parameter"),
    ],
)
def test_bad_parameters(data, params, match):
    X, y, qid, _ = data
    with pytest.raises(ValueError, match=match):
        SetRankRanker(**{**TINY, "max_epochs": 1, **params}).fit(X, y, qid)


def _first_block_logits(ranker, X, qid):
    """Largest |attention logit| of the fitted network's first block on ``X`` (hooking the attention call)."""
    seen = []
    original = torch.nn.functional.scaled_dot_product_attention

    def spy(q, k, v, attn_mask=None, **kwargs):
        logits = (q.float() @ k.float().transpose(-1, -2)) / q.shape[-1] ** 0.5
        seen.append(float(logits.abs().max()))
        return original(q, k, v, attn_mask=attn_mask, **kwargs)

    torch.nn.functional.scaled_dot_product_attention = spy
    try:
        ranker.predict(X, qid)
    finally:
        torch.nn.functional.scaled_dot_product_attention = original
    return seen[0]


@pytest.mark.parametrize("block", ["msab", "imsab"])
def test_attention_logits_stay_bounded_on_raw_heavy_tailed_features(block):
    # Raw MSLR-shaped features reach 4e5: on the bare embedding the first block's logits were about 1e8,
    # and the fused attention backward on CUDA (which recomputes them) returned NaN gradients. The
    # ranker normalises the embeddings, so the logits stay small whatever the features' scale.
    X, y, qid = make_ranking(n_queries=12, preset="mslr", random_state=0)
    assert np.abs(X).max() > 1e4
    for scale in (1.0, 1e3):
        ranker = SetRankRanker(d_model=16, n_blocks=1, n_heads=2, block=block, max_epochs=1, device="cpu",
                               random_state=0).fit(X * scale, y, qid)
        assert ranker.net_.module_.input_norm is not None
        assert _first_block_logits(ranker, X * scale, qid) < 100.0


def test_setrank_bf16_trains_finite_on_raw_features():
    # CPU autocast: bf16 training on unscaled heavy-tailed features, small batches (the CUDA divergence's setting).
    X, y, qid = make_ranking(n_queries=40, preset="mslr", random_state=1)
    for batch_size in (4, 16):
        ranker = SetRankRanker(d_model=16, n_blocks=2, n_heads=2, max_epochs=2, batch_size=batch_size,
                               precision="bf16-mixed", device="cpu", random_state=0).fit(X, y, qid)
        assert all(np.isfinite(row["train_loss"]) for row in ranker.history_)
        assert np.isfinite(ranker.predict(X, qid)).all()


def test_network_saved_before_input_norm_still_scores():
    # A SetRankNet pickled whole before input_norm existed has no such submodule: it scores as it did.
    torch.manual_seed(0)
    net = SetRankNet(n_features=4, d_model=8, n_heads=2).eval()
    assert net.input_norm is None
    X, mask = torch.randn(2, 5, 4), torch.ones(2, 5, dtype=torch.bool)
    with torch.no_grad():
        expected = net(X, mask)
        del net._modules["input_norm"]
        np.testing.assert_array_equal(net(X, mask).numpy(), expected.numpy())


def test_input_norm_normalises_the_first_block_input():
    torch.manual_seed(0)
    net = SetRankNet(n_features=4, d_model=8, n_heads=2, input_norm=True).eval()
    seen = []
    net.blocks[0].register_forward_hook(lambda module, inputs, output: seen.append(inputs[0]))
    with torch.no_grad():
        net(1e5 * torch.randn(2, 5, 4), torch.ones(2, 5, dtype=torch.bool))
    z = seen[0]
    np.testing.assert_allclose(z.mean(-1).numpy(), 0.0, atol=1e-5)
    np.testing.assert_allclose(z.std(-1, unbiased=False).numpy(), 1.0, atol=1e-3)
