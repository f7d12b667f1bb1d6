"""Training from a memory-mapped X: rows used in place (never copied), the same model as in memory."""

import warnings

import numpy as np
import pytest
import torch

from sklearn_ltr import DASALCRanker, RankNetRanker
from sklearn_ltr._groups import QueryGroups
from sklearn_ltr.datasets import load_ranking_layout, make_ranking, write_ranking_layout
from sklearn_ltr.training._mapped import in_place_dataset, is_memory_mapped

pytestmark = pytest.mark.usefixtures("one_torch_thread")

_CONFIGS = {
    # Early stopping: the validation split is a view of the map.
    "dasalc": (DASALCRanker, {"hidden_size": 8, "n_heads": 2, "head_size": 4, "n_attention_layers": 1, "batch_size": 4,
                              "early_stopping": True, "validation_fraction": 0.25, "max_epochs": 3}),
    # Lists subsampled to 12 documents, relevant ones first (labels read from the flat rows).
    "ranknet": (RankNetRanker, {"hidden_sizes": (8,), "max_list_length": 12, "batch_size": 4, "max_epochs": 3}),
}


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    X, y, qid = make_ranking(n_queries=30, n_features=5, shuffle=True, random_state=0)  # queries interleaved
    X = np.sign(X) * np.log1p(np.abs(X))
    # In the file, each query's rows together, the queries in descending id order: not the order
    # training numbers them in, so the dataset must find where each query starts.
    grouped = np.concatenate([np.flatnonzero(qid == q) for q in np.unique(qid)[::-1]])
    path = write_ranking_layout(X[grouped], y[grouped], qid[grouped], tmp_path_factory.mktemp("data") / "train.ltr")
    return X.astype(np.float32), y, qid, load_ranking_layout(path)


@pytest.mark.parametrize("name", list(_CONFIGS))
def test_a_memory_map_trains_the_model_of_the_array_in_memory(layout, name):
    X, y, qid, (Xm, ym, qm) = layout
    cls, params = _CONFIGS[name]
    in_memory = cls(**params, device="cpu", random_state=0).fit(X, y, groups=qid)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: neither a copy nor torch's read-only one
        mapped = cls(**params, device="cpu", random_state=0).fit(Xm, ym, groups=qm)
    np.testing.assert_array_equal(mapped.predict(X, groups=qid), in_memory.predict(X, groups=qid))
    assert mapped.history_[:, "train_loss"] == in_memory.history_[:, "train_loss"]
    # predict reads the map block by block: the same scores as from memory, in the layout's row order.
    np.testing.assert_array_equal(mapped.predict(Xm, groups=qm), mapped.predict(np.array(Xm), groups=qm))


def test_the_dataset_and_its_validation_split_use_the_map_in_place(layout):
    _, _, _, (Xm, ym, qm) = layout
    assert is_memory_mapped(Xm) and is_memory_mapped(Xm[3:]) and not is_memory_mapped(np.array(Xm))
    dataset = in_place_dataset(QueryGroups(qm), Xm, ym)
    pointer = Xm.ctypes.data
    assert dataset.rows["X"].data_ptr() == pointer and dataset.on_host
    part = dataset.subset(torch.tensor([4, 1, 7]))
    assert part.rows["X"].data_ptr() == pointer
    for position, query in enumerate([4, 1, 7]):
        torch.testing.assert_close(part[position][0]["X"], dataset[query][0]["X"], rtol=0, atol=0)
    assert dataset.to("meta") is dataset  # a GPU net gathers batches on the host instead of copying the map
    # Float64, or rows of a query apart: copied (the map with a warning naming the fix).
    assert in_place_dataset(QueryGroups(qm), np.asarray(Xm, dtype=np.float64), ym) is None
    scattered = np.roll(np.asarray(qm), 1)
    with pytest.warns(UserWarning, match="not grouped by query.*write_ranking_layout"):
        assert in_place_dataset(QueryGroups(scattered), Xm, ym) is None


def test_the_checkpoint_of_a_fit_from_a_map_is_restored(layout, tmp_path):
    _, _, _, (Xm, ym, qm) = layout
    cls, params = _CONFIGS["ranknet"]
    reference = cls(**params, device="cpu", random_state=0).fit(Xm, ym, groups=qm)
    cls(**params, device="cpu", random_state=0, checkpoint_dir=tmp_path).fit(Xm, ym, groups=qm)
    resumed = cls(**params, device="cpu", random_state=0, checkpoint_dir=tmp_path).fit(Xm, ym, groups=qm)
    np.testing.assert_array_equal(resumed.predict(Xm, groups=qm), reference.predict(Xm, groups=qm))
