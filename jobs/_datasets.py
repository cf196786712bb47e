"""Data decoding for the built-in jobs: MNIST from IDX files, CIFAR-10 from its python batches.

Decoding happens once per process into tensors (no per-sample PIL or transform work); the runtime
only sees ``TensorData`` (the in-memory fast path) or a map-style ``Dataset``.
"""

from __future__ import annotations

import gzip
import os
import pickle
import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from orchestrator import TensorData
from orchestrator.errors import ConfigError
from orchestrator.spec.datadir import DATA_DIR_ENV_VAR

DATA_HINT = (f"point --data-dir (orch run/submit), {DATA_DIR_ENV_VAR} or data_dir= (Python API) at the folder "
             "that holds {layout}")

# IDX header: two zero bytes, a type code, the number of dimensions; then big-endian uint32 sizes.
IDX_TYPES: dict[int, np.dtype[np.generic]] = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}

MNIST_FILES = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}
MNIST_MEAN, MNIST_STD = 0.1307, 0.3081
MNIST_LAYOUT = "MNIST/raw/ with the four files " + ", ".join(f"{n}.gz" for n in MNIST_FILES.values())
# The base URL of a mirror of the four .gz files, tried instead of torchvision's own mirrors (a local copy,
# an intranet server: http://host/mnist/ serving train-images-idx3-ubyte.gz, ...).
MNIST_MIRROR_ENV_VAR = "ORCH_MNIST_MIRROR"

CIFAR10_DIR = "cifar-10-batches-py"
CIFAR10_TRAIN = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR10_TEST = ("test_batch",)
CIFAR10_MEAN, CIFAR10_STD = 0.5, 0.5  # as in the PyTorch CIFAR-10 tutorial


# --- IDX (MNIST) --------------------------------------------------------------------------------

def parse_idx(blob: bytes, source: str = "IDX data") -> np.ndarray:
    """Decode an IDX file's bytes into an array of its declared type and shape."""
    if len(blob) < 4 or blob[0] != 0 or blob[1] != 0 or blob[2] not in IDX_TYPES or blob[3] == 0:
        raise ValueError(f"{source} is not an IDX file (bad magic number {blob[:4].hex() or 'empty'})")
    ndim = blob[3]
    header = 4 + 4 * ndim
    if len(blob) < header:
        raise ValueError(f"{source} is truncated inside its header")
    shape = struct.unpack(f">{ndim}I", blob[4:header])
    dtype = IDX_TYPES[blob[2]]
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(blob) - header != expected:
        raise ValueError(f"{source} has {len(blob) - header} data bytes, but its header "
                         f"({'x'.join(map(str, shape))}) needs {expected}: the file is truncated or corrupt")
    array = np.frombuffer(blob, dtype=dtype, count=expected // dtype.itemsize, offset=header)
    return array.reshape(shape).astype(dtype.newbyteorder("="), copy=False)


def read_idx(path: Path) -> np.ndarray:
    """Read an IDX file, gzip-compressed (``.gz``) or not."""
    try:
        raw = path.read_bytes()
        blob = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ConfigError(f"cannot read {path}: {exc}", hint="the file is damaged; copy it again") from None
    try:
        return parse_idx(blob, str(path))
    except ValueError as exc:
        raise ConfigError(str(exc), hint="the file is damaged; copy it again") from None


def find_mnist_files(data_dir: Path) -> dict[str, Path]:
    """The four MNIST files under ``data_dir`` (``MNIST/raw/``, ``.gz`` or uncompressed)."""
    folders = [data_dir / "MNIST" / "raw", data_dir / "raw", data_dir]
    found: dict[str, Path] = {}
    for key, name in MNIST_FILES.items():
        candidates = [folder / f"{name}{ext}" for folder in folders for ext in (".gz", "")]
        hit = next((c for c in candidates if c.is_file()), None)
        if hit is None:
            raise ConfigError(
                f"MNIST file {name}.gz not found under {data_dir} (looked for "
                + ", ".join(str(c) for c in candidates[:2]) + " and in raw/ and the folder itself)",
                hint=DATA_HINT.format(layout=MNIST_LAYOUT),
            )
        found[key] = hit
    return found


def download_mnist(data_dir: Path) -> None:
    """Fetch the MNIST files missing under ``data_dir/MNIST/raw/`` with torchvision's download (its mirrors
    and MD5 sums; ``$ORCH_MNIST_MIRROR`` replaces the mirrors). Present files are kept: nothing is fetched
    when all four are there (``.gz`` or uncompressed). A file is written under a temporary name and renamed
    once its MD5 sum is right, so an interrupted download never leaves a damaged file behind. When no
    mirror gives a file: OSError (the network's error) or ConfigError (a mirror served a wrong file)."""
    try:
        find_mnist_files(data_dir)
        return
    except ConfigError:
        pass
    from torchvision.datasets import MNIST
    from torchvision.datasets.utils import check_integrity, download_url

    raw = data_dir / "MNIST" / "raw"
    mirror = os.environ.get(MNIST_MIRROR_ENV_VAR, "").strip()
    mirrors = [mirror.rstrip("/") + "/"] if mirror else [str(m) for m in MNIST.mirrors]
    for filename, md5 in MNIST.resources:
        if check_integrity(str(raw / filename), md5):
            continue
        failures: list[tuple[str, Exception]] = []
        for base in mirrors:
            part = f"{filename}.part"
            print(f"downloading {base}{filename} to {raw}", flush=True)
            try:
                download_url(f"{base}{filename}", str(raw), filename=part, md5=md5)
            except (OSError, RuntimeError) as exc:  # OSError: the network (URLError); RuntimeError: a wrong MD5
                failures.append((base, exc))
                (raw / part).unlink(missing_ok=True)
                continue
            os.replace(raw / part, raw / filename)
            break
        else:
            network = [exc for _, exc in failures if isinstance(exc, OSError)]
            tried = "; ".join(f"{base}{filename}: {exc}" for base, exc in failures)
            if network:
                raise network[0] from None  # the first mirror's network error (what orch reports)
            raise ConfigError(f"no mirror served a good {filename} (tried {tried})",
                              hint=f"set {MNIST_MIRROR_ENV_VAR}=URL to a mirror of the four files, or copy them "
                                   f"into {raw}")


def _mnist_split(images_path: Path, labels_path: Path) -> TensorData:
    images, labels = read_idx(images_path), read_idx(labels_path)
    if images.ndim != 3 or labels.ndim != 1 or images.shape[0] != labels.shape[0]:
        raise ConfigError(f"{images_path} ({'x'.join(map(str, images.shape))}) and {labels_path} "
                          f"({'x'.join(map(str, labels.shape))}) do not match as MNIST images and labels",
                          hint="the files are damaged or mixed up; copy them again")
    inputs = torch.from_numpy(images.copy()).unsqueeze(1).float()
    inputs.div_(255.0).sub_(MNIST_MEAN).div_(MNIST_STD)
    return TensorData(inputs, torch.from_numpy(labels.astype(np.int64)))


def load_mnist(data_dir: Path) -> tuple[TensorData, TensorData]:
    """MNIST train and test sets: N x 1 x 28 x 28 float, normalized once; int64 labels."""
    files = find_mnist_files(data_dir)
    return (_mnist_split(files["train_images"], files["train_labels"]),
            _mnist_split(files["test_images"], files["test_labels"]))


# --- CIFAR-10 (python pickle batches) -------------------------------------------------------------

def find_cifar10_dir(data_dir: Path) -> Path:
    for folder in (data_dir / CIFAR10_DIR, data_dir / "CIFAR10" / CIFAR10_DIR, data_dir):
        if all((folder / name).is_file() for name in CIFAR10_TRAIN + CIFAR10_TEST):
            return folder
    raise ConfigError(
        f"CIFAR-10 not found under {data_dir} (looked for {data_dir / CIFAR10_DIR}/data_batch_1..5 "
        "and test_batch)",
        hint=DATA_HINT.format(layout=f"{CIFAR10_DIR}/ (the python version of CIFAR-10, "
                                     "cifar-10-python.tar.gz, unpacked)"),
    )


def _read_cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    try:
        with path.open("rb") as fh:
            entry = pickle.load(fh, encoding="bytes")
        data = np.asarray(entry[b"data"], dtype=np.uint8)
        labels = np.asarray(entry[b"labels"], dtype=np.int64)
    except (OSError, EOFError, pickle.UnpicklingError, KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"cannot read CIFAR-10 batch {path}: {exc!r}",
                          hint="the file is damaged; unpack cifar-10-python.tar.gz again") from None
    if data.ndim != 2 or data.shape[1] != 3 * 32 * 32 or data.shape[0] != labels.shape[0]:
        raise ConfigError(f"{path} holds data of shape {data.shape} with {labels.shape[0]} labels; "
                          "CIFAR-10 batches hold N x 3072 bytes and N labels",
                          hint="the file is damaged; unpack cifar-10-python.tar.gz again")
    return data, labels


def cifar_tensors(batches: Sequence[tuple[np.ndarray, np.ndarray]]) -> TensorData:
    """Stack CIFAR-10 batches into N x 3 x 32 x 32 float inputs normalized to [-1, 1]."""
    data = np.concatenate([b[0] for b in batches])
    labels = np.concatenate([b[1] for b in batches])
    inputs = torch.from_numpy(data).reshape(-1, 3, 32, 32).float()
    inputs.div_(255.0).sub_(CIFAR10_MEAN).div_(CIFAR10_STD)
    return TensorData(inputs, torch.from_numpy(labels))


def load_cifar10(data_dir: Path) -> tuple[TensorData, TensorData]:
    folder = find_cifar10_dir(data_dir)
    train = cifar_tensors([_read_cifar_batch(folder / n) for n in CIFAR10_TRAIN])
    test = cifar_tensors([_read_cifar_batch(folder / n) for n in CIFAR10_TEST])
    return train, test


class Augmented(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Images (N x C x H x W) with random crop (zero padding ``pad``) and horizontal flip per item.

    The randomness comes from torch's global RNG, which the runtime seeds per batch in the
    DataLoader workers: the same augmentation for any number of workers, and across a resume."""

    def __init__(self, data: TensorData, pad: int = 4) -> None:
        self.inputs, self.targets, self.pad = data.inputs, data.targets, pad

    def __len__(self) -> int:
        return int(self.inputs.shape[0])

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        image = self.inputs[index]
        height, width = int(image.shape[-2]), int(image.shape[-1])
        padded = torch.nn.functional.pad(image, (self.pad,) * 4)
        top, left = (int(v) for v in torch.randint(0, 2 * self.pad + 1, (2,)))
        crop = padded[:, top:top + height, left:left + width]
        if bool(torch.rand(()) < 0.5):
            crop = crop.flip(-1)
        return crop.contiguous(), self.targets[index]
