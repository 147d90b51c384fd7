"""User errors raise the same exception type as PyTorch, with a message that says what was wrong."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import dtorch as dt

# name -> (dtorch call, torch call, regex the dtorch message must contain)
CASES: dict[str, tuple[Callable[[], Any], Callable[[], Any], str]] = {
    "broadcast_add": (lambda: dt.ones(2, 3) + dt.ones(4), lambda: torch.ones(2, 3) + torch.ones(4),
                      r"size of tensor a \(3\) must match the size of tensor b \(4\)"),
    "broadcast_mul_3d": (lambda: dt.ones(2, 3, 4) * dt.ones(3, 3, 1), lambda: torch.ones(2, 3, 4) * torch.ones(3, 3, 1),
                         "must match"),
    "matmul_dtype": (lambda: dt.ones(2, 3) @ dt.ones(3, 2, dtype=dt.float64),
                     lambda: torch.ones(2, 3) @ torch.ones(3, 2, dtype=torch.float64), "float32 and dtorch.float64"),
    "matmul_shape": (lambda: dt.ones(2, 3) @ dt.ones(2, 3), lambda: torch.ones(2, 3) @ torch.ones(2, 3),
                     r"\(2x3 and 2x3\)"),
    "matmul_0d": (lambda: dt.matmul(dt.tensor(1.0), dt.ones(2)), lambda: torch.matmul(torch.tensor(1.0), torch.ones(2)),
                  "at least 1D"),
    "index_float_tensor": (lambda: dt.ones(3)[dt.tensor([0.0])], lambda: torch.ones(3)[torch.tensor([0.0])],
                           "long, int, byte or bool"),
    "index_out_of_range": (lambda: dt.ones(3)[3], lambda: torch.ones(3)[3], "out of bounds"),
    "index_too_many": (lambda: dt.ones(3)[0, 0], lambda: torch.ones(3)[0, 0], "too many indices"),
    "index_float": (lambda: dt.ones(3)[0.5], lambda: torch.ones(3)[0.5], "only integers, slices"),
    "index_mask_shape": (lambda: dt.ones(3)[dt.tensor([True, False])],
                         lambda: torch.ones(3)[torch.tensor([True, False])], ""),
    "negative_step": (lambda: dt.ones(3)[::-1], lambda: torch.ones(3)[::-1], "step must be greater than zero"),
    "sum_bad_dim": (lambda: dt.ones(2, 3).sum(2), lambda: torch.ones(2, 3).sum(2),
                    r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
    "mean_bad_dim": (lambda: dt.ones(2, 3).mean(-3), lambda: torch.ones(2, 3).mean(-3), "Dimension out of range"),
    "max_bad_dim": (lambda: dt.ones(2, 3).max(5), lambda: torch.ones(2, 3).max(5), "Dimension out of range"),
    "argmax_bad_dim": (lambda: dt.ones(2, 3).argmax(2), lambda: torch.ones(2, 3).argmax(2), "Dimension out of range"),
    "var_bad_dim": (lambda: dt.ones(2, 3).var(3), lambda: torch.ones(2, 3).var(3), "Dimension out of range"),
    "softmax_like_dim_0d": (lambda: dt.tensor(1.0).sum(1), lambda: torch.tensor(1.0).sum(1), "Dimension out of range"),
    "transpose_bad_dim": (lambda: dt.ones(2, 3).transpose(0, 2), lambda: torch.ones(2, 3).transpose(0, 2),
                          "Dimension out of range"),
    "squeeze_bad_dim": (lambda: dt.ones(2, 3).squeeze(4), lambda: torch.ones(2, 3).squeeze(4), "Dimension out of range"),
    "unsqueeze_bad_dim": (lambda: dt.ones(2, 3).unsqueeze(4), lambda: torch.ones(2, 3).unsqueeze(4),
                          "Dimension out of range"),
    "cat_bad_dim": (lambda: dt.cat([dt.ones(2)], 1), lambda: torch.cat([torch.ones(2)], 1), "Dimension out of range"),
    "cat_shapes": (lambda: dt.cat([dt.ones(2, 3), dt.ones(2, 4)]), lambda: torch.cat([torch.ones(2, 3), torch.ones(2, 4)]),
                   "Sizes of tensors must match except in dimension 0"),
    "stack_shapes": (lambda: dt.stack([dt.ones(2), dt.ones(3)]), lambda: torch.stack([torch.ones(2), torch.ones(3)]),
                     "stack expects each tensor to be equal size"),
    "reshape_numel": (lambda: dt.ones(2, 3).reshape(4, 2), lambda: torch.ones(2, 3).reshape(4, 2),
                      r"shape '\[4, 2\]' is invalid for input of size 6"),
    "view_strides": (lambda: dt.ones(2, 3).T.view(6), lambda: torch.ones(2, 3).T.view(6), "Use .reshape"),
    "permute_len": (lambda: dt.ones(2, 3).permute(0), lambda: torch.ones(2, 3).permute(0), "number of dimensions"),
    "permute_dup": (lambda: dt.ones(2, 3).permute(0, 0), lambda: torch.ones(2, 3).permute(0, 0), "duplicate"),
    "expand_bad": (lambda: dt.ones(2, 3).expand(3, 3), lambda: torch.ones(2, 3).expand(3, 3),
                   "expanded size of the tensor"),
    "split_sizes": (lambda: dt.ones(5).split([2, 2]), lambda: torch.ones(5).split([2, 2]), "sum exactly to 5"),
    "chunk_zero": (lambda: dt.ones(5).chunk(0), lambda: torch.ones(5).chunk(0), "greater than 0"),
    "where_cond_dtype": (lambda: dt.where(dt.ones(2), dt.ones(2), dt.ones(2)),
                         lambda: torch.where(torch.ones(2), torch.ones(2), torch.ones(2)), "bool"),
    "mean_int": (lambda: dt.tensor([1, 2]).mean(), lambda: torch.tensor([1, 2]).mean(), "floating point"),
    "sub_bool": (lambda: dt.tensor([True]) - dt.tensor([False]), lambda: torch.tensor([True]) - torch.tensor([False]),
                 "Subtraction, the `-` operator"),
    "neg_bool": (lambda: -dt.tensor([True]), lambda: -torch.tensor([True]), "bool"),
    "int_div_zero": (lambda: dt.tensor([1]) // dt.tensor([0]), lambda: torch.tensor([1]) // torch.tensor([0]),
                     "ZeroDivisionError"),
    "int_neg_pow": (lambda: dt.tensor([2]) ** -1, lambda: torch.tensor([2]) ** -1, "negative integer powers"),
    "inplace_cast": (lambda: dt.tensor([1, 2]).add_(1.5), lambda: torch.tensor([1, 2]).add_(1.5),
                     "can't be cast to the desired output type"),
    "inplace_shape": (lambda: dt.zeros(3).add_(dt.ones(2, 3)), lambda: torch.zeros(3).add_(torch.ones(2, 3)),
                      r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"),
    "leaf_inplace": (lambda: dt.ones(2, requires_grad=True).mul_(2), lambda: torch.ones(2, requires_grad=True).mul_(2),
                     "leaf Variable that requires grad"),
    "int_requires_grad": (lambda: dt.tensor([1], requires_grad=True), lambda: torch.tensor([1], requires_grad=True),
                          "floating point"),
    "backward_nonscalar": (lambda: (dt.ones(2, requires_grad=True) * 2).backward(),
                           lambda: (torch.ones(2, requires_grad=True) * 2).backward(), "only for scalar outputs"),
    "backward_no_grad": (lambda: dt.ones(2).sum().backward(), lambda: torch.ones(2).sum().backward(),
                         "does not require grad"),
    "item_many": (lambda: dt.ones(2).item(), lambda: torch.ones(2).item(), "2 elements"),
    "bool_ambiguous": (lambda: bool(dt.ones(2)), lambda: bool(torch.ones(2)), "ambiguous"),
    "len_0d": (lambda: len(dt.tensor(1.0)), lambda: len(torch.tensor(1.0)), "0-d"),
    "iter_0d": (lambda: iter(dt.tensor(1.0)), lambda: iter(torch.tensor(1.0)), "0-d"),
    "numpy_requires_grad": (lambda: dt.ones(2, requires_grad=True).numpy(),
                            lambda: torch.ones(2, requires_grad=True).numpy(), "requires grad"),
    "zeros_negative": (lambda: dt.zeros(-2), lambda: torch.zeros(-2), "negative dimension"),
    "ragged": (lambda: dt.tensor([[1, 2], [3]]), lambda: torch.tensor([[1, 2], [3]]), "ragged"),
    "arange_zero_step": (lambda: dt.arange(0, 5, 0), lambda: torch.arange(0, 5, 0), "step must be nonzero"),
    "arange_sign": (lambda: dt.arange(5, 0), lambda: torch.arange(5, 0), "inconsistent with step sign"),
    "randint_bounds": (lambda: dt.randint(5, 2, (3,)), lambda: torch.randint(5, 2, (3,)), "from=5 >= to=2"),
    "rand_int_dtype": (lambda: dt.rand(2, dtype=dt.int64), lambda: torch.rand(2, dtype=torch.int64), "floating point"),
    "clamp_none": (lambda: dt.clamp(dt.ones(2)), lambda: torch.clamp(torch.ones(2)), "At least one of 'min' or 'max'"),
    "bitwise_float": (lambda: dt.ones(2) & dt.ones(2), lambda: torch.ones(2) & torch.ones(2), "bitwise_and"),
    "invert_float": (lambda: ~dt.ones(2), lambda: ~torch.ones(2), "integer and Boolean"),
    "gather_index_dtype": (lambda: dt.ones(2, 2).gather(1, dt.tensor([[0.0]])),
                           lambda: torch.ones(2, 2).gather(1, torch.tensor([[0.0]])), "int64"),
    "setitem_shape": (lambda: dt.zeros(2, 3).__setitem__(0, dt.ones(4)),
                      lambda: torch.zeros(2, 3).__setitem__(0, torch.ones(4)), "shape mismatch"),
    "second_backward": (lambda: _twice(dt), lambda: _twice(torch), "backward through the graph a second time"),
    "grad_unused": (lambda: _unused(dt), lambda: _unused(torch), "not have been used in the graph"),
    "view_of_leaf_inplace": (lambda: dt.ones(3, requires_grad=True)[1:].mul_(2),
                             lambda: torch.ones(3, requires_grad=True)[1:].mul_(2), "view of a leaf Variable"),
    "masked_fill_mask_dtype": (lambda: dt.ones(2).masked_fill(dt.tensor([1, 0]), 0.0),
                               lambda: torch.ones(2).masked_fill(torch.tensor([1, 0]), 0.0), "boolean masks"),
}


def _twice(m: Any) -> None:
    x = m.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    y.backward()


def _unused(m: Any) -> None:
    x = m.ones(2, requires_grad=True)
    u = m.ones(2, requires_grad=True)
    m.autograd.grad((x * 2).sum(), [x, u])


@pytest.mark.parametrize("name", list(CASES))
def test_error_type_matches_torch(name: str) -> None:
    fd, ft, pattern = CASES[name]
    with pytest.raises(Exception) as te:
        ft()
    with pytest.raises(te.type, match=pattern):
        fd()


def test_unknown_device() -> None:
    with pytest.raises(dt.DeviceError) as e:
        dt.zeros(2, device="cuda")
    msg = str(e.value)
    assert "'cuda'" in msg and "cpu" in msg
    assert isinstance(e.value, RuntimeError)  # torch raises RuntimeError when CUDA is unavailable
    for call in (lambda: dt.ones(2, device="cuda:0"), lambda: dt.tensor([1.0], device="mps"),
                 lambda: dt.ones(2).to("cuda"), lambda: dt.ones(2).cuda(), lambda: dt.randn(2, device="xla"),
                 lambda: dt.arange(3, device="cuda"), lambda: dt.Generator(device="cuda")):
        with pytest.raises(dt.DeviceError, match="not available"):
            call()
    with pytest.raises(ValueError, match="invalid device string"):
        dt.device("cuda:x")
    assert dt.ones(2).to("cpu").device == dt.device("cpu")


def test_unknown_dtype() -> None:
    for call in (lambda: dt.zeros(2, dtype="float33"), lambda: dt.ones(2).type("int128"),
                 lambda: dt.tensor([1], dtype="complex64"), lambda: dt.arange(3, dtype="fp8")):
        with pytest.raises(TypeError, match="unknown dtype"):
            call()
    with pytest.raises(TypeError, match="has no dtorch equivalent"):
        dt.from_numpy(__import__("numpy").array(["a"]))
