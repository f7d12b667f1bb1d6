"""Elastic restarts: under torchrun --max-restarts 1, a gloo worker killed mid-epoch costs no more than its epoch."""

import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

# One torchrun job runs the uninterrupted two-process fit (the reference), then the same fit with a
# checkpoint, in which rank 1 kills itself with SIGKILL in the middle of epoch 3. The launcher then
# restarts both workers; the script skips the reference it already saved and the fit resumes from
# the checkpoint of epoch 2 (rank 0 wrote it, both ranks read it).
_SCRIPT = """
import os, signal, sys
import numpy as np, torch, torch.distributed as dist
from skorch.callbacks import Callback
from sklearn_ltr import DASALCRanker
from sklearn_ltr.datasets import make_ranking

torch.set_num_threads(1)
out = sys.argv[1]


class KillRank1(Callback):
    def __init__(self, epoch, batch):
        self.epoch, self.batch = epoch, batch

    def on_epoch_begin(self, net, **kwargs):
        self.seen_ = 0

    def on_batch_end(self, net, training=False, **kwargs):
        self.seen_ += training
        marker = os.path.join(out, "killed")
        if (os.environ.get("KILL") and dist.get_rank() == 1 and not os.path.exists(marker)
                and len(net.history) == self.epoch and self.seen_ == self.batch):
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)


X, y, qid = make_ranking(n_queries=21, n_features=6, shuffle=True, random_state=3)
X = X.astype(np.float32)
params = dict(optimizer="sgd", lr=0.05, hidden_size=16, n_layers=1, n_attention_layers=1, n_heads=2, head_size=4,
              dropout=0.1, attention_dropout=0.0, noise_std=0.1, batch_size=8, max_epochs=5, device="cpu",
              random_state=0, distributed=True, callbacks=[KillRank1(3, 1)])
generation = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
reference = os.path.join(out, "reference.npy")
if not os.path.exists(reference):
    scores = DASALCRanker(**params).fit(X, y, groups=qid).predict(X, groups=qid)
    if dist.get_rank() == 0:
        np.save(reference, scores)
    dist.barrier()
os.environ["KILL"] = "1"
ranker = DASALCRanker(**params, checkpoint_dir=os.path.join(out, "checkpoint")).fit(X, y, groups=qid)
np.save(os.path.join(out, f"resumed{dist.get_rank()}.npy"), ranker.predict(X, groups=qid))
np.save(os.path.join(out, f"epochs{dist.get_rank()}.npy"), [row["epoch"] for row in ranker.history_])
with open(os.path.join(out, f"generation{dist.get_rank()}"), "w") as f:
    f.write(generation)
"""


# What a process binding a port another process holds reports (errno EADDRINUSE), in torch's words
# ("name: EADDRINUSE, message: address already in use") as in Python's ("[Errno 98] Address already in use").
PORT_CLASH = "address already in use"


def run_once_more_on_port_clash(make_command, directory, **kwargs):
    """Run ``make_command(folder)`` in a new folder of ``directory``; once more, in another, after a port clash.

    With its store unshared, torchrun picks the workers' store port by binding port 0 and closing it, and hands
    the port to rank 0, which binds it again seconds later (a worker's start): any process of the machine can
    take the port in between (``torch.distributed.elastic.utils.distributed.get_free_port`` says so). Only
    that failure, recognised by its error, is run again; any other failure is returned as it is.

    Returns
    -------
    result : subprocess.CompletedProcess
        The last run.
    folder : pathlib.Path
        Its folder.
    """
    for attempt in range(2):
        folder = directory / f"run{attempt}"
        folder.mkdir()
        result = subprocess.run(make_command(folder), capture_output=True, text=True, **kwargs)
        if result.returncode == 0 or PORT_CLASH not in result.stderr.lower():
            break
    return result, folder


@pytest.mark.slow
def test_torchrun_restarts_a_killed_worker_and_ends_with_the_uninterrupted_model(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(_SCRIPT))

    def command(out):
        return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                "--max-restarts=1", "--monitor-interval=0.2", str(script), str(out)]

    # torchrun shares its rendezvous store with the workers' process group by default, and a restarted
    # group can then read the previous generation's keys and hang in init_process_group (pytorch/pytorch
    # issue 135712; here 2 runs of 3 hung): the docs tell users to set this too.
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(sys.path),
           "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}
    # The timeout only stops a hang: the job takes about a minute on two loaded cores (three interpreters
    # start one after the other), several times that under heavy load, and a slow run is no failure.
    result, out = run_once_more_on_port_clash(command, tmp_path, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (out / "killed").exists(), "rank 1 was never killed: weak test"
    reference = np.load(out / "reference.npy")
    for rank in range(2):
        assert (out / f"generation{rank}").read_text() == "1", "the job ended without a restart"
        # Exactly: the same processes and reduction order as the uninterrupted job.
        np.testing.assert_array_equal(np.load(out / f"resumed{rank}.npy"), reference)
        assert np.load(out / f"epochs{rank}.npy").tolist() == [1, 2, 3, 4, 5]


def _bind(port, folder):
    """A command that binds ``port`` on the loopback address (a clash if a socket holds it), then marks ``folder``."""
    code = f"import socket; socket.socket().bind(('127.0.0.1', {port})); open({str(folder / 'ran')!r}, 'w').close()"
    return [sys.executable, "-c", code]


def test_a_port_clash_runs_once_more_in_a_fresh_folder(tmp_path):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        # The first run binds the held port (a real clash), the second any free one.
        result, folder = run_once_more_on_port_clash(
            lambda folder: _bind(port if folder.name == "run0" else 0, folder), tmp_path, timeout=60)
    assert result.returncode == 0, result.stderr
    assert folder == tmp_path / "run1" and (folder / "ran").exists()
    assert (tmp_path / "run0").is_dir() and not (tmp_path / "run0" / "ran").exists()


def test_any_other_failure_is_not_run_again(tmp_path):
    def command(folder):
        return [sys.executable, "-c", f"open({str(folder / 'ran')!r}, 'w').close(); raise SystemExit('diverged')"]

    result, folder = run_once_more_on_port_clash(command, tmp_path, timeout=60)
    assert result.returncode == 1 and "diverged" in result.stderr
    assert folder == tmp_path / "run0" and (folder / "ran").exists()
    assert not (tmp_path / "run1").exists()
