"""Ranking data: LETOR/SVMlight and LightGBM file formats, synthetic data, click simulation."""

from sklearn_ltr.datasets._clicks import click_probability, observation_propensity, simulate_clicks
from sklearn_ltr.datasets._dask_formats import read_svmlight_ranking_dask
from sklearn_ltr.datasets._formats import (
    dump_lightgbm_ranking,
    dump_svmlight_ranking,
    load_lightgbm_ranking,
    load_svmlight_ranking,
)
from sklearn_ltr.datasets._synthetic import make_ranking

__all__ = [
    "click_probability",
    "dump_lightgbm_ranking",
    "dump_svmlight_ranking",
    "load_lightgbm_ranking",
    "load_svmlight_ranking",
    "make_ranking",
    "observation_propensity",
    "read_svmlight_ranking_dask",
    "simulate_clicks",
]
