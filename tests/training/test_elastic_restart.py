"""Elastic restarts: under torchrun --max-restarts 1, a gloo worker killed mid-epoch costs no more than its epoch."""

import os
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


@pytest.mark.slow
def test_torchrun_restarts_a_killed_worker_and_ends_with_the_uninterrupted_model(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(_SCRIPT))
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
               "--max-restarts=1", "--monitor-interval=0.2", str(script), str(tmp_path)]
    # torchrun shares its rendezvous store with the workers' process group by default, and a restarted
    # group can then read the previous generation's keys and hang in init_process_group (pytorch/pytorch
    # issue 135712; here 2 runs of 3 hung): the docs tell users to set this too.
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(sys.path),
           "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "killed").exists(), "rank 1 was never killed: weak test"
    reference = np.load(tmp_path / "reference.npy")
    for rank in range(2):
        assert (tmp_path / f"generation{rank}").read_text() == "1", "the job ended without a restart"
        # Exactly: the same processes and reduction order as the uninterrupted job.
        np.testing.assert_array_equal(np.load(tmp_path / f"resumed{rank}.npy"), reference)
        assert np.load(tmp_path / f"epochs{rank}.npy").tolist() == [1, 2, 3, 4, 5]
