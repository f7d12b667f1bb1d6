"""Data-parallel training (distributed=True): N gloo processes train the model one process would."""

import os
import pickle
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from sklearn_ltr import DASALCRanker, RankNetRanker, SetRankRanker, TwoTowerDebiasedRanker
from sklearn_ltr.datasets import make_ranking, simulate_clicks

WORLD_SIZE = 2

_DASALC = {"optimizer": "sgd", "lr": 0.05, "hidden_size": 16, "n_layers": 1, "n_attention_layers": 1, "n_heads": 2,
           "head_size": 4, "dropout": 0.0, "attention_dropout": 0.0, "noise_std": 0.0, "batch_size": 8}

# 21 queries in batches of 8: the last global batch (5 queries) splits 3 / 2, so the
# processes' shares are uneven and must be weighted by their number of queries.
CONFIGS = {
    "ranknet": (RankNetRanker, {"hidden_sizes": (16, 8), "batch_size": 8, "max_epochs": 3}),
    "ranknet_softmax": (RankNetRanker, {"hidden_sizes": (16,), "loss": "softmax", "batch_size": 8,
                                        "max_epochs": 3}),
    # Batch norm everywhere (synchronised over the processes), attention, latent cross. SGD: with
    # Adam, parameters whose true gradient is zero (biases before batch norm) step on rounding
    # noise, and the two runs drift apart by about 1e-4 (as two batch-norm formulas do in one process).
    "dasalc": (DASALCRanker, {**_DASALC, "max_epochs": 3}),
    # Validation NDCG reduced over the processes drives early stopping.
    "dasalc_early": (DASALCRanker, {**_DASALC, "max_epochs": 6, "early_stopping": True, "validation_fraction": 0.3,
                                    "n_iter_no_change": 2}),
    # Stacked self-attention blocks; the two-tower model's own training step, clicks and positions.
    "setrank": (SetRankRanker, {"d_model": 8, "n_blocks": 1, "n_heads": 2, "dropout": 0.0, "batch_size": 8,
                                "max_epochs": 3}),
    "two_tower": (TwoTowerDebiasedRanker, {"hidden_sizes": (8,), "gradient_reversal": 0.5, "batch_size": 8,
                                           "max_epochs": 3}),
    # Per-query sample weights: each process's share of a global batch is its part of the batch's
    # query *weight*, not of its query count (with unequal weights the two differ).
    "ranknet_weighted": (RankNetRanker, {"hidden_sizes": (16,), "batch_size": 8, "max_epochs": 3}),
    # Global batches of exactly as many queries as processes (one query each, nothing to merge).
    "ranknet_batch2": (RankNetRanker, {"hidden_sizes": (16,), "batch_size": 2, "max_epochs": 2}),
    # 20 queries in batches of 3: six of 3 (split 2 / 1) and one of exactly 2.
    "ranknet_batch3": (RankNetRanker, {"hidden_sizes": (16,), "batch_size": 3, "max_epochs": 2}),
    # Weighted and uneven together, with validation queries over several batches.
    "dasalc_weighted_early": (DASALCRanker, {**_DASALC, "batch_size": 5, "max_epochs": 5, "early_stopping": True,
                                             "validation_fraction": 0.3, "n_iter_no_change": 2}),
}
# Queries per configuration (21 unless said).
N_QUERIES = {"ranknet_batch2": 20, "ranknet_batch3": 20, "dasalc_weighted_early": 20}
WEIGHTED = {"ranknet_weighted", "dasalc_weighted_early"}


def _data(n_queries=21):
    X, y, qid = make_ranking(n_queries=n_queries, n_features=6, shuffle=True, random_state=3)
    return X.astype(np.float32), y, qid


def _sample_weight(qid):
    """One weight per query, from 0.2 to 5 (constant within a query, as sample_weight must be)."""
    ids, codes = np.unique(qid, return_inverse=True)
    return np.linspace(0.2, 5.0, len(ids))[np.random.default_rng(1).permutation(len(ids))][codes]


def _log1p(X):
    # SetRank embeds raw features linearly: with heavy-tailed ones, float32 sums in another order
    # differ by 1e-4 relative (exactly equal in float64) and the runs drift apart in training.
    return np.sign(X) * np.log1p(np.abs(X))


def _fit(name, **params):
    cls, options = CONFIGS[name]
    X, y, qid = _data(N_QUERIES.get(name, 21))
    if cls is SetRankRanker:
        X = _log1p(X)
    # CPU whatever --device says: these processes join a gloo group of their own, and two processes
    # of one machine cannot each hold a GPU of a single-GPU machine (torchrun's test below follows --device).
    ranker = cls(**{**options, "device": "cpu", "random_state": 0, **params})
    if cls is TwoTowerDebiasedRanker:
        positions, clicks = simulate_clicks(y, qid, w=0.5, y_max=4, random_state=0)
        return ranker.fit(X, clicks, groups=qid, positions=positions)
    if name in WEIGHTED:
        return ranker.fit(X, y, groups=qid, sample_weight=_sample_weight(qid))
    return ranker.fit(X, y, groups=qid)


def _worker(rank, init_file, out_dir):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD_SIZE)
    try:
        results = {}
        for name in CONFIGS:
            X, _, qid = _data(N_QUERIES.get(name, 21))
            ranker = _fit(name, distributed=True)
            results[name] = {
                "scores": ranker.predict(_log1p(X) if name == "setrank" else X, groups=qid),
                "valid_ndcg": [row.get("valid_ndcg@10") for row in ranker.history_],
                "train_loss": [row["train_loss"] for row in ranker.history_],
                "valid_loss": [row.get("valid_loss") for row in ranker.history_],
                "best_iteration": ranker.best_iteration_,
                "class": type(ranker.net_).__name__,
                "pickled": pickle.dumps(ranker),
            }
        # Fewer queries per batch than processes: every global batch joins a neighbour.
        ranker = _fit("ranknet", batch_size=1, max_epochs=1, distributed=True)
        X, _, qid = _data()
        results["batch1"] = {"scores": ranker.predict(X, groups=qid),
                             "batch_count": [row["train_batch_count"] for row in ranker.history_]}
        with open(os.path.join(out_dir, f"rank{rank}.pkl"), "wb") as file:
            pickle.dump(results, file)
    finally:
        dist.destroy_process_group()


def _centred(scores):
    return scores - scores.mean()


@pytest.fixture(scope="module")
def distributed_results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ddp")
    mp.spawn(_worker, args=(str(tmp / "init"), str(tmp)), nprocs=WORLD_SIZE, join=True)
    results = []
    for rank in range(WORLD_SIZE):
        with open(tmp / f"rank{rank}.pkl", "rb") as file:
            results.append(pickle.load(file))
    return results


@pytest.mark.parametrize("name", list(CONFIGS))
def test_two_processes_train_the_model_of_one(distributed_results, name):
    X, _, qid = _data(N_QUERIES.get(name, 21))
    X = _log1p(X) if name == "setrank" else X
    single = _fit(name)
    expected = single.predict(X, groups=qid)
    for rank, results in enumerate(distributed_results):
        result = results[name]
        # Up to a constant: the output bias gets no gradient from a ranking loss (shifts change no
        # ranking), so its "gradient" is rounding noise, which Adam's normalisation turns into steps.
        np.testing.assert_allclose(_centred(result["scores"]), _centred(expected), rtol=2e-4, atol=2e-5,
                                   err_msg=f"{name}: rank {rank} differs from one process")
        np.testing.assert_allclose(result["train_loss"], [row["train_loss"] for row in single.history_],
                                   rtol=1e-4, err_msg=f"{name}: rank {rank} logged another training loss")
        assert result["best_iteration"] == single.best_iteration_
        # The fitted net is an ordinary one: it pickles and predicts without a process group.
        assert result["class"] == type(single.net_).__name__
        restored = pickle.loads(result["pickled"])
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # as in the workers: float32 sums split across threads round differently
        try:
            np.testing.assert_array_equal(restored.predict(X, groups=qid), result["scores"])
        finally:
            torch.set_num_threads(threads)
    if single.early_stopping:
        valid = [row["valid_ndcg@10"] for row in single.history_]
        valid_loss = [row["valid_loss"] for row in single.history_]
        for results in distributed_results:  # the same NDCG on every process, equal to one process's
            np.testing.assert_allclose(results[name]["valid_ndcg"], valid, rtol=1e-5)
            np.testing.assert_allclose(results[name]["valid_loss"], valid_loss, rtol=1e-4)
        assert len(valid) < CONFIGS[name][1]["max_epochs"], "early stopping never triggered: weak test"


def test_batches_smaller_than_the_processes_join_in_pairs(distributed_results):
    """batch_size=1 on two processes: each global batch of one query joins one neighbour, not all of them."""
    first, second = (results["batch1"] for results in distributed_results)
    # 21 queries: nine pairs and a last batch of three, on both processes (not one batch of 21).
    assert first["batch_count"] == second["batch_count"] == [10]
    np.testing.assert_array_equal(first["scores"], second["scores"])


def test_tolerance_tells_models_apart(distributed_results):
    """Guard against a vacuous pass: one epoch less is outside the tolerance the processes meet."""
    X, _, qid = _data()
    single = _fit("ranknet").predict(X, groups=qid)
    other = _fit("ranknet", max_epochs=2).predict(X, groups=qid)
    assert not np.allclose(_centred(single), _centred(other), rtol=2e-4, atol=2e-5)
    assert np.allclose(_centred(distributed_results[0]["ranknet"]["scores"]), _centred(single), rtol=2e-4, atol=2e-5)


def test_single_process_warns_and_trains_as_usual():
    X, _, qid = _data()
    with pytest.warns(UserWarning, match=r"distributed=True\) runs as a single process"):
        ranker = _fit("ranknet", distributed=True)
    np.testing.assert_array_equal(ranker.predict(X, groups=qid), _fit("ranknet").predict(X, groups=qid))


_SCRIPT = """
import atexit, os
import numpy as np, torch, torch.distributed as dist
from sklearn_ltr import RankNetRanker
from sklearn_ltr.datasets import make_ranking


def record_group_at_exit():
    # Registered before fit, so it runs after every exit handler fit registers (atexit is last in, first out):
    # it sees whether the group fit joined is still alive when the interpreter starts to shut down.
    with open(os.path.join("{outdir}", "alive_at_exit" + os.environ["RANK"]), "w") as file:
        file.write(str(dist.is_initialized()))


atexit.register(record_group_at_exit)
torch.set_num_threads(1)
X, y, qid = make_ranking(n_queries=16, n_features=4, random_state=0)
ranker = RankNetRanker(hidden_sizes=(8,), batch_size=4, max_epochs=2, device="{device}", random_state=0,
                       distributed=True, verbose=1).fit(X, y, groups=qid)
if dist.get_rank() == 0:
    np.save("{out}", ranker.predict(X, groups=qid))
"""


@pytest.mark.parametrize("nproc", [WORLD_SIZE, 1])
def test_torchrun_launches_a_script(tmp_path, nproc):
    # With one process too, fit joins the launcher's process group: the script's own
    # dist.get_rank() works as with N processes (the pattern the docs show).
    script = tmp_path / "train.py"
    out = tmp_path / "scores.npy"
    # --device cuda: one GPU per process, else CPU (gloo) for a job of more processes than GPUs.
    device = "auto" if nproc <= max(torch.cuda.device_count(), 1) else "cpu"
    script.write_text(textwrap.dedent(_SCRIPT.format(out=out, outdir=tmp_path, device=device)))
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
               str(script)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    # The timeout only stops a hang: the job takes under a minute on two loaded cores, several times that under
    # heavy load, and a slow run is no failure.
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert out.exists()
    # The group fit joined is destroyed before the interpreter shuts down, on every process: left to the
    # shutdown, gloo's worker threads may be destroyed unjoined, and the process aborts once in a while
    # ("terminate called without an active exception") although training went well.
    for rank in range(nproc):
        assert (tmp_path / f"alive_at_exit{rank}").read_text() == "False", f"rank {rank} exited with its group alive"
    # verbose=1 prints the epoch table on rank 0 only.
    assert result.stdout.count("train_loss") == 1, result.stdout
    X, y, qid = make_ranking(n_queries=16, n_features=4, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        single = RankNetRanker(hidden_sizes=(8,), batch_size=4, max_epochs=2, device=device, random_state=0)
        expected = single.fit(X, y, groups=qid).predict(X, groups=qid)
    np.testing.assert_allclose(_centred(np.load(out)), _centred(expected), rtol=2e-4, atol=2e-5)
