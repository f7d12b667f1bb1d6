"""The command line's messages for unreadable files, by hand (each function called directly)."""

from __future__ import annotations

import builtins
import errno

import numpy as np
import pytest

from sklearn_ltr.cli._data_files import _short, input_error
from sklearn_ltr.cli._errors import CLIError
from sklearn_ltr.cli._model_files import _skops_io


def test_an_os_error_names_its_own_file_and_reason():
    err = FileNotFoundError(errno.ENOENT, "No such file or directory", "data/train.txt.query")
    message = input_error("data/train.txt", err)
    assert isinstance(message, CLIError)
    assert str(message) == "cannot read data file 'data/train.txt.query': No such file or directory."


def test_an_os_error_without_a_file_names_the_path():
    assert str(input_error("t.txt", OSError("disk on fire"), what="scores file")) == (
        "cannot read scores file 't.txt': disk on fire.")


def test_a_value_error_that_names_the_file_is_kept_with_one_full_stop():
    assert str(input_error("t.txt", ValueError("t.txt, line 3: bad label 'x'..."))) == "t.txt, line 3: bad label 'x'."
    assert str(input_error("t.txt", ValueError("bad label"))) == "cannot read data file 't.txt': bad label."
    assert str(input_error("t.txt", ValueError(".bad."))) == "cannot read data file 't.txt': .bad."


def test_other_errors_name_their_type():
    assert str(input_error("m.bin", EOFError("ran out of input"), what="model file")) == (
        "cannot read model file 'm.bin': EOFError: ran out of input.")


@pytest.mark.parametrize(("text", "shown"),
                         [("", "''"), ("x" * 30, repr("x" * 30)), ("x" * 31, repr("x" * 30 + "..."))])
def test_long_fields_are_cut_at_30_characters(text, shown):
    assert _short(text) == shown


def test_a_skops_file_without_skops_says_what_to_install(monkeypatch):
    real_import = builtins.__import__

    def no_skops(name, *args, **kwargs):
        if name.startswith("skops"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_skops)
    with pytest.raises(CLIError) as error:
        _skops_io("model.skops")
    assert str(error.value) == ("'model.skops' is a skops file (.skops); reading and writing those needs skops: "
                                "pip install 'sklearn-ltr[serving]'.")
    # Saving says the same, naming the file to be written.
    from sklearn_ltr import LambdaMARTRanker
    from sklearn_ltr.cli._model_files import save_model

    with pytest.raises(CLIError) as error:
        save_model("out/model.skops", LambdaMARTRanker())
    assert str(error.value).startswith("'out/model.skops' is a skops file (.skops)")


@pytest.fixture
def dev_full():
    """``/dev/full``, a device whose writes fail with ENOSPC (Linux); the test skips elsewhere."""
    import os

    if not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full (Linux), a device whose writes fail with ENOSPC")
    return "/dev/full"


def test_a_failed_write_to_a_device_says_so_without_promising_a_previous_file(dev_full):
    from sklearn_ltr.cli._output import write_scores

    with pytest.raises(CLIError) as error:
        write_scores(dev_full, [0.5, 0.25])
    assert str(error.value) == "cannot write scores file '/dev/full': No space left on device."


def test_a_failed_write_to_a_file_keeps_the_previous_one(monkeypatch, tmp_path):
    from sklearn_ltr import _atomic
    from sklearn_ltr.cli import _output

    def full_disk(path, write):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_atomic, "write_atomically", full_disk)
    path = str(tmp_path / "scores.txt")
    with pytest.raises(CLIError) as error:
        _output.write_scores(path, [0.5])
    assert str(error.value) == (f"cannot write scores file {path!r}: No space left on device; nothing was written "
                                "(a previous file is left as it was).")


def test_integer_scores_are_written_as_floats(tmp_path):
    from sklearn_ltr.cli._output import write_scores

    write_scores(str(tmp_path / "s.txt"), np.array([1, -2, 3]))
    assert (tmp_path / "s.txt").read_text() == "1.0\n-2.0\n3.0\n"


def test_the_temporary_file_sits_beside_the_target_hidden(tmp_path):
    # Beside the target, so that os.replace stays on one file system (atomic) and a crash leaves
    # the fragment where the user looks, as a hidden ".<name>.*.tmp".
    import os

    from sklearn_ltr._atomic import write_atomically

    seen = []

    def write(f):
        seen.append(f.name)
        f.write(b"new")

    write_atomically(tmp_path / "model.bin", write)
    (name,) = seen
    assert os.path.dirname(name) == str(tmp_path)
    assert os.path.basename(name).startswith(".model.bin.") and name.endswith(".tmp")
    assert (tmp_path / "model.bin").read_bytes() == b"new" and not os.path.exists(name)


def test_standard_output_needs_no_check_of_the_file_system(monkeypatch):
    from sklearn_ltr.cli import _output

    def no_file(*args, **kwargs):
        raise AssertionError("check_output_path('-') must not create a file")

    monkeypatch.setattr(_output.tempfile, "NamedTemporaryFile", no_file)
    assert _output.check_output_path("-") is None


def test_check_output_path_names_the_output_file_and_out_by_default(tmp_path):
    from sklearn_ltr.cli._output import check_output_path

    with pytest.raises(CLIError) as error:
        check_output_path("")
    assert str(error.value) == "--out is empty; give a file name for the output file."
    with pytest.raises(CLIError) as error:
        check_output_path(str(tmp_path))
    assert str(error.value) == f"--out {str(tmp_path)!r} is a directory; give a file name for the output file."


def test_the_output_probe_is_a_hidden_temporary_like_the_atomic_write(tmp_path, monkeypatch):
    # The probe is named as write_atomically's temporary (".<name>.<random>.tmp" beside the target),
    # so a run killed between the two leaves the same kind of hidden file, never a visible one.
    import os

    from sklearn_ltr.cli import _output

    seen = []
    real = _output.tempfile.NamedTemporaryFile

    def spy(*args, **kwargs):
        handle = real(*args, **kwargs)
        seen.append(handle.name)
        return handle

    monkeypatch.setattr(_output.tempfile, "NamedTemporaryFile", spy)
    assert _output.check_output_path(str(tmp_path / "scores.txt")) is None
    (name,) = seen
    assert os.path.dirname(name) == str(tmp_path)
    assert os.path.basename(name).startswith(".scores.txt.") and name.endswith(".tmp")
    assert os.listdir(tmp_path) == []  # removed at once, and the target not created


# ---------------------------------------------------------------- positions and scores files


def _rows(tmp_path, text, n_rows, name="ranks.txt", **kwargs):
    from sklearn_ltr.cli._data_files import read_rows_of_numbers

    path = tmp_path / name
    path.write_text(text)
    return read_rows_of_numbers(str(path), n_rows, what="positions file", **kwargs), str(path)


def test_ranks_are_read_as_int64_and_scores_as_float64(tmp_path):
    ranks, _ = _rows(tmp_path, "# rank per row\n1\n\n200\n3.0\n", 3, integer=True)
    assert ranks.dtype == np.int64 and ranks.tolist() == [1, 200, 3]  # 200: any rank below 2**63
    scores, _ = _rows(tmp_path, "1\n-2.5\n3\n", 3)
    assert scores.dtype == np.float64 and scores.tolist() == [1.0, -2.5, 3.0]


@pytest.mark.parametrize(("text", "integer", "reason"), [
    ("1\n2 3\n", False, "expected one number per line, got 2 fields."),
    ("1\nabc\n", False, "'abc' is not a number."),
    ("1\ninf\n", False, "'inf' is not a finite number."),
    ("1\n9223372036854775808\n", True, "'9223372036854775808' is not a 1-based rank (1, 2, 3, ...)."),
    ("1\n0\n", True, "'0' is not a 1-based rank (1, 2, 3, ...)."),
    ("1\n2.5\n", True, "'2.5' is not a 1-based rank (1, 2, 3, ...)."),
])
def test_a_bad_line_is_named_with_the_file_and_its_number(tmp_path, text, integer, reason):
    path = tmp_path / "ranks.txt"
    with pytest.raises(CLIError) as error:
        _rows(tmp_path, text, 2, integer=integer)
    assert str(error.value) == f"positions file {str(path)!r}, line 2: {reason}"


def test_a_count_that_differs_from_the_data_file_is_named(tmp_path):
    with pytest.raises(CLIError) as error:
        _rows(tmp_path, "1\n2\n", 3)
    path = str(tmp_path / "ranks.txt")
    assert str(error.value) == (f"positions file {path!r} has 2 values, but the data file has 3 rows; give one per "
                                f"row, in the data file's order.")


def test_a_missing_or_unreadable_positions_file_is_named(tmp_path, monkeypatch):
    from sklearn_ltr.cli import _data_files
    from sklearn_ltr.cli._data_files import read_rows_of_numbers

    missing = str(tmp_path / "none.txt")
    with pytest.raises(CLIError) as error:
        read_rows_of_numbers(missing, 1, what="positions file")
    assert str(error.value) == f"positions file {missing!r} does not exist."
    # A .gz file that does not decompress: the reader's message under the file's name.
    corrupt = tmp_path / "ranks.txt.gz"
    corrupt.write_bytes(b"not gzip at all")
    with pytest.raises(CLIError) as error:
        read_rows_of_numbers(str(corrupt), 1, what="positions file")
    assert str(error.value).startswith(f"cannot read positions file {str(corrupt)!r}: ")
    assert "gzip" in str(error.value).lower()

    def failing(path):
        raise OSError(errno.EIO, "Input/output error")
        yield

    monkeypatch.setattr(_data_files, "data_lines", failing)
    with pytest.raises(CLIError) as error:
        _rows(tmp_path, "1\n", 1)
    assert str(error.value) == f"cannot read positions file {str(tmp_path / 'ranks.txt')!r}: Input/output error."


def test_a_skops_model_file_that_cannot_be_written_says_so(tmp_path, dev_full):
    pytest.importorskip("skops", reason="skops files need the serving extra")
    from sklearn_ltr import LambdaMARTRanker
    from sklearn_ltr.cli._model_files import save_model

    X, y = np.random.default_rng(0).normal(size=(20, 2)), np.arange(20) % 3
    ranker = LambdaMARTRanker(n_estimators=2, n_jobs=1).fit(X, y, groups=np.repeat([0, 1], 10))
    # A device path has no suffix: name it .skops through a link, as a user's model path would.
    link = tmp_path / "model.skops"
    link.symlink_to(dev_full)
    with pytest.raises(CLIError) as error:
        save_model(str(link), ranker)
    assert str(error.value) == f"cannot write model file {str(link)!r}: No space left on device."


def test_a_skops_file_refuses_untrusted_types_and_names_them(tmp_path, monkeypatch):
    pytest.importorskip("skops", reason="skops files need the serving extra")
    from sklearn_ltr import LambdaMARTRanker
    from sklearn_ltr.cli import _model_files

    monkeypatch.setattr(_model_files, "_not_trusted", lambda sio, data=None, file=None: ["a.B", "c.D"])
    with pytest.raises(CLIError) as error:
        _model_files.save_model(str(tmp_path / "m.skops"), LambdaMARTRanker())
    assert str(error.value) == (
        f"cannot save the model as a skops file {str(tmp_path / 'm.skops')!r}: it references types that skops files "
        f"of sklearn_ltr models do not trust (a.B, c.D; keep_training_state=True keeps some). Save it as a joblib "
        f"file (another suffix) instead.")
    assert not (tmp_path / "m.skops").exists()
