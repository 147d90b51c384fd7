"""dtorch.optim optimizers against torch.optim (the oracle): same parameters, same gradients, same results."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
import torch

import dtorch as dt
from dtorch.optim.optimizer import required

SHAPES = [(4, 3), (3,), (2, 2, 2)]
STEPS = 20
RTOL, ATOL = 1e-5, 1e-6


# ---------------------------------------------------------------------- harness


def make_params(seed: int = 0, shapes: list[tuple[int, ...]] = SHAPES) -> tuple[list[Any], list[torch.nn.Parameter]]:
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    return ([dt.nn.Parameter(a.copy()) for a in arrays],
            [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in arrays])


def set_grads(dps: list[Any], tps: list[torch.nn.Parameter], rng: np.random.Generator, step: int,
              sparse_last: bool = True) -> None:
    for i, (p, tp) in enumerate(zip(dps, tps)):
        if sparse_last and i == len(dps) - 1 and step % 3 == 1:
            p.grad, tp.grad = None, None  # a parameter without a gradient this step is left alone
            continue
        g = rng.standard_normal(p.shape).astype(np.float32)
        p.grad = dt.tensor(g.copy())
        tp.grad = torch.from_numpy(g.copy())


def assert_params_close(dps: list[Any], tps: list[torch.nn.Parameter], msg: str = "") -> None:
    for i, (p, tp) in enumerate(zip(dps, tps)):
        np.testing.assert_allclose(p._data, tp.detach().numpy(), rtol=RTOL, atol=ATOL, err_msg=f"param {i} {msg}")


def assert_state_close(dopt: Any, topt: torch.optim.Optimizer, dps: list[Any], tps: list[Any]) -> None:
    for p, tp in zip(dps, tps):
        ds, ts = dopt.state.get(p, {}), topt.state.get(tp, {})
        assert set(ds) == set(ts), (sorted(ds), sorted(ts))
        for k, v in ts.items():
            np.testing.assert_allclose(np.asarray(ds[k]._data, dtype=np.float64), v.double().numpy(),
                                       rtol=RTOL, atol=ATOL, err_msg=k)


def run_pair(dopt: Any, topt: torch.optim.Optimizer, dps: list[Any], tps: list[Any], steps: int = STEPS,
             seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    for s in range(steps):
        set_grads(dps, tps, rng, s)
        dopt.step()
        topt.step()
        assert_params_close(dps, tps, f"after step {s + 1}")
    assert_state_close(dopt, topt, dps, tps)


CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.3}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.05, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "weight_decay": 0.01, "nesterov": True, "maximize": True}),
    ("Adam", {}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "amsgrad": True}),
    ("Adam", {"lr": 0.01, "maximize": True}),
    ("Adam", {"lr": 0.01, "betas": (0.3, 0.9), "eps": 1e-3}),  # lerp weight >= 0.5 takes the other form
    ("Adam", {"lr": 0.01, "weight_decay": 0.05, "amsgrad": True, "maximize": True}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.05, "decoupled_weight_decay": True}),
    ("AdamW", {}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.01, "amsgrad": True, "maximize": True}),
    ("RMSprop", {}),
    ("RMSprop", {"lr": 0.01, "centered": True}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True, "weight_decay": 0.1, "maximize": True}),
]


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_matches_torch(name: str, kwargs: dict[str, Any]) -> None:
    dps, tps = make_params()
    dopt, topt = getattr(dt.optim, name)(dps, **kwargs), getattr(torch.optim, name)(tps, **kwargs)
    run_pair(dopt, topt, dps, tps)


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-12), ("float16", 2e-3), ("bfloat16", 1.6e-2)])
@pytest.mark.parametrize("name,kwargs", [("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}),
                                         ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
                                         ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1}),
                                         ("AdamW", {"lr": 0.01}),
                                         ("RMSprop", {"centered": True, "momentum": 0.5, "weight_decay": 0.1})])
def test_other_float_dtypes_stay_in_their_dtype(name: str, kwargs: dict[str, Any], dtype: str, tol: float) -> None:
    p = dt.nn.Parameter(dt.ones(4, dtype=getattr(dt, dtype)))
    tp = torch.nn.Parameter(torch.ones(4, dtype=getattr(torch, dtype)))
    dopt, topt = getattr(dt.optim, name)([p], **kwargs), getattr(torch.optim, name)([tp], **kwargs)
    for i in range(5):
        g = np.linspace(-1, 1, 4).astype(np.float32) * (i + 1)
        p.grad = dt.tensor(g).type(getattr(dt, dtype))
        tp.grad = torch.from_numpy(g).to(getattr(torch, dtype))
        dopt.step()
        topt.step()
    assert p.dtype is getattr(dt, dtype)
    assert all(v.dtype is p.dtype for k, v in dopt.state[p].items() if k != "step")
    np.testing.assert_allclose(p._data.astype(np.float64), tp.detach().double().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop"])
def test_param_groups_with_different_hyperparameters(name: str) -> None:
    dps, tps = make_params(3)
    extra = {"momentum": 0.9} if name in ("SGD", "RMSprop") else {"betas": (0.8, 0.99)}

    def groups(ps: list[Any]) -> list[dict[str, Any]]:
        return [{"params": [ps[0]], "lr": 0.1, "weight_decay": 0.01}, {"params": ps[1:], **extra}]

    dopt = getattr(dt.optim, name)(groups(dps), lr=0.01)
    topt = getattr(torch.optim, name)(groups(tps), lr=0.01)
    assert [g["lr"] for g in dopt.param_groups] == [0.1, 0.01]
    run_pair(dopt, topt, dps, tps)


def test_add_param_group_later_matches_torch() -> None:
    dps, tps = make_params(4)
    dopt, topt = dt.optim.Adam(dps[:2], lr=0.01), torch.optim.Adam(tps[:2], lr=0.01)
    dopt.add_param_group({"params": dps[2], "lr": 0.1})
    topt.add_param_group({"params": tps[2], "lr": 0.1})
    assert dopt.param_groups[1]["betas"] == (0.9, 0.999)  # defaults fill the new group
    run_pair(dopt, topt, dps, tps)


def test_tensor_lr_is_accepted() -> None:
    dps, tps = make_params(5)
    run_pair(dt.optim.SGD(dps, lr=dt.tensor(0.1), momentum=0.5), torch.optim.SGD(tps, lr=torch.tensor(0.1),
                                                                                  momentum=0.5), dps, tps)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop"])
def test_state_dict_layout_matches_torch(name: str) -> None:
    dps, tps = make_params()
    kw = {"momentum": 0.9} if name == "SGD" else {}
    dopt, topt = getattr(dt.optim, name)(dps, **kw), getattr(torch.optim, name)(tps, **kw)
    run_pair(dopt, topt, dps, tps, steps=2)
    dsd, tsd = dopt.state_dict(), topt.state_dict()
    assert dsd["param_groups"] == tsd["param_groups"]
    assert set(dsd["state"]) == set(tsd["state"])
    for k in tsd["state"]:
        assert list(dsd["state"][k]) == list(tsd["state"][k])
        assert all(isinstance(v, dt.Tensor) for v in dsd["state"][k].values())
    if name != "SGD":
        step = dsd["state"][0]["step"]
        assert step.dtype is dt.float32 and step.shape == () and float(step) == 2.0


def test_sgd_without_momentum_keeps_no_state() -> None:
    dps, tps = make_params()
    run_pair(dt.optim.SGD(dps, lr=0.1), torch.optim.SGD(tps, lr=0.1), dps, tps, steps=2)
    assert dt.optim.SGD(dps, lr=0.1).state_dict()["state"] == {}


# ---------------------------------------------------------------------- state_dict round trip


@pytest.mark.parametrize("name,kwargs", [("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
                                         ("Adam", {"lr": 0.01, "amsgrad": True}),
                                         ("AdamW", {"lr": 0.01}),
                                         ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True})])
def test_state_dict_round_trip_continues_like_uninterrupted_training(name: str, kwargs: dict[str, Any]) -> None:
    cls = getattr(dt.optim, name)
    ref_params, _ = make_params(7)
    ref = cls(ref_params, **kwargs)
    rng = np.random.default_rng(11)
    grads = [[rng.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(20)]

    def feed(params: list[Any], gs: list[np.ndarray]) -> None:
        for p, g in zip(params, gs):
            p.grad = dt.tensor(g.copy())

    for gs in grads[:10]:
        feed(ref_params, gs)
        ref.step()
    saved = ref.state_dict()
    resumed_params = [dt.nn.Parameter(p._data.copy()) for p in ref_params]
    resumed = cls(resumed_params, lr=123.0)  # hyper-parameters come back from the state dict
    resumed.load_state_dict(saved)
    assert resumed.param_groups[0]["lr"] == kwargs["lr"]
    assert resumed.param_groups[0]["params"][0] is resumed_params[0]
    # the loaded state is a copy: the two optimizers never share tensors
    for rp, p in zip(ref_params, resumed_params):
        for k, v in ref.state[rp].items():
            assert v is not resumed.state[p][k]
            assert not np.shares_memory(v._data, resumed.state[p][k]._data)
    for gs in grads[10:]:
        feed(ref_params, gs)
        ref.step()
        feed(resumed_params, gs)
        resumed.step()
    for a, b in zip(ref_params, resumed_params):
        np.testing.assert_array_equal(a._data, b._data)


def test_load_torch_state_dict_then_continue_matches_torch() -> None:
    dps, tps = make_params(8)
    topt = torch.optim.Adam(tps, lr=0.01, amsgrad=True)
    rng = np.random.default_rng(2)
    for s in range(5):
        set_grads(dps, tps, rng, s, sparse_last=False)
        topt.step()
    for p, tp in zip(dps, tps):
        p._data[...] = tp.detach().numpy()
    tsd = topt.state_dict()
    converted = {"param_groups": copy.deepcopy(tsd["param_groups"]),
                 "state": {k: {n: dt.tensor(v.numpy().copy()) for n, v in st.items()} for k, st in tsd["state"].items()}}
    dopt = dt.optim.Adam(dps)
    dopt.load_state_dict(converted)
    run_pair(dopt, topt, dps, tps, steps=10, seed=9)


def test_loaded_state_is_cast_to_the_parameter_dtype_except_step() -> None:
    p = dt.nn.Parameter(np.zeros(3, dtype=np.float32))
    opt = dt.optim.Adam([p])
    sd = {"param_groups": opt.state_dict()["param_groups"],
          "state": {0: {"step": dt.tensor(4.0), "exp_avg": np.ones(3), "exp_avg_sq": dt.ones(3, dtype=dt.float64)}}}
    opt.load_state_dict(sd)
    assert opt.state[p]["exp_avg"].dtype is dt.float32
    assert opt.state[p]["exp_avg_sq"].dtype is dt.float32
    assert float(opt.state[p]["step"]) == 4.0


# ---------------------------------------------------------------------- zero_grad, accumulation, closure


def test_zero_grad_set_to_none_semantics() -> None:
    dps, _ = make_params()
    opt = dt.optim.SGD(dps, lr=0.1)
    for p in dps:
        p.grad = dt.ones(*p.shape)
    kept = [p.grad for p in dps]
    opt.zero_grad(set_to_none=False)
    for p, g in zip(dps, kept):
        assert p.grad is g and not p.grad._data.any()
    opt.zero_grad()
    assert all(p.grad is None for p in dps)
    opt.zero_grad()  # no grads at all is fine
    opt.step()  # and stepping without grads changes nothing


def _tiny_model_loss(w: Any, b: Any, x: Any, y: Any) -> Any:
    out = x @ w + b
    return ((out - y) ** 2).mean()


@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_gradient_accumulation_matches_torch(name: str) -> None:
    rng = np.random.default_rng(5)
    w0, b0 = rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal(2).astype(np.float32)
    dw, db = dt.nn.Parameter(w0.copy()), dt.nn.Parameter(b0.copy())
    tw, tb = torch.nn.Parameter(torch.from_numpy(w0.copy())), torch.nn.Parameter(torch.from_numpy(b0.copy()))
    dopt, topt = getattr(dt.optim, name)([dw, db], lr=0.05), getattr(torch.optim, name)([tw, tb], lr=0.05)
    for _ in range(5):
        dopt.zero_grad()
        topt.zero_grad()
        for _micro in range(2):  # two backward calls without zero_grad: the gradients add up
            x = rng.standard_normal((4, 3)).astype(np.float32)
            y = rng.standard_normal((4, 2)).astype(np.float32)
            _tiny_model_loss(dw, db, dt.tensor(x), dt.tensor(y)).backward()
            _tiny_model_loss(tw, tb, torch.from_numpy(x), torch.from_numpy(y)).backward()
        np.testing.assert_allclose(dw.grad._data, tw.grad.numpy(), rtol=RTOL, atol=ATOL)
        dopt.step()
        topt.step()
        assert_params_close([dw, db], [tw, tb])


def test_step_with_closure_returns_loss_and_enables_grad() -> None:
    w = dt.nn.Parameter(np.array([1.0, -2.0], dtype=np.float32))
    opt = dt.optim.SGD([w], lr=0.1)

    def closure() -> Any:
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    with dt.no_grad():
        loss = opt.step(closure)
    assert float(loss) == pytest.approx(5.0)
    np.testing.assert_allclose(w._data, [0.8, -1.6], rtol=1e-6)


def test_update_is_in_place_and_outside_autograd() -> None:
    p = dt.nn.Parameter(np.ones(3, dtype=np.float32))
    buf = p._data
    p.grad = dt.ones(3)
    dt.optim.Adam([p], lr=0.1).step()
    assert p._data is buf and p.is_leaf and p.grad_fn is None and p.requires_grad


def test_repr_lists_groups() -> None:
    text = repr(dt.optim.SGD(make_params()[0], lr=0.1))
    assert text.startswith("SGD (") and "Parameter Group 0" in text and "lr: 0.1" in text


# ---------------------------------------------------------------------- error paths


def test_empty_parameter_list() -> None:
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        dt.optim.SGD([], lr=0.1)


def test_parameter_in_two_groups() -> None:
    p = dt.nn.Parameter(np.ones(2, dtype=np.float32))
    with pytest.raises(ValueError, match="more than one parameter group"):
        dt.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)
    opt = dt.optim.SGD([p], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [p]})


def test_duplicate_parameter_in_one_group_warns() -> None:
    p = dt.nn.Parameter(np.ones(2, dtype=np.float32))
    with pytest.warns(UserWarning, match="duplicate parameters"):
        dt.optim.SGD([p, p], lr=0.1)


@pytest.mark.parametrize("params,exc,msg", [
    (dt.ones(2), TypeError, "iterable of Tensors or dicts"),
    ({dt.nn.Parameter(np.ones(1, dtype=np.float32))}, TypeError, "ordered collections"),
    ({"params": []}, TypeError, "iterable of Tensors or dicts"),
    (5, TypeError, "iterable of Tensors or dicts"),
    ([np.ones(2)], TypeError, "can only optimize Tensors"),
    ([{"params": {dt.nn.Parameter(np.ones(1, dtype=np.float32))}}], TypeError, "ordered collections"),
    ([{"lr": 0.1}], ValueError, "'params' entry"),
])
def test_bad_params_argument(params: Any, exc: type, msg: str) -> None:
    with pytest.raises(exc, match=msg):
        dt.optim.SGD(params, lr=0.1)


def test_non_leaf_tensor_is_rejected() -> None:
    p = dt.nn.Parameter(np.ones(2, dtype=np.float32))
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        dt.optim.SGD([p * 2], lr=0.1)


def test_add_param_group_needs_a_dict() -> None:
    opt = dt.optim.SGD(make_params()[0], lr=0.1)
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([dt.nn.Parameter(np.ones(1, dtype=np.float32))])  # type: ignore[arg-type]


def test_named_parameters_and_mixing_names() -> None:
    a, b = (dt.nn.Parameter(np.ones(1, dtype=np.float32)) for _ in range(2))
    opt = dt.optim.SGD([("a", a)], lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["a"] and opt.param_groups[0]["params"] == [a]
    with pytest.raises(ValueError, match="with/without names"):
        opt.add_param_group({"params": [b]})
    with pytest.raises(ValueError, match="Some param names are missing"):
        dt.optim.SGD([("a", a), b], lr=0.1)


def test_required_hyperparameter_must_be_given() -> None:
    class Plain(dt.optim.Optimizer):
        def __init__(self, params: Any, lr: Any = required) -> None:
            super().__init__(params, {"lr": lr})

    p = dt.nn.Parameter(np.ones(1, dtype=np.float32))
    with pytest.raises(ValueError, match="didn't specify a value of required optimization parameter lr"):
        Plain([p])
    assert Plain([{"params": [p], "lr": 0.5}]).param_groups[0]["lr"] == 0.5
    with pytest.raises(NotImplementedError, match="does not implement step"):
        Plain([p], lr=0.1).step()


@pytest.mark.parametrize("name,kwargs,msg", [
    ("SGD", {"lr": -1}, "Invalid learning rate: -1"),
    ("Adam", {"lr": -1}, "Invalid learning rate: -1"),
    ("AdamW", {"lr": -0.5}, "Invalid learning rate: -0.5"),
    ("RMSprop", {"lr": -1}, "Invalid learning rate: -1"),
    ("SGD", {"lr": 0.1, "momentum": -0.1}, "Invalid momentum value: -0.1"),
    ("SGD", {"lr": 0.1, "weight_decay": -1}, "Invalid weight_decay value: -1"),
    ("SGD", {"lr": 0.1, "nesterov": True}, "Nesterov momentum requires a momentum and zero dampening"),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "nesterov": True}, "Nesterov momentum requires"),
    ("Adam", {"eps": -1e-8}, "Invalid epsilon value: -1e-08"),
    ("Adam", {"betas": (1.0, 0.999)}, "Invalid beta parameter at index 0: 1.0"),
    ("Adam", {"betas": (-0.1, 0.999)}, "Invalid beta parameter at index 0: -0.1"),
    ("AdamW", {"betas": (0.9, 1.5)}, "Invalid beta parameter at index 1: 1.5"),
    ("Adam", {"weight_decay": -0.1}, "Invalid weight_decay value: -0.1"),
    ("AdamW", {"weight_decay": -0.1}, "Invalid weight_decay value: -0.1"),
    ("RMSprop", {"alpha": -0.5}, "Invalid alpha value: -0.5"),
    ("RMSprop", {"eps": -1.0}, "Invalid epsilon value: -1.0"),
    ("RMSprop", {"momentum": -1.0}, "Invalid momentum value: -1.0"),
    ("RMSprop", {"weight_decay": -1.0}, "Invalid weight_decay value: -1.0"),
])
def test_hyperparameter_validation_matches_torch(name: str, kwargs: dict[str, Any], msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        getattr(dt.optim, name)(make_params()[0], **kwargs)
    with pytest.raises(ValueError, match=msg.split(":")[0]):
        getattr(torch.optim, name)(make_params()[1], **kwargs)


def test_betas_must_be_a_pair() -> None:
    with pytest.raises(ValueError, match="betas must be a pair"):
        dt.optim.Adam(make_params()[0], betas=(0.9,))  # type: ignore[arg-type]


def test_tensor_lr_must_have_one_element() -> None:
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        dt.optim.SGD(make_params()[0], lr=dt.tensor([0.1, 0.2]))


@pytest.mark.parametrize("kwargs,exc", [({"differentiable": True}, NotImplementedError),
                                        ({"capturable": True}, NotImplementedError),
                                        ({"fused": True, "foreach": True}, RuntimeError)])
def test_unsupported_modes(kwargs: dict[str, Any], exc: type) -> None:
    with pytest.raises(exc):
        dt.optim.Adam(make_params()[0], **kwargs)


def test_foreach_and_fused_flags_are_accepted() -> None:
    dps, tps = make_params()
    run_pair(dt.optim.Adam(dps, foreach=False, fused=False), torch.optim.Adam(tps, foreach=False), dps, tps, steps=3)


def test_gradient_with_wrong_shape() -> None:
    p = dt.nn.Parameter(np.ones(3, dtype=np.float32))
    p.grad = dt.ones(2)
    with pytest.raises(RuntimeError, match="has a gradient of shape"):
        dt.optim.SGD([p], lr=0.1).step()


def _opt_for_loading() -> tuple[Any, Any]:
    a, b = (dt.nn.Parameter(np.ones(3, dtype=np.float32)) for _ in range(2))
    opt = dt.optim.Adam([{"params": [a]}, {"params": [b], "lr": 0.1}])
    a.grad, b.grad = dt.ones(3), dt.ones(3)
    opt.step()
    return opt, opt.state_dict()


def test_load_state_dict_group_count_mismatch() -> None:
    _, sd = _opt_for_loading()
    other = dt.optim.Adam([dt.nn.Parameter(np.ones(3, dtype=np.float32))])
    with pytest.raises(ValueError, match="different number of parameter groups: it has 2, this optimizer has 1"):
        other.load_state_dict(sd)


def test_load_state_dict_group_size_mismatch() -> None:
    _, sd = _opt_for_loading()
    ps = [dt.nn.Parameter(np.ones(3, dtype=np.float32)) for _ in range(3)]
    other = dt.optim.Adam([{"params": ps[:2]}, {"params": ps[2:]}])
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group: group 0 has 1"):
        other.load_state_dict(sd)


def test_load_state_dict_bad_content_leaves_optimizer_untouched() -> None:
    opt, sd = _opt_for_loading()
    before = opt.state_dict()
    with pytest.raises(ValueError, match="'state' and 'param_groups'"):
        opt.load_state_dict({"state": {}})
    bad = copy.deepcopy(sd)
    bad["state"][7] = {}
    with pytest.raises(ValueError, match="state for parameter 7"):
        opt.load_state_dict(bad)
    bad = copy.deepcopy(sd)
    bad["state"][0]["exp_avg"] = dt.zeros(4)
    with pytest.raises(ValueError, match=r"'exp_avg' for parameter 0 has shape \[4\], but the parameter has shape \[3\]"):
        opt.load_state_dict(bad)
    bad = copy.deepcopy(sd)
    bad["state"][0] = [1, 2]
    with pytest.raises(TypeError, match="must be a dict"):
        opt.load_state_dict(bad)
    after = opt.state_dict()
    assert after["param_groups"] == before["param_groups"]
    assert all(after["state"][k][n] is before["state"][k][n] for k in before["state"] for n in before["state"][k])


def test_state_dict_survives_dt_save_and_load(tmp_path: Any) -> None:
    dps, _ = make_params(9)
    opt = dt.optim.AdamW(dps, lr=0.01)
    for p in dps:
        p.grad = dt.ones(*p.shape)
    opt.step()
    path = tmp_path / "opt.dtorch"
    dt.save(opt.state_dict(), path)
    fresh = dt.optim.AdamW([dt.nn.Parameter(p._data.copy()) for p in dps])
    fresh.load_state_dict(dt.load(path))
    assert fresh.param_groups[0]["betas"] == (0.9, 0.999) and fresh.param_groups[0]["lr"] == 0.01
    for p, q in zip(dps, fresh.param_groups[0]["params"]):
        for k, v in opt.state[p].items():
            np.testing.assert_array_equal(fresh.state[q][k]._data, v._data)
