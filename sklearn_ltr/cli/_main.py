"""The argument parser of ``sklearn-ltr`` and :func:`main`, which runs one command and maps errors to exit codes."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings

from sklearn_ltr import _threads
from sklearn_ltr.cli._data_files import FORMATS, MISSING_VALUES_OPTION
from sklearn_ltr.cli._errors import CLIError
from sklearn_ltr.cli._metrics import add_empty_queries_option
from sklearn_ltr.cli._propensities import add_click_log_options
from sklearn_ltr.exceptions import TrainingInterruptedWarning

__all__ = ["build_parser", "main"]

_PROG = "sklearn-ltr"

_DESCRIPTION = """\
Learning to rank with scikit-learn's interface, from the command line.

Data files are SVMlight/LETOR ('<label> qid:<id> <index>:<value> ...' per line) or LightGBM
('<label> <index>:<value> ...' per line, query sizes in FILE.query); the format is detected
from the first data line. User errors end with one 'sklearn-ltr: error: ...' line and exit
status 2; Ctrl-C ends with status 130. Output files are written whole or not at all, and never
over an input. A model file is the fitted estimator as joblib saves it (a pickle: loading one
runs code stored in it, so load model files only from sources you trust), or as skops saves it
when its name ends in .skops (loaded only if it holds sklearn_ltr's own types)."""

_EXAMPLES = """\
examples:
  sklearn-ltr demo
  sklearn-ltr train --model lambdamart --train train.txt --valid vali.txt --out model.joblib
  sklearn-ltr predict --model model.joblib --data test.txt --out scores.txt
  sklearn-ltr evaluate --model model.joblib --data test.txt --metrics ndcg@10,map@10
  sklearn-ltr convert train.txt train.ltr"""

_DEMO = """\
Train the rankers on one data set and print a table of test NDCG@1/5/10, MAP@10 and fit
time, beside random scores and pointwise Ridge regression.

Without --data: 600 synthetic web-search-like queries (make_ranking; 40 features, labels
0-4), split by query into 60% train, 15% validation, 25% test; under 3 minutes on 2 CPU
cores (--quick: 150 queries, fewer epochs and trees, well under a minute). With --data DIR:
a LETOR fold (train.txt, test.txt, optional vali.txt). Models early-stop on the validation
queries. TwoTowerDebiasedRanker trains on clicks simulated from the training labels (several
sessions per query, position-based model, examination 1/position) and is scored on the
true test labels, beside RankNetRanker trained on the same clicks without positions.

LambdaMART and RankNet train with train's defaults; DASALC and SetRank with smaller settings than
train's (their constructors' defaults), so that the demo stays short. The table ends with the
settings of every model.
Queries of the test set without a relevant document count as --empty-queries says (a
footnote gives their number)."""

_TRAIN = """\
Train a ranker on a ranking data file and save it, with what predict needs, as a joblib file
(joblib.load returns the estimator; its cli_metadata_ attribute records the training), or as a
skops file when --out ends in .skops.

Neural models get default preprocessing (--preprocessing auto: log1p then standardisation
for ranknet, setrank and two-tower; dasalc has log1p and batch norm built in; lambdamart
needs none), so raw LETOR features work; the saved estimator is then a scikit-learn
Pipeline whose last step, 'ranker', is the ranker. --param sets the ranker's constructor
parameters (see its docstring, e.g. python -c "help('sklearn_ltr.RankNetRanker')").

Rankers train with their constructor's defaults (see their docstrings) except where the
command line has its own, chosen on five LETOR folds of MQ2008 and OHSUMED: lambdamart
n_estimators=300, learning_rate=0.02, num_leaves=15 (LightGBM's learning rate 0.1 stopped after
a few trees on them) and eval_at=(10,) (the NDCG@10 it reports and early-stops on; the class
monitors NDCG@1, 3, 5 and 10), ranknet lr=0.002, max_epochs=30. After training, a 'settings:'
line shows every parameter that differs from the constructor's defaults, as a Python call of
the ranker.

With --valid, the validation file's NDCG@10 is reported, and used for early stopping:
lambdamart stops after early_stopping_rounds (default 50) rounds without improvement;
neural models after n_iter_no_change (default 5) epochs, restoring the best epoch.
The reported NDCG@10 counts queries without a relevant document as --empty-queries says
(default 1, LightGBM's convention), with a footnote saying how many there are; early stopping
does not depend on it (such queries add the same amount to every round's NDCG).

The header gives each file's own rows, queries and features (its highest feature index); a
sparse file that ends before the other is padded with zeros, and one that ends far below it
(at or below three quarters of its features) is warned about.

two-tower learns relevance from clicks: the training labels must be clicks (0/1), each
query's rows in the order they were shown (the display position of a row is its 1-based
rank within its query in the file), or --positions FILE gives the positions. For
experiments, --simulate-clicks N turns graded labels into N simulated sessions per query."""

_TRAIN_EXAMPLES = """\
examples:
  sklearn-ltr train --model lambdamart --train train.txt --valid vali.txt \\
      --param n_estimators=500 --param learning_rate=0.05 --out lambdamart.joblib
  sklearn-ltr train --model ranknet --train train.txt --param "hidden_sizes=(128, 64)" \\
      --param loss=softmax --param max_epochs=40 --out ranknet.joblib
  sklearn-ltr train --model two-tower --train clicks.txt --positions clicks.pos --out tt.joblib
  sklearn-ltr train --model two-tower --train train.txt --simulate-clicks 10 --out tt.joblib"""

_PREDICT = """\
Score every row of a data file with a model saved by train: one score per line, in the
file's row order (--out - writes to standard output). A higher score ranks higher within
its query. The file may have fewer features than the training file (sparse files omit
trailing zeros) but not more. Models that score a row within its list (dasalc, setrank)
need the query ids; the others can score LightGBM files without a .query file. NaN scores are
refused, and --out must not be the model or the data file. A ranker (or Pipeline) saved from
Python with joblib.dump, or skops.io.dump to a .skops file, is a model file too. A file whose
highest feature index is at most three quarters of the model's features gets a one-line
warning (naming both): is it truncated, or of another feature set?

Loading a model file unpickles it, which runs code stored in the file: load model files only
from sources you trust. A .skops file loads only if it holds no types but sklearn_ltr's own and
skops's trusted defaults."""

_EVALUATE = """\
Ranking metrics, averaged over the queries of a labelled data file, of a model saved by
train (--model) or of scores from any ranker (--scores FILE, one per row in file order,
e.g. written by predict). Metrics (--metrics, comma-separated, case-insensitive):
ndcg[@k], dcg[@k], map[@k], precision@k (p@k), mrr[@k], err[@k], and on a click log
ips_dcg[@k], ips_ndcg[@k] (see below). NDCG uses the
exponential gain 2**label - 1; NDCG and MAP score a query without a relevant document 1
(LightGBM's convention), the other metrics 0, unless --empty-queries says zero (0 in every
metric) or drop (left out); a footnote says how many such queries there are. Tied scores
share their gain in NDCG and DCG, and are ranked in file order by the other metrics.

On a click log (labels 1 clicked, 0 shown and not clicked), --propensities FILE (one
examination propensity per row) or --propensity-curve FILE (one per display position, with
--positions FILE or the rows' order within their queries) give each row's propensity, and the
counterfactual metrics estimate DCG and NDCG without relevance labels: ips_dcg weights each
click by 1 / max(propensity, --clip) (unbiased for the DCG of binary relevance when the
propensities are right), ips_ndcg divides it by the same sum in the ideal order of the weighted
clicks (self-normalised). A query without a click counts as a query without a relevant document.

The header gives the file's own rows, queries and features (its highest feature index, and
the model's count when it is padded to it); a file that ends at or below three quarters of
the model's features is warned about on standard error.

Loading a model file (--model) unpickles it, which runs code stored in the file: load model
files only from sources you trust."""


_CONVERT = """\
Convert a ranking data file to the on-disk layout: a folder of NumPy files (float32
features, labels, query ids; each query's rows together) that train, predict and evaluate
read memory-mapped, so that training data larger than memory trains batch by batch and the
processes of a torchrun job share one copy of it in the page cache. The conversion streams:
two passes over the file in blocks of lines, whatever its size. The folder is built beside
FOLDER and renamed into place only when complete: a failed conversion leaves nothing."""

#: Help of every option that loads a model file.
_MODEL_HELP = ("model file saved by train, or a fitted ranker saved with joblib.dump (or skops, .skops). Loading a "
               "joblib file unpickles it, which runs code stored in the file: load model files only from sources "
               "you trust")


def _formatter(prog):
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


def _add_missing_values(parser):
    parser.add_argument("--missing-values", default=MISSING_VALUES_OPTION, metavar="TOKENS",
                        help="comma-separated value tokens of the data files read as a missing value (NaN), e.g. "
                             "NULL,NA (default NULL, as LETOR 4.0 writes them; '' reads numbers only)")


def _add_common(parser, *, data_format=True):
    if data_format:
        parser.add_argument("--format", choices=("auto", *FORMATS), default="auto",
                            help="format of the data files: 'auto' (default) reads 'qid:' on the first data line as "
                                 "SVMlight/LETOR, else LightGBM with query sizes in FILE.query")
        _add_missing_values(parser)
    parser.add_argument("--traceback", action="store_true",
                        help="on an error, show the Python traceback instead of the one-line message")


def _add_threads(parser, default, default_text):
    parser.add_argument("--threads", type=int, default=default, metavar="N",
                        help=f"CPU threads of torch and LightGBM ({default_text})")


def _add_progress(parser):
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bars on standard error (default: when standard error is a terminal)")


def build_parser():
    """The :class:`argparse.ArgumentParser` of ``sklearn-ltr`` with its commands."""
    from sklearn_ltr import __version__
    from sklearn_ltr.cli._models import IMPUTE_STRATEGIES, MODELS, PREPROCESSING

    parser = argparse.ArgumentParser(prog=_PROG, description=_DESCRIPTION, epilog=_EXAMPLES, formatter_class=_formatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND", required=True,
                                     help="'sklearn-ltr COMMAND --help' describes each")

    demo = commands.add_parser("demo", help="train every ranker on embedded data (or a LETOR fold) and compare them",
                               description=_DEMO, formatter_class=_formatter)
    demo.add_argument("--data", metavar="DIR", help="a LETOR fold directory instead of the synthetic data")
    _add_missing_values(demo)
    demo.add_argument("--queries", type=int, metavar="N", help="number of synthetic queries (default 600; 150 quick)")
    demo.add_argument("--quick", action="store_true", help="fewer queries, epochs and trees: a smoke run")
    demo.add_argument("--seed", type=int, default=0, help="seed of the data, its split, the clicks and the models "
                                                           "(default 0)")
    add_empty_queries_option(demo)
    _add_threads(demo, 1, "default 1: the demo's models are small, and one thread is fastest on a shared CPU")
    _add_progress(demo)
    _add_common(demo, data_format=False)

    train = commands.add_parser("train", help="train a ranker on a ranking data file and save it", description=_TRAIN,
                                epilog=_TRAIN_EXAMPLES, formatter_class=_formatter)
    train.add_argument("--model", required=True, choices=list(MODELS), help="the ranker to train")
    train.add_argument("--train", required=True, metavar="FILE", help="training data file")
    train.add_argument("--valid", metavar="FILE", help="validation data file: early stopping, and its NDCG@10 "
                                                       "reported")
    train.add_argument("--out", required=True, metavar="MODEL",
                       help="where to save the model (joblib file, skops if MODEL ends in .skops; written whole or "
                            "not at all, never over an input file); its folder must exist and be writable")
    train.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                       help="a ranker parameter, repeatable; VALUE is a Python literal (0.05, '(64, 32)', None, "
                            "true), else a string (softmax)")
    train.add_argument("--preprocessing", choices=("auto", *PREPROCESSING), default="auto",
                       help="feature transform before the ranker (default auto: see above); the impute choices fill "
                            "missing values first")
    train.add_argument("--impute-strategy", default="mean", metavar="STRATEGY",
                       help=f"how the impute choices fill a missing value: {', '.join(IMPUTE_STRATEGIES)} (default "
                            f"mean: the feature's mean over the training rows)")
    train.add_argument("--no-early-stopping", action="store_true",
                       help="with --valid, only report its NDCG@10; train for the full budget")
    train.add_argument("--seed", type=int, default=0, help="random_state of the ranker and of the click simulation "
                                                            "(default 0; --param random_state overrides it)")
    add_empty_queries_option(train)
    clicks = train.add_argument_group("two-tower clicks")
    clicks.add_argument("--positions", metavar="FILE",
                        help="display position (1-based rank) of every training row, one per line")
    clicks.add_argument("--simulate-clicks", type=int, metavar="N",
                        help="simulate N sessions of clicks per query from graded labels (for experiments)")
    clicks.add_argument("--logging-quality", type=float, default=1.0, metavar="W",
                        help="with --simulate-clicks: weight of the label in the logging ranking, 1 sorts by "
                             "relevance, 0 shuffles (default 1)")
    clicks.add_argument("--click-model", choices=("pbm", "cascade", "dcm", "dbn", "ubm"), metavar="MODEL",
                        help="with --simulate-clicks: the click model, pbm (position-based, the default), cascade, dcm "
                             "(dependent click model), dbn (dynamic Bayesian network) or ubm (user browsing model)")
    clicks.add_argument("--eta", type=float, metavar="ETA",
                        help="with --simulate-clicks and --click-model pbm or ubm: position-bias severity, "
                             "examination (1/position)**ETA (default 1)")
    _add_threads(train, None, "default: the libraries' own, all cores; --param n_jobs overrides it for lambdamart")
    _add_progress(train)
    _add_common(train)

    predict = commands.add_parser("predict", help="score every row of a data file with a saved model",
                                  description=_PREDICT, formatter_class=_formatter)
    predict.add_argument("--model", required=True, metavar="MODEL", help=_MODEL_HELP)
    predict.add_argument("--data", required=True, metavar="FILE", help="data file to score (labels are ignored)")
    predict.add_argument("--out", required=True, metavar="SCORES",
                         help="scores file (written whole or not at all, never over --model or --data), or - for "
                              "standard output")
    _add_common(predict)

    evaluate = commands.add_parser("evaluate", help="ranking metrics of a saved model (or scores) on a labelled file",
                                   description=_EVALUATE, formatter_class=_formatter)
    source = evaluate.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", metavar="MODEL", help=_MODEL_HELP)
    source.add_argument("--scores", metavar="FILE", help="scores, one per row of --data (e.g. from predict)")
    evaluate.add_argument("--data", required=True, metavar="FILE", help="labelled data file")
    evaluate.add_argument("--metrics", metavar="LIST",
                          help="comma-separated metrics (default ndcg@1,ndcg@5,ndcg@10,map@10; on a click log "
                               "ips_dcg@10,ips_ndcg@10)")
    add_empty_queries_option(evaluate)
    add_click_log_options(evaluate)
    evaluate.add_argument("--json", action="store_true", help="print the results as JSON")
    _add_common(evaluate)

    convert = commands.add_parser("convert", help="convert a data file to the on-disk layout that training "
                                                  "memory-maps", description=_CONVERT, formatter_class=_formatter)
    convert.add_argument("source", metavar="FILE", help="SVMlight/LETOR or LightGBM data file (.gz, .bz2 too)")
    convert.add_argument("target", metavar="FOLDER", help="the layout folder to write (conventionally *.ltr)")
    convert.add_argument("--n-features", type=int, metavar="N",
                         help="columns to store (default: the file's highest feature index)")
    convert.add_argument("--overwrite", action="store_true", help="replace an existing FOLDER once the new one is "
                                                                  "complete")
    _add_common(convert)

    # sklearn-ltr compare: its parser and its code live in cli/_compare.py.
    from sklearn_ltr.cli import _compare

    _compare.add_parser(commands, formatter=_formatter, model_help=_MODEL_HELP, add_common=_add_common)
    # sklearn-ltr export: its parser and its code live in cli/_export.py.
    from sklearn_ltr.cli import _export

    _export.add_parser(commands, formatter=_formatter, model_help=_MODEL_HELP, add_common=_add_common)
    return parser


@contextlib.contextmanager
def _torch_threads(n):
    """Run with ``n`` torch threads (all when None), restoring the previous number afterwards."""
    import torch

    if n is not None and n < 1:
        raise CLIError(f"--threads must be a positive integer; got {n}.")
    most = max(64, 4 * (os.cpu_count() or 1))  # OpenMP aborts the process when asked for far too many threads
    if n is not None and n > most:
        raise CLIError(f"--threads {n} is far more than this machine's {os.cpu_count()} CPU cores; give at most "
                       f"{most} (more threads than cores only slow training down).")
    before = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _run(args):
    from sklearn_ltr.cli import _commands, _demo

    seed = getattr(args, "seed", None)
    if seed is not None and not 0 <= seed < 2**32:
        raise CLIError(f"--seed must be an integer from 0 to 2**32 - 1 = {2**32 - 1}; got {seed}.")
    # Idle OpenMP threads sleep instead of spinning, unless the user chose: the library's one
    # default (already applied when the package was imported; applying it again changes nothing).
    _threads.apply_openmp_default()
    # A neural ranker's fit catches Ctrl-C, keeps the partly trained model and warns: here the
    # warning is raised as an error, so that Ctrl-C ends the command (status 130, nothing saved).
    with _torch_threads(getattr(args, "threads", None)), warnings.catch_warnings():
        warnings.simplefilter("error", TrainingInterruptedWarning)
        if args.command == "demo":
            _demo.run_demo(data_dir=args.data, n_queries=args.queries, quick=args.quick, seed=args.seed,
                           progress=args.progress, threads=args.threads, empty_queries=args.empty_queries,
                           missing_values=args.missing_values)
            return 0
        if args.command == "compare":  # cli/_compare.py
            from sklearn_ltr.cli._compare import compare

            return compare(args)
        if args.command == "export":  # cli/_export.py
            from sklearn_ltr.cli._export import export_model

            return export_model(args)
        return getattr(_commands, args.command)(args)


def main(argv=None):
    """Run ``sklearn-ltr``; the entry point of ``python -m sklearn_ltr`` and of the console script.

    Parameters
    ----------
    argv : list of str, default=None
        The arguments after the program name; None reads ``sys.argv[1:]``.

    Returns
    -------
    status : int
        0 on success; 2 on a usage error or any other user error (a missing or unreadable
        file, an unknown parameter, a parameter value the ranker rejects, an output that
        would overwrite an input, ...), after one ``sklearn-ltr: error: ...`` line on
        standard error; 130 when interrupted (Ctrl-C, also during a neural ranker's
        training: nothing is saved); 141 when standard output is closed early (``| head``).
        ``--help`` and ``--version`` return 0.

    Notes
    -----
    Before running a command, ``main`` applies the library's OpenMP default, the function
    ``import sklearn_ltr`` applies: ``OMP_WAIT_POLICY=PASSIVE`` in the process environment
    unless the user set ``OMP_WAIT_POLICY``, ``GOMP_SPINCOUNT`` or ``KMP_BLOCKTIME``. LightGBM
    and torch, loaded on first use, then let idle OpenMP threads sleep rather than spin, which
    on a small or busy machine makes training many times faster (see the README). torch's
    thread count (``--threads``) is restored when the command ends.

    Examples
    --------
    Train LambdaMART on a small SVMlight file, score it, and evaluate the saved model:

    >>> import tempfile
    >>> from pathlib import Path
    >>> from sklearn_ltr.cli import main
    >>> from sklearn_ltr.datasets import dump_svmlight_ranking, make_ranking
    >>> X, y, qid = make_ranking(n_queries=30, n_features=5, random_state=0)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     data, model, scores = (str(Path(tmp, name)) for name in ("train.txt", "m.joblib", "s.txt"))
    ...     dump_svmlight_ranking(X, y, qid, data)
    ...     trained = main(["train", "--model", "lambdamart", "--train", data, "--out", model,
    ...                     "--param", "n_estimators=10", "--threads", "1"])
    ...     predicted = main(["predict", "--model", model, "--data", data, "--out", scores])
    ...     n_scores = len(Path(scores).read_text().splitlines())
    ...     evaluated = main(["evaluate", "--model", model, "--data", data, "--metrics", "ndcg@10"])
    train ... rows, 30 queries, 5 features
    trained lambdamart (LambdaMARTRanker) in ... s (rounds 10)
    settings: LambdaMARTRanker(eval_at=(10,), learning_rate=0.02, n_estimators=10, n_jobs=1, num_leaves=15, ...
    NDCG@10: train 0...
    saved model to ...
    ...
    NDCG@10  0...
    >>> trained, predicted, evaluated, n_scores == len(y)
    (0, 0, 0, True)

    A user error is one line on standard error and status 2:

    >>> main(["predict", "--model", "missing.joblib", "--data", "x.txt", "--out", "-"])
    2
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, --version, or a usage error (already printed by argparse)
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 2)
    try:
        return _run(args)
    except CLIError as err:
        if args.traceback:
            raise
        print(f"{_PROG}: error: {' '.join(str(err).split())}", file=sys.stderr)  # always one line
        return 2
    except (KeyboardInterrupt, TrainingInterruptedWarning):
        print(f"{_PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of standard output went away (``| head``): stop quietly, as SIGPIPE does
        # Point standard output at /dev/null, so that Python's flush at exit prints no "Exception ignored".
        with contextlib.suppress(OSError, ValueError, AttributeError):  # not a real file (a test's capture)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
