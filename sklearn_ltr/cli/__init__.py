"""The command line: ``python -m sklearn_ltr`` and the console script ``sklearn-ltr``.

Commands (``sklearn-ltr COMMAND --help`` lists every option):

``demo [--quick] [--queries N] [--seed S] [--data DIR] [--no-progress]``
    Train the five rankers (and random and Ridge baselines) on embedded synthetic data, or
    on a LETOR fold directory, and print a table of test NDCG@1/5/10, MAP@10 and fit time.
    The two-tower model trains on clicks simulated from the training labels.
``train --model NAME --train FILE [--valid FILE] [--param KEY=VALUE ...] --out MODEL``
    Train a ranker (``lambdamart``, ``ranknet``, ``dasalc``, ``setrank`` or ``two-tower``)
    on an SVMlight/LETOR or LightGBM file (format detected) and save it as a joblib file
    (``joblib.load`` returns the estimator; skops with a ``.skops`` suffix);
    ``--valid`` for early stopping and a validation NDCG@10. The two-tower model trains on
    clicks: labels 0/1 with positions from the file order or ``--positions FILE``, or
    ``--simulate-clicks N`` sessions per query simulated from graded labels.
``predict --model MODEL --data FILE --out SCORES``
    One score per row of ``FILE``, in file order (``--out -``: standard output).
``evaluate (--model MODEL | --scores FILE) --data FILE [--metrics ndcg@10,map@10,...] [--json]``
    Ranking metrics over the queries of a labelled file.
``compare --data FILE (--model MODEL | --scores FILE) ... [--baseline NAME] [--metrics LIST] [--json] [--report HTML]``
    Paired significance tests (t-test, randomization test, bootstrap interval, Holm or
    Bonferroni correction) of two or more models or scores files against a baseline, and an
    offline HTML report with per-query difference plots.

Every command that reports metrics (``train``, ``evaluate``, ``compare`` and its report,
``demo``) takes ``--empty-queries default|zero|drop`` (queries without a relevant document:
each metric's convention, 0, or left out) and ends with a footnote saying how many there are.
Headers give each data file's own rows, queries and features (its highest feature index); a file
that ends at or below three quarters of the model's features is warned about on standard error.
``train`` prints the settings it trained with; its LambdaMART and RankNet defaults are its own
(``_models.CLI_DEFAULTS``).

User errors (missing or malformed files, unknown parameters, rejected values, feature
mismatches, an output that names an input) print one ``sklearn-ltr: error: ...`` line and
exit with status 2; Ctrl-C exits with status 130 and saves nothing. Output files are written
whole or not at all. Loading a joblib model file unpickles it, which runs code stored in it:
load model files only from sources you trust (a ``.skops`` file loads only sklearn_ltr's own
types).

The modules: ``_main`` (parser, :func:`main`), ``_commands`` (train, predict, evaluate),
``_compare`` (compare), ``_demo``, ``_models`` (the rankers' defaults and training with validation), ``_clicks``
(two-tower click logs), ``_data_files`` (data, positions and scores files, read through
:data:`sklearn_ltr.datasets.FILE_FORMATS`), ``_params`` (``--param``), ``_model_files`` (saved
models), ``_output`` (output files: checked before any work, written atomically), ``_metrics``
(``--metrics``), ``_progress`` (tqdm bars) and ``_errors``.

Examples
--------
>>> from sklearn_ltr.cli import main
>>> main(["--version"])  # doctest: +ELLIPSIS
sklearn-ltr ...
0
"""

from sklearn_ltr.cli._main import main

__all__ = ["main"]
