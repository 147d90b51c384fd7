"""Differentiable primitives of the nn layers (conv, pooling, normalization, losses ...)."""
