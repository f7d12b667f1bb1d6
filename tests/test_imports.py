"""``import sklearn_ltr`` loads torch and skorch only when a neural ranker is used."""

import subprocess
import sys

import pytest

_HEAVY = ("torch", "skorch")


def _loaded_after(code):
    script = f"import sys\n{code}\nprint(' '.join(m for m in {_HEAVY!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return result.stdout.split()


def test_lightweight_imports_load_no_torch():
    # One interpreter for all of them (each start costs about a second).
    code = """
import sklearn_ltr
from sklearn_ltr import LambdaMARTRanker, Log1pTransformer, ndcg_score, ndcg_scorer
from sklearn_ltr.metrics import compare_rankings
from sklearn_ltr.inspection import permutation_importance
from sklearn_ltr.rankers import LambdaMARTRanker, RankingEnsemble
from sklearn_ltr.clicks import estimate_propensity_em, estimate_propensity_harvesting
"""
    assert _loaded_after(code) == []


def test_a_neural_ranker_loads_torch_on_first_use():
    assert _loaded_after("import sklearn_ltr\nsklearn_ltr.RankNetRanker") == list(_HEAVY)


def test_lazy_names_behave_like_attributes():
    import sklearn_ltr
    from sklearn_ltr import rankers

    assert set(sklearn_ltr.__all__) <= set(dir(sklearn_ltr))
    assert set(rankers.__all__) <= set(dir(rankers))
    assert sklearn_ltr.RankNetRanker is rankers.RankNetRanker
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchRanker'"):
        sklearn_ltr.NoSuchRanker  # noqa: B018


def test_command_line_help_loads_no_torch_skorch_or_lightgbm():
    """``sklearn-ltr --help`` and each command's help parse arguments only: no training stack."""
    code = """
import contextlib, io
from sklearn_ltr.cli import main
for argv in (["--help"], ["train", "--help"], ["predict", "--help"], ["evaluate", "--help"], ["demo", "--help"]):
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            main(argv)
        except SystemExit:
            pass
"""
    script = f"import sys\n{code}\nprint(' '.join(m for m in ('torch', 'skorch', 'lightgbm') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.split() == []
