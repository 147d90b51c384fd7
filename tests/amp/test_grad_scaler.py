"""dtorch.amp.GradScaler against torch.amp.GradScaler("cpu"): same scales, same skipped steps, same parameters."""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
import pytest
import torch

import dtorch as dt
from dtorch.amp import GradScaler
from dtorch.device import DeviceError


def make_pair(seed: int = 0) -> tuple[list[Any], list[Any]]:
    rng = np.random.default_rng(seed)
    w, b = rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal(2).astype(np.float32)
    return ([dt.nn.Parameter(w.copy()), dt.nn.Parameter(b.copy())],
            [torch.nn.Parameter(torch.from_numpy(w.copy())), torch.nn.Parameter(torch.from_numpy(b.copy()))])


def loss_of(params: list[Any], x: Any, y: Any) -> Any:
    w, b = params
    return (((x @ w + b) - y) ** 2).mean()


def backward_both(scalers: tuple[Any, Any], dps: list[Any], tps: list[Any], rng: np.random.Generator) -> None:
    x = rng.standard_normal((4, 3)).astype(np.float32)
    y = rng.standard_normal((4, 2)).astype(np.float32)
    scalers[0].scale(loss_of(dps, dt.tensor(x), dt.tensor(y))).backward()
    scalers[1].scale(loss_of(tps, torch.from_numpy(x), torch.from_numpy(y))).backward()


def assert_close(dps: list[Any], tps: list[Any]) -> None:
    for p, tp in zip(dps, tps):
        np.testing.assert_allclose(p._data, tp.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_matches_torch_over_a_sequence_with_overflows() -> None:
    dps, tps = make_pair()
    dopt, topt = dt.optim.SGD(dps, lr=0.05, momentum=0.9), torch.optim.SGD(tps, lr=0.05, momentum=0.9)
    kw = {"init_scale": 2.0 ** 10, "growth_interval": 3}
    ds, ts = GradScaler("cpu", **kw), torch.amp.GradScaler("cpu", **kw)
    rng = np.random.default_rng(1)
    bad_steps = {2, 3, 9}
    for step in range(14):
        dopt.zero_grad()
        topt.zero_grad()
        backward_both((ds, ts), dps, tps, rng)
        # float32 sums of products: relative to the gradient's scale (an entry that cancels down from ~700 to ~10
        # keeps only the absolute error of the sum; torch's CPU kernels sum in another order on AVX2 than on AVX-512)
        tg = tps[0].grad.numpy()
        np.testing.assert_allclose(dps[0].grad._data, tg, rtol=1e-6, atol=1e-6 * float(np.abs(tg).max()))
        if step in bad_steps:
            bad = math.inf if step != 3 else math.nan
            dps[1].grad._data[0] = bad
            tps[1].grad[0] = bad
        before = [p._data.copy() for p in dps]
        dret, tret = ds.step(dopt), ts.step(topt)
        assert dret is None and tret is None
        if step in bad_steps:
            for p, b in zip(dps, before):
                np.testing.assert_array_equal(p._data, b)  # the step was skipped
        ds.update()
        ts.update()
        assert ds.get_scale() == ts.get_scale(), f"scale after step {step}"
        assert ds._get_growth_tracker() == ts._get_growth_tracker()
        assert_close(dps, tps)
    assert ds.state_dict() == ts.state_dict()


def test_inf_grad_skips_step_and_backs_off() -> None:
    p = dt.nn.Parameter(np.ones(2, dtype=np.float32))
    opt = dt.optim.SGD([p], lr=0.1)
    scaler = GradScaler(init_scale=1024.0, growth_interval=2)
    scaler.scale((p * 2.0).sum()).backward()
    np.testing.assert_array_equal(p.grad._data, [2048.0, 2048.0])
    p.grad._data[1] = np.inf
    assert scaler.step(opt) is None
    np.testing.assert_array_equal(p._data, [1.0, 1.0])
    scaler.update()
    assert scaler.get_scale() == 512.0 and scaler._get_growth_tracker() == 0


def test_finite_steps_grow_the_scale_after_growth_interval() -> None:
    p = dt.nn.Parameter(np.ones(2, dtype=np.float32))
    opt = dt.optim.SGD([p], lr=0.1)
    scaler = GradScaler(init_scale=8.0, growth_factor=4.0, growth_interval=3)
    scales = []
    for _ in range(7):
        opt.zero_grad()
        scaler.scale((p * p).sum()).backward()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    assert scales == [8.0, 8.0, 32.0, 32.0, 32.0, 128.0, 128.0]


def test_growth_that_would_overflow_keeps_the_scale() -> None:
    p = dt.nn.Parameter(np.ones(1, dtype=np.float32))
    ds, ts = GradScaler(init_scale=3e38, growth_interval=1), torch.amp.GradScaler("cpu", init_scale=3e38,
                                                                                  growth_interval=1)
    opt = dt.optim.SGD([p], lr=0.0)
    p.grad = dt.ones(1)
    ds.scale(dt.ones(1))
    ds.step(opt)
    ds.update()
    tp = torch.nn.Parameter(torch.ones(1))
    tp.grad = torch.ones(1)
    ts.scale(torch.ones(1))
    ts.step(torch.optim.SGD([tp], lr=0.0))
    ts.update()
    assert ds.get_scale() == ts.get_scale() == pytest.approx(3e38)


def test_unscale_then_clip_matches_torch() -> None:
    dps, tps = make_pair(3)
    dopt, topt = dt.optim.Adam(dps, lr=0.01), torch.optim.Adam(tps, lr=0.01)
    ds, ts = GradScaler(), torch.amp.GradScaler("cpu")
    rng = np.random.default_rng(4)
    for _ in range(5):
        dopt.zero_grad()
        topt.zero_grad()
        backward_both((ds, ts), dps, tps, rng)
        ds.unscale_(dopt)
        ts.unscale_(topt)
        np.testing.assert_allclose(dps[0].grad._data, tps[0].grad.numpy(), rtol=1e-6, atol=1e-8)
        dt.nn.utils.clip_grad_norm_(dps, 0.1)
        torch.nn.utils.clip_grad_norm_(tps, 0.1)
        ds.step(dopt)  # does not unscale a second time
        ts.step(topt)
        ds.update()
        ts.update()
        assert_close(dps, tps)


def test_two_optimizers_share_one_scale() -> None:
    a, b = dt.nn.Parameter(np.ones(2, dtype=np.float32)), dt.nn.Parameter(np.ones(2, dtype=np.float32))
    oa, ob = dt.optim.SGD([a], lr=0.5), dt.optim.SGD([b], lr=0.5)
    scaler = GradScaler(init_scale=4.0)
    scaler.scale((a + b).sum()).backward()
    b.grad._data[0] = np.nan
    scaler.step(oa)
    assert scaler.step(ob) is None
    scaler.update()
    np.testing.assert_array_equal(a._data, [0.5, 0.5])  # the clean optimizer stepped
    np.testing.assert_array_equal(b._data, [1.0, 1.0])  # the other did not
    assert scaler.get_scale() == 2.0


def test_scale_nested_outputs() -> None:
    scaler = GradScaler(init_scale=4.0)
    x = dt.tensor([1.0, 2.0])
    out = scaler.scale([x, (x, [x])])
    assert isinstance(out, list) and isinstance(out[1], tuple) and isinstance(out[1][1], list)
    np.testing.assert_array_equal(out[1][1][0]._data, [4.0, 8.0])
    gen = scaler.scale(iter([x]))
    np.testing.assert_array_equal(next(iter(gen))._data, [4.0, 8.0])
    half = scaler.scale(dt.tensor([1.0], dtype=dt.float16))
    assert half.dtype is dt.float16  # the output keeps its dtype, as in torch
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        scaler.scale(3.0)
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        scaler.scale([x, 3.0])


def test_disabled_scaler_is_a_pass_through() -> None:
    p = dt.nn.Parameter(np.ones(2, dtype=np.float32))
    opt = dt.optim.SGD([p], lr=0.5)
    scaler = GradScaler(enabled=False, growth_factor=0.5)  # arguments are not checked when disabled, as in torch
    loss = (p * 1.0).sum()
    assert scaler.scale(loss) is loss and not scaler.is_enabled()
    loss.backward()
    scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    np.testing.assert_array_equal(p._data, [0.5, 0.5])
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    scaler.load_state_dict({})


def test_state_dict_round_trip_and_format() -> None:
    ds, ts = GradScaler(init_scale=256.0, growth_interval=5), torch.amp.GradScaler("cpu", init_scale=256.0,
                                                                                    growth_interval=5)
    assert ds.state_dict() == ts.state_dict()
    p = dt.nn.Parameter(np.ones(1, dtype=np.float32))
    opt = dt.optim.SGD([p], lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        ds.scale(p.sum()).backward()
        ds.step(opt)
        ds.update()
    state = ds.state_dict()
    assert state == {"scale": 256.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 5,
                     "_growth_tracker": 2}
    fresh = GradScaler()
    fresh.load_state_dict(state)
    assert fresh.get_scale() == 256.0 and fresh._get_growth_tracker() == 2
    fresh.scale(p.sum())  # the lazily created scale starts from the loaded values
    assert fresh.state_dict() == state
    ds.update(new_scale=64.0)
    fresh.load_state_dict(ds.state_dict())
    assert fresh.get_scale() == 64.0


def test_update_with_new_scale() -> None:
    scaler = GradScaler()
    scaler.scale(dt.ones(1))
    scaler.update(8.0)
    assert scaler.get_scale() == 8.0
    scaler.update(dt.tensor(16.0))
    assert scaler.get_scale() == 16.0
    with pytest.raises(ValueError, match="new_scale should be a float or a 1-element Tensor"):
        scaler.update(dt.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="new_scale should be a float"):
        scaler.update("big")  # type: ignore[arg-type]


def test_accessors() -> None:
    scaler = GradScaler(init_scale=32.0)
    assert scaler.get_scale() == 32.0 and scaler.is_enabled()
    scaler.set_growth_factor(3.0)
    scaler.set_backoff_factor(0.25)
    scaler.set_growth_interval(7)
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor(), scaler.get_growth_interval()) == (3.0, 0.25, 7)


def test_copy_only_between_iterations() -> None:
    p = dt.nn.Parameter(np.ones(1, dtype=np.float32))
    opt = dt.optim.SGD([p], lr=0.1)
    scaler = GradScaler(init_scale=16.0)
    scaler.scale(p.sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="may only be pickled at the beginning of an iteration"):
        copy.deepcopy(scaler)
    scaler.step(opt)
    scaler.update()
    clone = copy.deepcopy(scaler)
    assert clone.get_scale() == 16.0 and clone.state_dict() == scaler.state_dict()


# ---------------------------------------------------------------------- error paths


def _scaled_backward() -> tuple[GradScaler, Any, Any]:
    p = dt.nn.Parameter(np.ones(2, dtype=np.float32))
    opt = dt.optim.SGD([p], lr=0.1)
    scaler = GradScaler()
    scaler.scale(p.sum()).backward()
    return scaler, opt, p


def test_unscale_twice_raises_like_torch() -> None:
    scaler, opt, _ = _scaled_backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called on this optimizer since the last "
                                           r"update\(\)"):
        scaler.unscale_(opt)
    tp = torch.nn.Parameter(torch.ones(2))
    topt = torch.optim.SGD([tp], lr=0.1)
    ts = torch.amp.GradScaler("cpu")
    ts.scale(tp.sum()).backward()
    ts.unscale_(topt)
    with pytest.raises(RuntimeError, match="already been called"):
        ts.unscale_(topt)
    scaler.step(opt)
    scaler.update()
    scaler.scale(opt.param_groups[0]["params"][0].sum()).backward()
    scaler.unscale_(opt)  # allowed again after update()


def test_unscale_after_step_and_step_twice() -> None:
    scaler, opt, _ = _scaled_backward()
    scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) is being called after step\(\)"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"step\(\) has already been called since the last update\(\)"):
        scaler.step(opt)


def test_closure_is_rejected() -> None:
    scaler, opt, _ = _scaled_backward()
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: 0.0)


@pytest.mark.parametrize("call", ["unscale_", "step", "update"])
def test_calls_before_scale_raise(call: str) -> None:
    scaler = GradScaler()
    opt = dt.optim.SGD([dt.nn.Parameter(np.ones(1, dtype=np.float32))], lr=0.1)
    with pytest.raises(RuntimeError, match=f"Attempted {call} but the scale is not set yet"):
        getattr(scaler, call)(*([] if call == "update" else [opt]))


def test_update_without_inf_checks() -> None:
    scaler = GradScaler()
    scaler.scale(dt.ones(1))
    with pytest.raises(RuntimeError, match="No inf checks were recorded prior to update"):
        scaler.update()


def test_fp16_gradients_cannot_be_unscaled() -> None:
    p = dt.nn.Parameter(np.ones(2, dtype=np.float16))
    p.grad = dt.ones(2, dtype=dt.float16)
    scaler = GradScaler()
    scaler.scale(dt.ones(1))
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        scaler.unscale_(dt.optim.SGD([p], lr=0.1))


@pytest.mark.parametrize("kwargs,msg", [({"growth_factor": 1.0}, "growth factor must be > 1.0"),
                                        ({"backoff_factor": 1.0}, "backoff factor must be < 1.0"),
                                        ({"growth_interval": 0}, "growth_interval must be a positive integer")])
def test_bad_constructor_arguments(kwargs: dict[str, Any], msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        GradScaler(**kwargs)


def test_unavailable_device() -> None:
    with pytest.raises(DeviceError, match="device 'cuda' is not available"):
        GradScaler("cuda")


def test_load_state_dict_errors() -> None:
    scaler = GradScaler()
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        scaler.load_state_dict({})
    with pytest.raises(ValueError, match="missing"):
        scaler.load_state_dict({"scale": 2.0})


def test_lazy_export_from_dtorch_amp() -> None:
    assert dt.amp.GradScaler is GradScaler
