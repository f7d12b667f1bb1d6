"""Ranking data: LETOR/SVMlight and LightGBM file formats, synthetic data, click simulation.

The click simulation (:func:`simulate_clicks`, :func:`observation_propensity`, :func:`click_probability`)
lives in :mod:`sklearn_ltr.clicks` and is exported here too.

:data:`FILE_FORMATS` is the registry of file formats, by name: each :class:`FileFormat` holds its
reader, writer, file name suffixes and description. :func:`read_ranking_file` reads a file of any
of them, picking the format by name, else by its first data line or its suffix.

Examples
--------
>>> from sklearn_ltr.datasets import FILE_FORMATS
>>> sorted(FILE_FORMATS)
['lightgbm', 'svmlight']
>>> FILE_FORMATS["svmlight"].reader.__name__, FILE_FORMATS["lightgbm"].writer.__name__
('load_svmlight_ranking', 'dump_lightgbm_ranking')
"""

from sklearn_ltr.clicks import click_probability, observation_propensity, simulate_clicks
from sklearn_ltr.datasets import _file_formats
from sklearn_ltr.datasets._dask_formats import read_svmlight_ranking_dask
from sklearn_ltr.datasets._disk import (
    convert_ranking,
    is_ranking_layout,
    load_ranking_layout,
    write_ranking_layout,
)
from sklearn_ltr.datasets._file_formats import FileFormat, detect_file_format, read_ranking_file
from sklearn_ltr.datasets._formats import (
    dump_lightgbm_ranking,
    dump_svmlight_ranking,
    load_lightgbm_ranking,
    load_svmlight_ranking,
)
from sklearn_ltr.datasets._missing import check_missing_values
from sklearn_ltr.datasets._synthetic import make_ranking
from sklearn_ltr.datasets._text_lines import data_lines

#: Mapping: the registry of file formats, a read-only view of name -> :class:`FileFormat`
#: (``"svmlight"``, ``"lightgbm"``); :func:`read_ranking_file` and the command line read it.
FILE_FORMATS = _file_formats.FILE_FORMATS

__all__ = [
    "FILE_FORMATS",
    "FileFormat",
    "check_missing_values",
    "click_probability",
    "convert_ranking",
    "data_lines",
    "detect_file_format",
    "dump_lightgbm_ranking",
    "dump_svmlight_ranking",
    "is_ranking_layout",
    "load_lightgbm_ranking",
    "load_ranking_layout",
    "load_svmlight_ranking",
    "make_ranking",
    "observation_propensity",
    "read_ranking_file",
    "read_svmlight_ranking_dask",
    "simulate_clicks",
    "write_ranking_layout",
]
