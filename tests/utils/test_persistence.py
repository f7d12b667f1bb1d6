"""Saved models: what a fitted neural ranker keeps, pickle, joblib and skops round trips, ``TRUSTED_TYPES``."""

import copy
import importlib
import io
import pickle
import warnings

import joblib
import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.pipeline import make_pipeline

from sklearn_ltr import (
    DASALCRanker,
    LambdaMARTRanker,
    Log1pTransformer,
    RankingEnsemble,
    RankNetRanker,
    SetRankRanker,
    TwoTowerDebiasedRanker,
)
from sklearn_ltr.datasets import make_ranking, simulate_clicks
from sklearn_ltr.utils import TRUSTED_TYPES

pytestmark = pytest.mark.usefixtures("one_torch_thread")

NEURAL = {
    "ranknet": lambda **kw: RankNetRanker(hidden_sizes=(8,), **kw),
    "dasalc": lambda **kw: DASALCRanker(hidden_size=8, n_attention_layers=1, head_size=4, **kw),
    "setrank": lambda **kw: SetRankRanker(d_model=8, n_blocks=1, n_heads=2, **kw),
    "two-tower": lambda **kw: TwoTowerDebiasedRanker(hidden_sizes=(8,), max_position=10, **kw),
}


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=24, n_features=6, random_state=0)
    positions, clicks = simulate_clicks(y, qid, random_state=0)
    return X, y, qid, positions, clicks


def _fit(name, data, **params):
    X, y, qid, positions, clicks = data
    if name in NEURAL:
        ranker = NEURAL[name](max_epochs=2, random_state=0, **params)
        if name == "two-tower":
            return ranker.fit(X, clicks, groups=qid, positions=positions)
        return ranker.fit(X, y, groups=qid)
    if name == "lambdamart":
        return LambdaMARTRanker(n_estimators=5, min_child_samples=3, n_jobs=1, random_state=0).fit(X, y, groups=qid)
    if name == "ensemble":
        member = DASALCRanker(hidden_size=8, n_attention_layers=1, head_size=4, max_epochs=2)
        return RankingEnsemble(member, n_estimators=2, random_state=0).fit(X, y, groups=qid)
    if name == "pipeline":
        pipeline = make_pipeline(Log1pTransformer(), RankNetRanker(hidden_sizes=(8,), max_epochs=2, random_state=0))
        return pipeline.fit(X, y, ranknetranker__groups=qid)
    raise ValueError(name)


MODELS = [*NEURAL, "lambdamart", "ensemble", "pipeline"]


@pytest.fixture(scope="module")
def fitted(data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. the ensemble's members without routing
        return {name: _fit(name, data) for name in MODELS}


def _predict(model, data):
    X, _, qid, _, _ = data
    return model.predict(X, groups=qid)


def _globals(blob):
    """``module.name`` of every class or function that unpickling ``blob`` imports."""
    names = set()

    class Recorder(pickle.Unpickler):
        def find_class(self, module, name):
            names.add(f"{module}.{name}")
            return super().find_class(module, name)

    Recorder(io.BytesIO(blob)).load()
    return names


# --------------------------------------------------------------------------- what a fitted neural ranker keeps


@pytest.mark.parametrize("name", list(NEURAL))
def test_fitted_neural_ranker_keeps_no_training_state(fitted, data, name):
    ranker = fitted[name]
    net = ranker.net_
    for attribute in ("optimizer_", "criterion_", "callbacks_", "generator_"):
        assert not hasattr(net, attribute), attribute
    assert net.callbacks is None and net.optimizer is None and net.train_split is None
    assert all(parameter.grad is None for parameter in net.module_.parameters())
    # The history keeps its per-epoch rows (as skorch's History: it slices), not the per-batch ones.
    assert len(ranker.history_) == ranker.n_iter_ == 2
    assert np.isfinite(ranker.history_[:, "train_loss"]).all()
    assert not any("batches" in row for row in ranker.history_)
    # The pickle references the library's classes and NumPy's, nothing of torch or skorch.
    blob = pickle.dumps(ranker)
    foreign = {g for g in _globals(blob) if not g.startswith(("sklearn_ltr.", "numpy.", "builtins.", "copyreg."))}
    assert not foreign, foreign


@pytest.mark.parametrize("name", list(NEURAL))
def test_keep_training_state_keeps_the_whole_net(data, name):
    small, whole = _fit(name, data), _fit(name, data, keep_training_state=True)
    net = whole.net_
    assert hasattr(net, "optimizer_") and hasattr(net, "callbacks_") and hasattr(net, "generator_")
    assert "batches" in net.history[-1]
    np.testing.assert_array_equal(_predict(whole, data), _predict(small, data))  # the same model
    np.testing.assert_array_equal(_predict(pickle.loads(pickle.dumps(whole)), data), _predict(small, data))
    assert len(pickle.dumps(small)) < 0.6 * len(pickle.dumps(whole))


def test_inference_net_refuses_to_train(fitted, data):
    from sklearn_ltr._groups import QueryGroups
    from sklearn_ltr.training._net import build_dataset

    X, y, qid, _, _ = data
    dataset = build_dataset(QueryGroups(qid), X.astype(np.float32), y)
    for net in (fitted["ranknet"].net_, pickle.loads(pickle.dumps(fitted["ranknet"].net_))):
        for method in (net.fit, net.partial_fit):
            with pytest.raises(RuntimeError, match="keep_training_state=True"):
                method(dataset)


def test_loading_leaves_torch_random_state_alone(fitted):
    blob = pickle.dumps(fitted["dasalc"])
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    pickle.loads(blob)  # rebuilding the module draws initial weights: in a forked random state
    np.testing.assert_array_equal(torch.rand(3), expected)


def test_a_model_trained_on_cuda_loads_on_cpu(fitted, data, monkeypatch):
    ranker = fitted["setrank"]
    state = ranker.net_.__getstate__()
    assert all(isinstance(array, np.ndarray) for array in state["weights"].values())
    state["settings"] = {**state["settings"], "device": "cuda:0"}  # as a net trained on a GPU saves it
    # Scored before CUDA disappears: under --device cuda the fitted ranker itself predicts on the GPU.
    expected = _predict(ranker, data)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    net = type(ranker.net_).__new__(type(ranker.net_))
    net.__setstate__(state)
    assert net.device == "cpu" and next(net.module_.parameters()).device.type == "cpu"
    restored = copy.copy(ranker)
    restored.net_ = net
    if torch.device(ranker.net_.device).type == "cpu":
        np.testing.assert_array_equal(_predict(restored, data), expected)
    else:  # another device: float32 arithmetic in another order
        np.testing.assert_allclose(_predict(restored, data), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_trained_ranker_pickles_for_a_cpu_machine(data, monkeypatch):
    ranker = _fit("ranknet", data, device="cuda")
    blob = pickle.dumps(ranker)
    expected = _predict(ranker, data)  # on the GPU, before CUDA disappears
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    restored = pickle.loads(blob)
    assert restored.device_.startswith("cuda") and restored.net_.device == "cpu"
    np.testing.assert_allclose(_predict(restored, data), expected, rtol=2e-2, atol=2e-2)


def test_clone_and_deepcopy(fitted, data):
    ranker = fitted["two-tower"]
    assert not hasattr(clone(ranker), "net_")
    copied = copy.deepcopy(ranker)
    assert copied.net_.module_ is not ranker.net_.module_
    np.testing.assert_array_equal(_predict(copied, data), _predict(ranker, data))
    np.testing.assert_array_equal(copied.observation_logits_, ranker.observation_logits_)


# --------------------------------------------------------------------------- pickle, joblib and skops round trips


@pytest.mark.parametrize("name", MODELS)
def test_pickle_and_joblib_round_trips(fitted, data, name):
    model = fitted[name]
    expected = _predict(model, data)
    np.testing.assert_array_equal(_predict(pickle.loads(pickle.dumps(model)), data), expected)
    buffer = io.BytesIO()
    joblib.dump(model, buffer)
    buffer.seek(0)
    np.testing.assert_array_equal(_predict(joblib.load(buffer), data), expected)


@pytest.mark.parametrize("name", MODELS)
def test_skops_round_trip_with_trusted_types(fitted, data, name, tmp_path):
    sio = pytest.importorskip("skops.io", reason="skops files need the serving extra")
    model = fitted[name]
    path = tmp_path / "model.skops"
    sio.dump(model, path)
    untrusted = sio.get_untrusted_types(file=path)
    assert untrusted and set(untrusted) <= set(TRUSTED_TYPES), set(untrusted) - set(TRUSTED_TYPES)
    loaded = sio.load(path, trusted=TRUSTED_TYPES)
    assert type(loaded) is type(model)
    np.testing.assert_array_equal(_predict(loaded, data), _predict(model, data))
    with pytest.raises(sio.exceptions.UntrustedTypesFoundException):
        sio.load(path)  # skops's defaults alone do not trust the library's types


def test_skops_with_a_query_column_dataframe(data):
    sio = pytest.importorskip("skops.io", reason="skops files need the serving extra")
    pd = pytest.importorskip("pandas")
    X, y, qid, _, _ = data
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])]).assign(qid=qid)
    ranker = DASALCRanker(hidden_size=8, n_attention_layers=1, head_size=4, max_epochs=2, random_state=0,
                          query_column="qid").fit(frame, y)
    loaded = sio.loads(sio.dumps(ranker), trusted=TRUSTED_TYPES)
    shuffled = frame.sample(frac=1.0, random_state=0)
    np.testing.assert_array_equal(loaded.predict(shuffled), ranker.predict(shuffled))
    assert list(loaded.feature_names_in_) == list(ranker.feature_names_in_)


def test_skops_refuses_a_whole_training_state(data):
    sio = pytest.importorskip("skops.io", reason="skops files need the serving extra")
    blob = sio.dumps(_fit("ranknet", data, keep_training_state=True))
    untrusted = set(sio.get_untrusted_types(data=blob)) - set(TRUSTED_TYPES)
    assert {"torch.optim.adam.Adam", "builtins.print"} <= untrusted
    with pytest.raises(sio.exceptions.UntrustedTypesFoundException):
        sio.loads(blob, trusted=TRUSTED_TYPES)


def test_trusted_types_name_real_classes():
    assert len(TRUSTED_TYPES) == len(set(TRUSTED_TYPES)) and all(isinstance(name, str) for name in TRUSTED_TYPES)
    for name in TRUSTED_TYPES:
        module, _, attribute = name.rpartition(".")
        assert isinstance(getattr(importlib.import_module(module), attribute), type), name
    import sklearn_ltr.utils.persistence as persistence

    assert persistence.TRUSTED_TYPES is TRUSTED_TYPES


def test_trusted_types_are_what_the_registry_declared_plus_the_preprocessing():
    from sklearn_ltr.rankers import RANKERS

    declared = {f"{entry.module}.{entry.name}" for entry in RANKERS.values()}
    declared |= {name for entry in RANKERS.values() for name in entry.trusted_types}
    assert set(TRUSTED_TYPES) == declared | {"sklearn_ltr.preprocessing._log1p.Log1pTransformer",
                                             "sklearn_ltr.preprocessing._query_normalizer.QueryNormalizer",
                                             "sklearn_ltr._feature_profile.FeatureProfile", "numpy.dtype"}
    assert len(TRUSTED_TYPES) == 19  # the count docs/persistence.rst gives


def test_declared_types_are_kept_per_owner_once_each():
    from sklearn_ltr.utils import _trusted_types as hook

    before = hook.declared_trusted_types()
    hook.declare_trusted_types("A", ["x.A", "x.Net"])
    hook.declare_trusted_types("B", iter(["x.B", "x.Net"]))  # any iterable; a name shared by two owners
    try:
        assert hook.declared_trusted_types() == [*before, "x.A", "x.Net", "x.B"]
        hook.declare_trusted_types("A", ["x.A2"])  # a second declaration replaces the first
        assert hook.declared_trusted_types() == [*before, "x.A2", "x.B", "x.Net"]
        hook.withdraw_trusted_types("B")
        assert hook.declared_trusted_types() == [*before, "x.A2"]
    finally:
        hook.withdraw_trusted_types("A")
        hook.withdraw_trusted_types("B")  # withdrawing twice, or an owner that declared nothing, is no error
    assert hook.declared_trusted_types() == before


def test_a_ranker_registered_later_is_trusted_until_it_is_unregistered():
    from sklearn_ltr.rankers import RankerEntry, register_ranker, unregister_ranker
    from sklearn_ltr.utils.persistence import trusted_types

    toy, toy_net = "sklearn_ltr.rankers._lambdamart.ToyRanker", "toy.module.ToyNet"
    register_ranker(RankerEntry("ToyRanker", "sklearn_ltr.rankers._lambdamart", trusted_types=(toy_net,)))
    try:
        assert {toy, toy_net} <= set(trusted_types())
        assert toy not in TRUSTED_TYPES  # the list of the rankers registered at import
    finally:
        unregister_ranker("ToyRanker")
    assert set(trusted_types()) == set(TRUSTED_TYPES)


@pytest.mark.parametrize("module_class", [dict, len], ids=["a class but not a module", "not a class"])
def test_a_saved_module_class_that_is_not_a_torch_module_is_refused(module_class):
    # A pickle or skops file can name any class: rebuilding must not call it with the saved kwargs.
    from sklearn_ltr.training._state import _rebuild_module

    with pytest.raises(TypeError) as error:
        _rebuild_module({"module_class": module_class, "module_kwargs": {}, "weights": {}})
    assert str(error.value) == f"the saved module class {module_class!r} is not a torch.nn.Module subclass."


class _FakeNet:
    """The part of a fitted net that ``inference_state`` reads."""

    def __init__(self, module):
        self.module_ = module
        self.history_ = []

    def get_params_for(self, prefix):
        return {"in_features": 3, "out_features": 2}


def test_bfloat16_weights_survive_the_inference_state_round_trip():
    # NumPy has no bfloat16: such tensors are stored as float32 with their dtype, and cast back.
    from sklearn_ltr.training._state import _rebuild_module, inference_state

    torch.manual_seed(0)
    module = torch.nn.Linear(3, 2).to(torch.bfloat16)
    state = inference_state(_FakeNet(module))
    assert state["dtypes"] == {"weight": "torch.bfloat16", "bias": "torch.bfloat16"}
    assert all(array.dtype == np.float32 for array in state["weights"].values())
    rebuilt = _rebuild_module(state)
    for name, tensor in module.state_dict().items():
        # The dtype and the values come back exactly: the rebuilt module is bfloat16 too.
        assert rebuilt.state_dict()[name].dtype == torch.bfloat16
        assert torch.equal(rebuilt.state_dict()[name], tensor)
    assert inference_state(_FakeNet(module), weights=False)["weights"] == {}


def _skops_round_trip(model):
    sio = pytest.importorskip("skops.io", reason="skops files need the serving extra")
    return sio.loads(sio.dumps(model), trusted=TRUSTED_TYPES)


_ROUND_TRIPS = {
    "pickle": lambda model: pickle.loads(pickle.dumps(model)),
    "joblib": lambda model: joblib.load(_joblib_bytes(model)),
    "skops": _skops_round_trip,
}


def _joblib_bytes(model):
    buffer = io.BytesIO()
    joblib.dump(model, buffer)
    buffer.seek(0)
    return buffer


@pytest.mark.parametrize("keep_training_state", [False, True], ids=["inference net", "whole net"])
@pytest.mark.parametrize("round_trip", sorted(_ROUND_TRIPS))
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float64], ids=["bfloat16", "float64"])
def test_a_module_in_another_dtype_comes_back_in_it_with_exactly_its_weights(data, round_trip, dtype,
                                                                            keep_training_state):
    # Every way a fitted ranker is saved rebuilds its module; none may cast it to the constructor's float32.
    if round_trip == "skops" and keep_training_state:
        pytest.skip("skops refuses a whole training state (test_skops_refuses_a_whole_training_state)")
    ranker = _fit("ranknet", data, keep_training_state=keep_training_state)
    ranker.net_.module_.to(dtype)  # as a module trained in that dtype
    saved = {name: tensor.clone() for name, tensor in ranker.net_.module_.state_dict().items()}
    loaded = _ROUND_TRIPS[round_trip](ranker)
    state = loaded.net_.module_.state_dict()
    assert list(state) == list(saved)
    for name, tensor in saved.items():
        assert state[name].dtype == tensor.dtype == dtype, name
        assert torch.equal(state[name], tensor), name


def test_rebuilding_with_a_missing_weight_fails_loudly():
    from sklearn_ltr.training._state import _rebuild_module, inference_state

    state = inference_state(_FakeNet(torch.nn.Linear(3, 2)))
    del state["weights"]["bias"]
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "bias"'):
        _rebuild_module(state)


def _tiny_fitted_ranknet():
    from sklearn_ltr import RankNetRanker
    from sklearn_ltr.datasets import make_ranking

    X, y, qid = make_ranking(n_queries=6, n_features=3, random_state=0)
    return RankNetRanker(hidden_sizes=(4,), max_epochs=1, batch_size=3, lr=0.0123, random_state=0).fit(X, y, qid), X


def test_restoring_keeps_the_settings_and_defaults_the_device_to_cpu():
    from sklearn_ltr.training._state import inference_state, restore_inference_net

    ranker, _ = _tiny_fitted_ranknet()
    state = inference_state(ranker.net_)
    del state["settings"]["device"]  # a state from before devices were saved
    cls = type(ranker.net_)
    net = restore_inference_net(cls.__new__(cls), state)
    assert net.initialized_ and net.inference_only_
    assert str(net.device) == "cpu" and next(net.module_.parameters()).device.type == "cpu"
    assert (net.batch_size, net.lr) == (ranker.net_.batch_size, ranker.net_.lr) and net.lr == 0.0123
    assert type(net.module_) is type(ranker.net_.module_)
    assert [row["epoch"] for row in net.history_] == [row["epoch"] for row in ranker.net_.history_]


def test_a_state_from_a_newer_version_is_refused():
    from sklearn_ltr.training._state import STATE_KEY, STATE_VERSION, inference_state, restore_inference_net

    ranker, _ = _tiny_fitted_ranknet()
    state = inference_state(ranker.net_)
    state[STATE_KEY] = STATE_VERSION + 1
    cls = type(ranker.net_)
    with pytest.raises(ValueError) as error:
        restore_inference_net(cls.__new__(cls), state)
    assert str(error.value) == (f"this model was saved by a newer sklearn_ltr (state version {STATE_VERSION + 1}); "
                                f"upgrade sklearn_ltr to load it.")
