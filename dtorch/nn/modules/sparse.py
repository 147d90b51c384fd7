"""`Embedding`: a lookup table of `num_embeddings` vectors of size `embedding_dim`."""

from __future__ import annotations

from typing import Any

from ...autograd.grad_mode import no_grad
from ...creation import zeros
from ...tensor import Tensor
from ..functional.sparse import embedding, resolve_padding_idx
from ..parameter import Parameter
from .module import Module

__all__ = ["Embedding"]


class Embedding(Module):
    """Maps integer indices (any shape) to rows of a (num_embeddings, embedding_dim) weight, initialized N(0, 1).

    The `padding_idx` row starts at zero and gets no gradient; `max_norm` renormalizes looked-up rows in place.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight: Tensor | None = None, _freeze: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if sparse:
            raise NotImplementedError("Embedding(sparse=True): sparse gradients are not supported by dtorch; "
                                      "use sparse=False")
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = resolve_padding_idx(padding_idx, num_embeddings)
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = Parameter(zeros((num_embeddings, embedding_dim), dtype=dtype, device=device),
                                    requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise AssertionError(f"Shape of weight does not match num_embeddings and embedding_dim: got "
                                     f"{list(_weight.shape)}, expected [{num_embeddings}, {embedding_dim}]")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        with no_grad():
            self.weight.normal_()
            if self.padding_idx is not None:
                self.weight._data[self.padding_idx] = 0

    def forward(self, input: Tensor) -> Tensor:
        return embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                         self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, padding_idx: int | None = None,
                        max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:
        """An Embedding holding `embeddings` (2-D) as its weight; frozen (no gradient) unless freeze=False."""
        if not isinstance(embeddings, Tensor) or embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional (num_embeddings, "
                                 "embedding_dim)")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse, _weight=embeddings,
                   _freeze=freeze)
