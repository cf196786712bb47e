"""DDP008 on rendezvous values the script computes wrong: a world of nodes x GPUs (or one node's GPUs beside the
launcher's global or local rank), MASTER_PORT from another variable with a fixed fallback, a tcp:// address with a
port drawn at random by each process. Each beside the correct form, which stays silent."""

from __future__ import annotations

from orchestrator.doctor import check_source

_HEAD = "import os\nimport random\nimport socket\nimport numpy as np\nimport torch\nimport torch.distributed as dist\n"


def found(body: str) -> dict[int, str]:
    """{line: message} of the DDP008 findings of ``body`` (its first line is line 1)."""
    source = _HEAD + body
    offset = _HEAD.count("\n")
    return {f.line - offset: f.message for f in check_source(source, "t.py") if f.code == "DDP008"}


def test_a_world_of_nodes_times_gpus_is_reported_where_it_is_computed() -> None:
    hits = found("""
def setup():
    rank = int(os.environ["SLURM_PROCID"])
    world_size = int(os.environ["SLURM_NNODES"]) * torch.cuda.device_count()
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
""")
    assert list(hits) == [4]
    assert "SLURM_NNODES x torch.cuda.device_count()" in hits[4]


def test_a_world_read_from_the_launcher_is_not_reported() -> None:
    assert found("""
def setup():
    rank = int(os.environ["SLURM_PROCID"])
    world_size = int(os.environ["SLURM_NTASKS"])
    assert world_size <= int(os.environ["SLURM_NNODES"]) * torch.cuda.device_count()
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
""") == {}


def test_one_nodes_gpus_beside_the_launchers_rank_is_reported() -> None:
    hits = found("""
rank = int(os.environ["RANK"])
dist.init_process_group("nccl", rank=rank, world_size=torch.cuda.device_count())
""")
    assert list(hits) == [3]
    assert "launcher's global one" in hits[3]


def test_one_nodes_gpus_beside_the_launchers_local_rank_is_reported() -> None:
    hits = found("""
def train(args):
    rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("nccl", init_method="env://", world_size=args.n_gpus, rank=rank)


if __name__ == "__main__":
    args = parse()
    args.n_gpus = torch.cuda.device_count()
    train(args)
""")
    assert list(hits) == [4]
    assert "launcher's node-local one" in hits[4]


def test_one_nodes_gpus_for_its_own_spawned_workers_is_the_spawners_one_node_world() -> None:
    """Not the launcher's rank beside one node's GPUs (this rule), but a spawner's world of one node
    (rules_spawnworld): one finding, where the count is taken."""
    hits = found("""
import torch.multiprocessing as mp


def worker(index, world_size):
    os.environ["MASTER_ADDR"] = os.environ.get("MASTER_ADDR", "localhost")
    dist.init_process_group("nccl", rank=index, world_size=world_size)


if __name__ == "__main__":
    mp.spawn(worker, args=(torch.cuda.device_count(),), nprocs=torch.cuda.device_count())
""")
    assert list(hits) == [11]
    assert "one node's process count" in hits[11] and "launcher's node-local one" not in hits[11]


def test_master_port_from_another_variable_with_a_fixed_fallback_is_reported() -> None:
    hits = found("""
def init(backend="nccl", port=29500):
    port = os.environ.get("PORT", port)
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group(backend)


init()
""")
    assert list(hits) == [4]
    assert "$PORT, else the fixed 29500" in hits[4]


def test_master_port_with_its_own_fallback_is_not_reported() -> None:
    assert found("""
os.environ["MASTER_PORT"] = os.environ.get("MASTER_PORT", "29500")
dist.init_process_group("nccl")
""") == {}


def test_a_port_drawn_at_random_in_a_formatted_address_is_reported() -> None:
    hits = found("""
host = os.environ["SLURM_JOB_NODELIST"].split(",")[0]
port = np.random.randint(15000, 15025)
url = "tcp://{}:{}".format(host, port)
dist.init_process_group("nccl", init_method=url, rank=int(os.environ["SLURM_PROCID"]),
                        world_size=int(os.environ["SLURM_NTASKS"]))
""")
    assert list(hits) == [4]
    assert "np.random.randint()" in hits[4]


def test_a_port_drawn_by_a_helper_in_a_joined_address_is_reported() -> None:
    hits = found("""
def get_port():
    return random.randint(15000, 30000)


url = "tcp://127.0.0.1:" + str(get_port())
dist.init_process_group("nccl", init_method=url, rank=int(os.environ["RANK"]),
                        world_size=int(os.environ["WORLD_SIZE"]))
""")
    assert list(hits) == [6]


def test_a_port_the_os_gives_or_the_launchers_address_is_not_reported() -> None:
    assert found("""
def free_port():
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


local = "tcp://127.0.0.1:" + str(free_port())
url = "tcp://{}:{}".format(os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"])
dist.init_process_group("nccl", init_method=url, rank=int(os.environ["RANK"]),
                        world_size=int(os.environ["WORLD_SIZE"]))
""") == {}
