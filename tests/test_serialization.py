"""dt.save / dt.load: safetensors files, nested checkpoints, atomic writes and corrupt-file errors."""

from __future__ import annotations

import io
import os

import numpy as np
import pytest

import dtorch as dt
from dtorch.serialization import CheckpointError


def _same(a: dt.Tensor, b: dt.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(
        a.numpy().astype(np.float64), b.numpy().astype(np.float64))


@pytest.mark.parametrize("dtype", [dt.float32, dt.float16, dt.bfloat16, dt.float64, dt.int64, dt.int32, dt.int8,
                                   dt.uint8, dt.bool])
def test_every_dtype_round_trips(tmp_path, dtype):
    t = (dt.randn(3, 4) * 5).to(dtype)
    dt.save(t, tmp_path / "t.safetensors")
    back = dt.load(tmp_path / "t.safetensors")
    assert _same(t, back)


def test_state_dict_is_a_plain_safetensors_file_readable_elsewhere(tmp_path):
    from safetensors.numpy import load_file

    sd = {"w": dt.randn(2, 3), "b": dt.zeros(3), "count": dt.tensor(7)}
    dt.save(sd, tmp_path / "sd.safetensors")
    plain = load_file(str(tmp_path / "sd.safetensors"))
    assert set(plain) == set(sd)
    np.testing.assert_array_equal(plain["w"], sd["w"].numpy())
    back = dt.load(tmp_path / "sd.safetensors")
    assert list(back) == list(sd)  # order kept
    assert all(_same(sd[k], back[k]) for k in sd)
    assert back["count"].shape == ()


def test_torch_reads_our_state_dict(tmp_path):
    import torch
    from safetensors.torch import load_file

    sd = {"w": dt.randn(2, 3), "h": dt.randn(4).half()}
    dt.save(sd, tmp_path / "m.safetensors")
    tt = load_file(str(tmp_path / "m.safetensors"))
    assert tt["h"].dtype == torch.float16
    np.testing.assert_array_equal(tt["w"].numpy(), sd["w"].numpy())


def test_nested_checkpoint_round_trips(tmp_path):
    ck = {"model": {"w": dt.randn(2, 2)}, "epoch": 4, "best": float("inf"), "name": "run-1", "none": None,
          "optimizer": {"state": {0: {"step": dt.tensor(3.0), "exp_avg": dt.randn(2)}},
                        "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0]}]},
          "flags": [True, False]}
    dt.save(ck, tmp_path / "ck.safetensors")
    back = dt.load(tmp_path / "ck.safetensors")
    assert back["epoch"] == 4 and back["best"] == float("inf") and back["name"] == "run-1" and back["none"] is None
    assert back["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.999)
    assert list(back["optimizer"]["state"]) == [0]
    assert _same(back["optimizer"]["state"][0]["exp_avg"], ck["optimizer"]["state"][0]["exp_avg"])
    assert back["flags"] == [True, False]


def test_model_and_optimizer_state_round_trip(tmp_path):
    import dtorch.nn as nn

    model = nn.Linear(4, 3)
    dt.save(model.state_dict(), tmp_path / "lin.safetensors")
    other = nn.Linear(4, 3)
    other.load_state_dict(dt.load(tmp_path / "lin.safetensors"))
    assert _same(model.weight.detach(), other.weight.detach())


def test_file_objects(tmp_path):
    buf = io.BytesIO()
    dt.save({"a": dt.ones(2)}, buf)
    buf.seek(0)
    assert _same(dt.load(buf)["a"], dt.ones(2))


def test_non_contiguous_tensor_saved_by_value(tmp_path):
    t = dt.arange(12.0).reshape(3, 4).t()
    dt.save(t, tmp_path / "t")
    assert _same(dt.load(tmp_path / "t"), t.contiguous())


def test_unsupported_object_is_a_type_error_and_writes_nothing(tmp_path):
    import dtorch.nn as nn

    with pytest.raises(TypeError, match="state_dict"):
        dt.save(nn.Linear(2, 2), tmp_path / "m.safetensors")
    assert not any(tmp_path.iterdir())


def test_failed_save_keeps_the_old_file(tmp_path):
    path = tmp_path / "ck.safetensors"
    dt.save({"a": dt.ones(2)}, path)
    with pytest.raises(TypeError):
        dt.save({"a": object()}, path)
    assert _same(dt.load(path)["a"], dt.ones(2))
    assert sorted(os.listdir(tmp_path)) == ["ck.safetensors"]  # no temp files left


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "header"])
def test_corrupt_checkpoint_is_a_clear_error(tmp_path, damage):
    path = tmp_path / "ck.safetensors"
    dt.save({"model": {"w": dt.randn(8, 8)}, "epoch": 1}, path)
    data = path.read_bytes()
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "garbage":
        data = os.urandom(len(data))
    elif damage == "empty":
        data = b""
    else:
        data = data[:8] + b"{not json" + data[17:]
    path.write_bytes(data)
    with pytest.raises(CheckpointError, match="could not load"):
        dt.load(path)


def test_pickle_file_is_refused(tmp_path):
    import pickle

    path = tmp_path / "ck.pt"
    path.write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(CheckpointError, match="never unpickles"):
        dt.load(path)


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(FileNotFoundError):
        dt.load(tmp_path / "nope.safetensors")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        dt.save(dt.ones(1), tmp_path / "no" / "such" / "x.safetensors")


def test_map_location_other_device_is_refused(tmp_path):
    dt.save(dt.ones(1), tmp_path / "x")
    assert _same(dt.load(tmp_path / "x", map_location="cpu"), dt.ones(1))
    with pytest.raises(dt.DeviceError, match="cuda"):
        dt.load(tmp_path / "x", map_location="cuda")
