"""Every public estimator's signature, ``_parameter_constraints`` and docstring agree.

Estimators are discovered from ``sklearn_ltr.__all__`` and ``sklearn_ltr.rankers.__all__``.
For each, the parameters of ``__init__`` are exactly the keys of ``_parameter_constraints``
and the entries of the docstring's numpydoc "Parameters" section (in signature order);
each documented ``default=...`` is the signature's default; the defaults satisfy the
constraints; and ``__init__`` stores every argument unchanged under its own name and
sets nothing else (scikit-learn's rule: validation happens in ``fit``).
"""

import ast
import inspect
import re

import pytest
from sklearn.base import BaseEstimator

import sklearn_ltr
import sklearn_ltr.rankers
from sklearn_ltr.utils._sklearn_compat import validate_estimator_params

#: Estimators the discovery must find (a guard against a test that checks nothing).
KNOWN = {
    "DASALCRanker", "LambdaMARTRanker", "Log1pTransformer", "RankNetRanker", "RankingEnsemble", "SetRankRanker",
    "TwoTowerDebiasedRanker",
}  # fmt: skip

_DEFAULT = re.compile(r"(?:^|,\s*)default\s*=\s*(?P<value>.+?)\s*$")


def _public_estimators():
    found = {}
    for module in (sklearn_ltr, sklearn_ltr.rankers):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) and issubclass(obj, BaseEstimator):
                found[obj.__name__] = obj
    return [found[name] for name in sorted(found)]


ESTIMATORS = _public_estimators()


def _parameters(cls):
    """The ``__init__`` parameters of ``cls``, ``self`` excluded, in signature order."""
    return list(inspect.signature(cls.__init__).parameters.values())[1:]


def _documented(cls):
    """``name -> type text`` of the Parameters section of ``cls``'s docstring, in order."""
    ClassDoc = pytest.importorskip("numpydoc.docscrape", reason="the test extra brings numpydoc").ClassDoc
    doc = ClassDoc(cls, config={"show_class_members": False})
    entries = {}
    for parameter in doc["Parameters"]:
        for name in parameter.name.split(","):  # "x1, x2 : int" documents two
            entries[name.strip()] = parameter.type
    return entries


def _same_default(text, default):
    """Whether the documented default ``text`` spells ``default`` (type included: 0 is not 0.0)."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):  # not a literal, e.g. a name: compare the spelling
        return text in {repr(default), str(default)}
    return repr(value) == repr(default)


def test_every_public_estimator_is_found():
    assert {cls.__name__ for cls in ESTIMATORS} >= KNOWN


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda cls: cls.__name__)
def test_signature_is_plain(cls):
    assert "__init__" in vars(cls), f"{cls.__name__} does not write its own __init__"
    variadic = [p.name for p in _parameters(cls) if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    assert not variadic, f"{cls.__name__}.__init__ takes *args or **kwargs: {variadic}"
    without_default = [p.name for p in _parameters(cls) if p.default is p.empty]
    assert not without_default, f"{cls.__name__}.__init__ parameters without a default: {without_default}"


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda cls: cls.__name__)
def test_constraints_match_signature(cls):
    names = {p.name for p in _parameters(cls)}
    constrained = set(cls._parameter_constraints)
    assert constrained == names, (
        f"{cls.__name__}: parameters without constraints {sorted(names - constrained)}, "
        f"constraints of no parameter {sorted(constrained - names)}"
    )


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda cls: cls.__name__)
def test_docstring_matches_signature(cls):
    names = [p.name for p in _parameters(cls)]
    documented = list(_documented(cls))
    assert documented == names, (
        f"{cls.__name__}: undocumented {[n for n in names if n not in documented]}, "
        f"documented but not parameters {[n for n in documented if n not in names]}, "
        f"or documented out of signature order"
    )


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda cls: cls.__name__)
def test_documented_defaults_match_signature(cls):
    documented = _documented(cls)
    wrong = []
    for parameter in _parameters(cls):
        if parameter.name not in documented:
            continue  # reported by test_docstring_matches_signature
        match = _DEFAULT.search(documented[parameter.name])
        if match is None:
            wrong.append(f"{parameter.name}: no 'default=' documented (signature: {parameter.default!r})")
        elif not _same_default(match["value"], parameter.default):
            wrong.append(f"{parameter.name}: documented default={match['value']}, signature {parameter.default!r}")
    assert not wrong, f"{cls.__name__}: " + "; ".join(wrong)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda cls: cls.__name__)
def test_defaults_satisfy_constraints(cls):
    validate_estimator_params(cls())


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda cls: cls.__name__)
def test_init_stores_arguments_verbatim(cls):
    sentinels = {p.name: object() for p in _parameters(cls)}
    estimator = cls(**sentinels)
    missing = object()
    changed = [name for name, value in sentinels.items() if getattr(estimator, name, missing) is not value]
    assert not changed, f"{cls.__name__}.__init__ does not store {changed} unchanged under their names"
    params = estimator.get_params(deep=False)
    assert all(params[name] is value for name, value in sentinels.items())
    extra = sorted(set(vars(estimator)) - set(sentinels))
    assert not extra, f"{cls.__name__}.__init__ sets attributes that are not parameters: {extra}"
