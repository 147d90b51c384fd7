"""dtorch.optim.lr_scheduler against torch.optim.lr_scheduler: the same learning rates at every step."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import dtorch as dt

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

LRS = (0.1, 0.05)
STEPS = 30


def make_opts(name: str = "SGD", **kwargs: Any) -> tuple[Any, torch.optim.Optimizer]:
    a, b = np.ones((2, 2), dtype=np.float32), np.ones(3, dtype=np.float32)
    dgroups = [{"params": [dt.nn.Parameter(a.copy())], "lr": LRS[0]}, {"params": [dt.nn.Parameter(b.copy())]}]
    tgroups = [{"params": [torch.nn.Parameter(torch.from_numpy(a.copy()))], "lr": LRS[0]},
               {"params": [torch.nn.Parameter(torch.from_numpy(b.copy()))]}]
    return (getattr(dt.optim, name)(dgroups, lr=LRS[1], **kwargs),
            getattr(torch.optim, name)(tgroups, lr=LRS[1], **kwargs))


def lr_sequences(make: Callable[[Any, Any], Any], steps: int = STEPS, opt: str = "SGD",
                 opt_kwargs: dict[str, Any] | None = None, keys: tuple[str, ...] = ("lr",)) -> None:
    """Build the same scheduler in both frameworks and compare every step's values of `keys`."""
    dopt, topt = make_opts(opt, **(opt_kwargs if opt_kwargs is not None else {"momentum": 0.9}))
    dsched, tsched = make(dt.optim.lr_scheduler, dopt), make(torch.optim.lr_scheduler, topt)

    def check(step: int) -> None:
        assert dsched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-12, abs=1e-15), f"step {step}"
        for dg, tg in zip(dopt.param_groups, topt.param_groups):
            for k in keys:
                assert dg[k] == pytest.approx(tg[k], rel=1e-12, abs=1e-15), f"{k} at step {step}"

    check(0)
    assert getattr(dsched, "last_epoch", None) == getattr(tsched, "last_epoch", None)
    for s in range(1, steps + 1):
        dopt.step()
        topt.step()
        dsched.step()
        tsched.step()
        check(s)
    assert getattr(dsched, "last_epoch", None) == getattr(tsched, "last_epoch", None)


def _warmup(step: int) -> float:
    return min(1.0, (step + 1) / 10)


SCHEDULES: dict[str, Callable[[Any, Any], Any]] = {
    "StepLR": lambda m, o: m.StepLR(o, step_size=7, gamma=0.5),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[5, 12, 12, 20], gamma=0.3),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR-eta_min": lambda m, o: m.CosineAnnealingLR(o, T_max=10, eta_min=0.001),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=15),
    "CosineAnnealingLR-T1": lambda m, o: m.CosineAnnealingLR(o, T_max=1, eta_min=0.01),
    "LambdaLR-warmup": lambda m, o: m.LambdaLR(o, lambda step: min(1.0, (step + 1) / 10)),
    "LambdaLR-per-group": lambda m, o: m.LambdaLR(o, [_warmup, lambda e: 0.95 ** e]),
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lambda e: 0.95),
    "LinearLR-up": lambda m, o: m.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=8),
    "LinearLR-down": lambda m, o: m.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=10),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=4),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=10, power=2.0),
    "SequentialLR-warmup-cosine": lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.1, total_iters=5), m.CosineAnnealingLR(o, T_max=25)], milestones=[5]),
    "SequentialLR-three": lambda m, o: m.SequentialLR(
        o, [m.ConstantLR(o, factor=0.5, total_iters=3), m.ExponentialLR(o, gamma=0.9), m.StepLR(o, 3)],
        milestones=[6, 15]),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler([m.ConstantLR(o, factor=0.5, total_iters=4),
                                                         m.ExponentialLR(o, gamma=0.9)]),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2, eta_min=0.01),
    "CosineAnnealingWarmRestarts-T_mult1": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=4),
}


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_lr_sequence_matches_torch(name: str) -> None:
    lr_sequences(SCHEDULES[name])


def test_lambda_warmup_values() -> None:
    dopt, _ = make_opts()
    sched = dt.optim.lr_scheduler.LambdaLR(dopt, lambda step: min(1.0, (step + 1) / 10))
    seen = [sched.get_last_lr()[0]]
    for _ in range(12):
        dopt.step()
        sched.step()
        seen.append(sched.get_last_lr()[0])
    assert seen[:10] == pytest.approx([0.1 * (i + 1) / 10 for i in range(10)])
    assert seen[10:] == pytest.approx([0.1, 0.1, 0.1])


ONE_CYCLE: dict[str, tuple[Callable[[Any, Any], Any], str, dict[str, Any], tuple[str, ...]]] = {
    "cos-sgd": (lambda m, o: m.OneCycleLR(o, max_lr=[0.5, 0.2], total_steps=30), "SGD", {"momentum": 0.9},
                ("lr", "momentum")),
    "linear-sgd": (lambda m, o: m.OneCycleLR(o, max_lr=0.3, total_steps=30, anneal_strategy="linear",
                                             pct_start=0.4, div_factor=10.0, final_div_factor=100.0),
                   "SGD", {"momentum": 0.9}, ("lr", "momentum")),
    "three-phase": (lambda m, o: m.OneCycleLR(o, max_lr=0.3, epochs=5, steps_per_epoch=6, three_phase=True),
                    "SGD", {"momentum": 0.9}, ("lr", "momentum")),
    "adam-betas": (lambda m, o: m.OneCycleLR(o, max_lr=0.01, total_steps=30, base_momentum=0.8,
                                             max_momentum=[0.95, 0.9]), "Adam", {}, ("lr", "betas")),
    "no-momentum-cycle": (lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=30, cycle_momentum=False),
                          "RMSprop", {}, ("lr", "momentum")),
}


@pytest.mark.parametrize("name", list(ONE_CYCLE))
def test_one_cycle_matches_torch(name: str) -> None:
    make, opt, kw, keys = ONE_CYCLE[name]
    lr_sequences(make, steps=30, opt=opt, opt_kwargs=kw, keys=keys)


def test_one_cycle_raises_when_stepped_past_total_steps() -> None:
    for mod, opt in zip((dt.optim.lr_scheduler, torch.optim.lr_scheduler), make_opts()):
        sched = mod.OneCycleLR(opt, max_lr=0.1, total_steps=10)
        for _ in range(10):
            sched.step()
        with pytest.raises(ValueError, match="Tried to step 11 times. The specified number of total steps is 10"):
            sched.step()


def test_step_with_explicit_epoch_uses_closed_form() -> None:
    for make in (lambda m, o: m.StepLR(o, 3, 0.5), lambda m, o: m.CosineAnnealingLR(o, 10),
                 lambda m, o: m.MultiStepLR(o, [2, 4]), lambda m, o: m.ExponentialLR(o, 0.9),
                 lambda m, o: m.LinearLR(o, 0.5, total_iters=4), lambda m, o: m.PolynomialLR(o, 6),
                 lambda m, o: m.ConstantLR(o, 0.5, 3)):
        dopt, topt = make_opts()
        ds, ts = make(dt.optim.lr_scheduler, dopt), make(torch.optim.lr_scheduler, topt)
        for epoch in (5, 2, 7, 0):
            with pytest.warns(UserWarning, match="epoch parameter"):
                ds.step(epoch)
            ts.step(epoch)
            assert ds.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12)


def test_warm_restarts_fractional_epochs() -> None:
    dopt, topt = make_opts()
    ds = dt.optim.lr_scheduler.CosineAnnealingWarmRestarts(dopt, T_0=3, T_mult=2)
    ts = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(topt, T_0=3, T_mult=2)
    for epoch in np.arange(0, 20, 0.35):
        ds.step(float(epoch))
        ts.step(float(epoch))
        assert ds.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12)
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        ds.step(-1)


PLATEAU = {
    "min-rel": {"patience": 2},
    "max-abs-cooldown": {"mode": "max", "threshold_mode": "abs", "threshold": 0.1, "patience": 1, "cooldown": 2},
    "min-lr-list": {"factor": 0.5, "patience": 0, "min_lr": [0.02, 0.01]},
}


@pytest.mark.parametrize("name", list(PLATEAU))
def test_reduce_on_plateau_matches_torch(name: str) -> None:
    dopt, topt = make_opts()
    ds = dt.optim.lr_scheduler.ReduceLROnPlateau(dopt, **PLATEAU[name])
    ts = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **PLATEAU[name])
    metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.89, 0.9, 0.9, 0.9, 0.9, 1.2, 1.3, 1.25, 1.25, 1.25, 1.25, 0.5]
    for m in metrics:
        ds.step(m)
        ts.step(m)
        assert ds.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12)
        assert [g["lr"] for g in dopt.param_groups] == pytest.approx([g["lr"] for g in topt.param_groups])
    assert ds.num_bad_epochs == ts.num_bad_epochs and ds.best == ts.best


def test_reduce_on_plateau_state_dict_round_trip() -> None:
    dopt, _ = make_opts()
    a = dt.optim.lr_scheduler.ReduceLROnPlateau(dopt, patience=1)
    for m in (1.0, 1.0, 1.0):
        a.step(m)
    b = dt.optim.lr_scheduler.ReduceLROnPlateau(make_opts()[0], patience=1)
    b.load_state_dict(a.state_dict())
    assert (b.best, b.num_bad_epochs, b.last_epoch) == (a.best, a.num_bad_epochs, a.last_epoch)


# ---------------------------------------------------------------------- base behaviour and state


def test_construction_sets_initial_lr_and_base_lrs() -> None:
    dopt, _ = make_opts()
    sched = dt.optim.lr_scheduler.StepLR(dopt, step_size=2)
    assert [g["initial_lr"] for g in dopt.param_groups] == list(LRS)
    assert sched.base_lrs == list(LRS) and sched.last_epoch == 0 and sched.get_last_lr() == list(LRS)
    assert dt.optim.lr_scheduler is __import__("dtorch.optim.lr_scheduler", fromlist=["x"])


def test_resuming_with_last_epoch() -> None:
    dopt, topt = make_opts()
    for opt in (dopt, topt):
        for g in opt.param_groups:
            g["initial_lr"] = g["lr"]
    ds = dt.optim.lr_scheduler.StepLR(dopt, step_size=2, gamma=0.5, last_epoch=3)
    ts = torch.optim.lr_scheduler.StepLR(topt, step_size=2, gamma=0.5, last_epoch=3)
    assert ds.last_epoch == ts.last_epoch == 4
    assert ds.get_last_lr() == pytest.approx(ts.get_last_lr())


class Halve:
    """A callable object: its attributes travel in LambdaLR's state_dict."""

    def __init__(self) -> None:
        self.factor = 0.5

    def __call__(self, epoch: int) -> float:
        return self.factor ** epoch


@pytest.mark.parametrize("name", ["SequentialLR-warmup-cosine", "CosineAnnealingLR-eta_min", "ChainedScheduler",
                                  "MultiStepLR", "LambdaLR-warmup"])
def test_scheduler_state_dict_round_trip(name: str) -> None:
    make = SCHEDULES[name]
    ref_opt, _ = make_opts()
    ref = make(dt.optim.lr_scheduler, ref_opt)
    for _ in range(8):
        ref_opt.step()
        ref.step()
    opt_state, sched_state = ref_opt.state_dict(), ref.state_dict()
    assert "optimizer" not in sched_state
    new_opt, _ = make_opts()
    new = make(dt.optim.lr_scheduler, new_opt)
    new_opt.load_state_dict(opt_state)
    new.load_state_dict(sched_state)
    for _ in range(15):
        ref_opt.step()
        ref.step()
        new_opt.step()
        new.step()
        assert new.get_last_lr() == pytest.approx(ref.get_last_lr(), rel=1e-12)


def test_lambda_state_dict_keeps_callable_objects_only() -> None:
    dopt, _ = make_opts()
    halve = Halve()
    sched = dt.optim.lr_scheduler.LambdaLR(dopt, [halve, lambda e: 1.0])
    state = sched.state_dict()
    assert state["lr_lambdas"] == [{"factor": 0.5}, None]
    halve.factor = 0.9
    sched.load_state_dict(state)
    assert halve.factor == 0.5 and "lr_lambdas" in state


def test_stepping_the_scheduler_before_the_optimizer_warns() -> None:
    dopt, _ = make_opts()
    sched = dt.optim.lr_scheduler.ExponentialLR(dopt, gamma=0.5)
    with pytest.warns(UserWarning, match=r"before `optimizer.step\(\)`"):
        sched.step()


# ---------------------------------------------------------------------- error paths

M = dt.optim.lr_scheduler


class NoMomentum(dt.optim.Optimizer):
    def __init__(self, params: Any) -> None:
        super().__init__(params, {"lr": 0.1})

    def step(self, closure: Any = None) -> None:
        return None


@pytest.mark.parametrize("build,exc,msg", [
    (lambda o: M.StepLR("not an optimizer", 3), TypeError, "is not an Optimizer"),
    (lambda o: M.StepLR(o, 3, last_epoch=5), KeyError, "initial_lr"),
    (lambda o: M.LambdaLR(o, [_warmup]), ValueError, "Expected 2 lr_lambdas, but got 1"),
    (lambda o: M.MultiplicativeLR(o, 0.9), TypeError, "lr_lambda should be a function"),
    (lambda o: M.ConstantLR(o, factor=1.5), ValueError, "between 0 and 1"),
    (lambda o: M.LinearLR(o, start_factor=0), ValueError, "Starting multiplicative factor"),
    (lambda o: M.LinearLR(o, start_factor=1.5), ValueError, "Starting multiplicative factor"),
    (lambda o: M.LinearLR(o, end_factor=1.5), ValueError, "Ending multiplicative factor"),
    (lambda o: M.SequentialLR(o, [], milestones=[]), ValueError, "at least one scheduler"),
    (lambda o: M.SequentialLR(o, [M.StepLR(o, 2), M.StepLR(o, 3)], milestones=[]), ValueError,
     "one more than the number of milestone points"),
    (lambda o: M.SequentialLR(o, [M.StepLR(make_opts()[0], 2)], milestones=[]), ValueError, "same optimizer"),
    (lambda o: M.SequentialLR(o, [M.ReduceLROnPlateau(o)], milestones=[]), ValueError, "ReduceLROnPlateau"),
    (lambda o: M.SequentialLR(o, [object()], milestones=[]), TypeError, "should have `optimizer`"),
    (lambda o: M.ChainedScheduler([]), ValueError, "at least one scheduler to be chained"),
    (lambda o: M.ChainedScheduler([M.StepLR(o, 2), M.StepLR(make_opts()[0], 2)]), ValueError, "same optimizer"),
    (lambda o: M.OneCycleLR(o, max_lr=0.1), ValueError, "either total_steps OR"),
    (lambda o: M.OneCycleLR(o, max_lr=0.1, total_steps=0), ValueError, "positive integer total_steps"),
    (lambda o: M.OneCycleLR(o, max_lr=0.1, epochs=0, steps_per_epoch=3), ValueError, "positive integer epochs"),
    (lambda o: M.OneCycleLR(o, max_lr=0.1, epochs=2, steps_per_epoch=-1), ValueError,
     "positive integer steps_per_epoch"),
    (lambda o: M.OneCycleLR(o, max_lr=0.1, total_steps=9, pct_start=1.5), ValueError, "pct_start"),
    (lambda o: M.OneCycleLR(o, max_lr=0.1, total_steps=9, pct_start=0), ValueError, "pct_start"),
    (lambda o: M.OneCycleLR(o, max_lr=0.1, total_steps=9, anneal_strategy="exp"), ValueError, "anneal_strategy"),
    (lambda o: M.OneCycleLR(o, max_lr=[0.1], total_steps=9), ValueError, "max_lr must have the same length"),
    (lambda o: M.OneCycleLR(NoMomentum([dt.nn.Parameter(np.ones(1, dtype=np.float32))]), max_lr=0.1,
                            total_steps=9), ValueError, "must support momentum or beta1"),
    (lambda o: M.OneCycleLR(None, max_lr=0.1, total_steps=9), TypeError, "is not an Optimizer"),
    (lambda o: M.CosineAnnealingWarmRestarts(o, T_0=0), ValueError, "positive integer T_0"),
    (lambda o: M.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0), ValueError, "T_mult >= 1"),
    (lambda o: M.CosineAnnealingWarmRestarts(o, T_0=2, eta_min="0"), ValueError, "eta_min"),
    (lambda o: M.ReduceLROnPlateau(o, factor=1.0), ValueError, "Factor should be < 1.0"),
    (lambda o: M.ReduceLROnPlateau(o, mode="avg"), ValueError, "mode avg is unknown"),
    (lambda o: M.ReduceLROnPlateau(o, threshold_mode="pct"), ValueError, "threshold mode pct is unknown"),
    (lambda o: M.ReduceLROnPlateau(o, min_lr=[0.1]), ValueError, "expected 2 min_lrs, got 1"),
    (lambda o: M.ReduceLROnPlateau(3), TypeError, "is not an Optimizer"),
])
def test_scheduler_errors(build: Callable[[Any], Any], exc: type, msg: str) -> None:
    dopt, _ = make_opts()
    with pytest.raises(exc, match=msg):
        build(dopt)


def test_plateau_with_a_group_added_later_and_a_min_lr_list() -> None:
    dopt, _ = make_opts()
    sched = M.ReduceLROnPlateau(dopt, patience=0, min_lr=[0.0, 0.0])
    dopt.add_param_group({"params": [dt.nn.Parameter(np.ones(1, dtype=np.float32))]})
    sched.step(1.0)
    with pytest.raises(RuntimeError, match="differs from when `ReduceLROnPlateau` was initialized"):
        sched.step(2.0)
    scalar = M.ReduceLROnPlateau(make_opts()[0], patience=0, min_lr=0.001)
    scalar.optimizer.add_param_group({"params": [dt.nn.Parameter(np.ones(1, dtype=np.float32))]})
    scalar.step(1.0)
    scalar.step(2.0)
    assert scalar.min_lrs == [0.001] * 3


def test_base_scheduler_without_get_lr() -> None:
    class Incomplete(M.LRScheduler):
        pass

    with pytest.raises(NotImplementedError, match="does not implement get_lr"):
        Incomplete(make_opts()[0])


def test_get_lr_returning_the_wrong_count() -> None:
    class Wrong(M.LRScheduler):
        def get_lr(self) -> list[float]:
            return [0.1]

    with pytest.raises(RuntimeError, match="returned 1 learning rates for 2 parameter groups"):
        Wrong(make_opts()[0])


def test_cosine_closed_form_matches_chainable_form() -> None:
    dopt, _ = make_opts()
    sched = M.CosineAnnealingLR(dopt, T_max=12, eta_min=0.002)
    for e in range(1, 25):
        dopt.step()
        sched.step()
        expected = [0.002 + (b - 0.002) * (1 + math.cos(math.pi * e / 12)) / 2 for b in LRS]
        assert sched.get_last_lr() == pytest.approx(expected, rel=1e-9)
