"""register_loss's checks of its declaration, and get_loss's error for an option a loss does not take."""

import functools

import pytest

from sklearn_ltr.losses import get_loss, pairwise_tensors, ranknet, register_loss, unregister_loss


def _toy(scores, labels, mask=None, *, reduction="mean", weights=None, margin=1.0):
    return ranknet(scores, labels, mask, reduction=reduction, weights=weights)


def test_a_loss_linear_in_the_list_length_declares_0_tensors():
    register_loss("toy_linear", _toy, pairwise_tensors=0)
    try:
        assert pairwise_tensors("toy_linear") == 0
    finally:
        unregister_loss("toy_linear")


@pytest.mark.parametrize("declared", [-1, 1.5, True, "2", None])
def test_a_bad_declaration_is_refused(declared):
    with pytest.raises(TypeError, match=rf"^register_loss\('bad'\): pairwise_tensors must be the number of "
                                        rf"\[list, list\] float32 tensors one list holds .* got {declared!r}\.$"):
        register_loss("bad", _toy, pairwise_tensors=declared)


def test_a_loss_must_be_callable():
    with pytest.raises(TypeError, match=r"^register_loss\('bad'\): the loss must be callable; got str\.$"):
        register_loss("bad", "ranknet", pairwise_tensors=1)


def test_an_unknown_option_names_the_loss_and_what_it_accepts():
    with pytest.raises(TypeError, match=r"^_toy got unexpected option\(s\) \['gamma'\]; it accepts "
                                        r"\['reduction', 'weights', 'margin'\]\.$"):
        get_loss(_toy, gamma=2.0)
    partial = functools.partial(_toy)  # no __name__: named by its repr
    with pytest.raises(TypeError, match=r"^functools\.partial\(<function _toy at 0x[0-9a-f]+>\) got unexpected"):
        get_loss(partial, gamma=2.0)
