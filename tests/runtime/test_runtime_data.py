"""Data: IDX decoding (on files the test writes), MNIST and CIFAR-10 loaders, sharding and padding."""

from __future__ import annotations

import gzip
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DistributedSampler

from jobs._datasets import (
    CIFAR10_DIR,
    MNIST_FILES,
    MNIST_MEAN,
    MNIST_STD,
    load_cifar10,
    load_mnist,
    parse_idx,
    read_idx,
)
from orchestrator.errors import ConfigError
from orchestrator.runtime.data import TensorData, eval_shard, gather, real_count

IDX_CODES = {np.dtype(np.uint8): 0x08, np.dtype(np.int8): 0x09, np.dtype(">i2"): 0x0B,
             np.dtype(">i4"): 0x0C, np.dtype(">f4"): 0x0D, np.dtype(">f8"): 0x0E}


def idx_bytes(array: np.ndarray) -> bytes:
    """Encode an array as an IDX file, the way the MNIST files are written (big-endian)."""
    big = array.astype(array.dtype.newbyteorder(">"))
    code = IDX_CODES[big.dtype if big.dtype.itemsize > 1 else np.dtype(array.dtype.str.lstrip("<>|="))]
    header = bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + big.tobytes()


def write_mnist(folder: Path, n_train: int, n_test: int, *, compress: bool = True,
                seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = {
        "train_images": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        "train_labels": rng.integers(0, 10, n_train, dtype=np.uint8),
        "test_images": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        "test_labels": rng.integers(0, 10, n_test, dtype=np.uint8),
    }
    folder.mkdir(parents=True, exist_ok=True)
    for key, name in MNIST_FILES.items():
        blob = idx_bytes(arrays[key])
        if compress:
            (folder / f"{name}.gz").write_bytes(gzip.compress(blob))
        else:
            (folder / name).write_bytes(blob)
    return arrays


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64])
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4)])
def test_parse_idx_round_trips_every_type(dtype: type, shape: tuple[int, ...]) -> None:
    array = (np.arange(int(np.prod(shape))) - 3).reshape(shape).astype(dtype)
    decoded = parse_idx(idx_bytes(array))
    assert decoded.shape == shape
    np.testing.assert_array_equal(decoded, array)
    assert decoded.dtype.isnative


@pytest.mark.parametrize(("blob", "needle"), [
    (b"", "bad magic"),
    (b"\x01\x00\x08\x01\x00\x00\x00\x01\x00", "bad magic"),
    (b"\x00\x00\x07\x01\x00\x00\x00\x01\x00", "bad magic"),  # unknown type code
    (b"\x00\x00\x08\x00", "bad magic"),  # zero dimensions
    (b"\x00\x00\x08\x02\x00\x00\x00", "header"),
    (b"\x00\x00\x08\x01\x00\x00\x00\x05abc", "truncated or corrupt"),
    (b"\x00\x00\x08\x01\x00\x00\x00\x02abc", "truncated or corrupt"),  # too long
])
def test_parse_idx_rejects_damage(blob: bytes, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        parse_idx(blob, "x.idx")


def test_read_idx_gzip_and_plain_and_truncated_gzip(tmp_path: Path) -> None:
    array = np.arange(60, dtype=np.uint8).reshape(3, 4, 5)
    (tmp_path / "a").write_bytes(idx_bytes(array))
    (tmp_path / "a.gz").write_bytes(gzip.compress(idx_bytes(array)))
    np.testing.assert_array_equal(read_idx(tmp_path / "a"), array)
    np.testing.assert_array_equal(read_idx(tmp_path / "a.gz"), array)
    (tmp_path / "b.gz").write_bytes(gzip.compress(idx_bytes(array))[:-10])
    with pytest.raises(ConfigError, match=r"b\.gz"):
        read_idx(tmp_path / "b.gz")


@pytest.mark.parametrize("compress", [True, False])
def test_load_mnist_decodes_real_idx_files(tmp_path: Path, compress: bool) -> None:
    arrays = write_mnist(tmp_path / "MNIST" / "raw", 50, 20, compress=compress)
    train, test = load_mnist(tmp_path)
    assert train.inputs.shape == (50, 1, 28, 28) and train.inputs.dtype == torch.float32
    assert test.inputs.shape == (20, 1, 28, 28)
    assert train.targets.dtype == torch.int64
    np.testing.assert_array_equal(train.targets.numpy(), arrays["train_labels"])
    expected = (arrays["test_images"].astype(np.float32) / 255 - MNIST_MEAN) / MNIST_STD
    np.testing.assert_allclose(test.inputs[:, 0].numpy(), expected, rtol=1e-6, atol=1e-6)


def test_missing_mnist_says_where_it_looked_and_how_to_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_mnist(tmp_path)
    assert str(tmp_path / "MNIST" / "raw" / "train-images-idx3-ubyte.gz") in info.value.message
    assert info.value.hint and "ORCH_DATA_DIR" in info.value.hint and "--data-dir" in info.value.hint


def test_mismatched_mnist_files_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "MNIST" / "raw"
    write_mnist(folder, 10, 5)
    (folder / "train-labels-idx1-ubyte.gz").write_bytes(gzip.compress(idx_bytes(np.zeros(9, np.uint8))))
    with pytest.raises(ConfigError, match="do not match"):
        load_mnist(tmp_path)


def write_cifar(folder: Path, per_batch: int, seed: int = 0) -> list[tuple[np.ndarray, list[int]]]:
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    batches = []
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        data = rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8)
        labels = [int(x) for x in rng.integers(0, 10, per_batch)]
        with (folder / name).open("wb") as fh:
            pickle.dump({b"data": data, b"labels": labels, b"batch_label": name.encode()}, fh)
        batches.append((data, labels))
    return batches


def test_load_cifar10_from_python_batches(tmp_path: Path) -> None:
    batches = write_cifar(tmp_path / CIFAR10_DIR, 8)
    train, test = load_cifar10(tmp_path)
    assert train.inputs.shape == (40, 3, 32, 32) and test.inputs.shape == (8, 3, 32, 32)
    assert train.targets.tolist() == [label for b in batches[:5] for label in b[1]]
    first = batches[0][0][0].reshape(3, 32, 32).astype(np.float32) / 255 * 2 - 1
    np.testing.assert_allclose(train.inputs[0].numpy(), first, atol=1e-6)
    assert float(train.inputs.min()) >= -1 and float(train.inputs.max()) <= 1


def test_cifar10_missing_and_damaged(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_cifar10(tmp_path)
    assert CIFAR10_DIR in info.value.message and info.value.hint and "ORCH_DATA_DIR" in info.value.hint
    write_cifar(tmp_path / CIFAR10_DIR, 4)
    (tmp_path / CIFAR10_DIR / "data_batch_3").write_bytes(b"not a pickle")
    with pytest.raises(ConfigError, match="data_batch_3"):
        load_cifar10(tmp_path)


def test_gather_indexes_rows() -> None:
    data = TensorData(torch.arange(20.0).reshape(10, 2), torch.arange(10))
    inputs, targets = gather(data, torch.tensor([3, 0, 9]))
    assert targets.tolist() == [3, 0, 9]
    assert inputs.tolist() == [[6.0, 7.0], [0.0, 1.0], [18.0, 19.0]]
    with pytest.raises(ValueError):
        TensorData(torch.zeros(3, 2), torch.zeros(4))


def shares(n: int, world: int, epoch: int, seed: int = 0) -> list[list[int]]:
    data = TensorData(torch.zeros(n, 1), torch.zeros(n, dtype=torch.long))
    out = []
    for rank in range(world):
        sampler: DistributedSampler[tuple[torch.Tensor, torch.Tensor]] = DistributedSampler(
            data, num_replicas=world, rank=rank, shuffle=True, seed=seed, drop_last=False)
        sampler.set_epoch(epoch)
        out.append(list(sampler))
    return out


@pytest.mark.parametrize(("n", "world"), [(100, 2), (101, 2), (10, 3), (7, 4), (1000, 8), (5, 8)])
def test_sampler_shares_are_disjoint_cover_and_padding_is_counted_once(n: int, world: int) -> None:
    per_epoch = [shares(n, world, epoch) for epoch in range(3)]
    for parts in per_epoch:
        # every rank gets ceil(n / world) indices: the same number of steps everywhere
        assert {len(p) for p in parts} == {-(-n // world)}
        # the real (unpadded) part of each share, as real_count says, is disjoint and covers all
        real = [p[:real_count(n, rank, world)] for rank, p in enumerate(parts)]
        flat = [i for part in real for i in part]
        assert sorted(flat) == list(range(n))
        # the padding repeats samples: without trimming, exactly (world - n % world) % world extra
        assert sum(len(p) for p in parts) - n == (world - n % world) % world
    orders = [tuple(i for part in parts for i in part) for parts in per_epoch]
    assert len(set(orders)) == 3, "set_epoch must change the order every epoch"


@pytest.mark.parametrize(("n", "world"), [(10, 3), (10000, 2), (7, 8), (0, 2)])
def test_eval_shards_count_every_sample_exactly_once(n: int, world: int) -> None:
    parts = [eval_shard(n, rank, world).tolist() for rank in range(world)]
    assert sorted(i for part in parts for i in part) == list(range(n))
