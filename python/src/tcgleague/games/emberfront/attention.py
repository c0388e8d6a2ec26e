"""EntityAttention: the optional transformer layers of TCGPolicy's encoder over the entity rows."""

from __future__ import annotations

import math

import torch
from torch import nn


class EntityAttention(nn.Module):
    """One pre-norm transformer layer over the entity rows. Pooling and the pointer heads see
    each entity on its own; attention lets an entity's embedding depend on the others (what a
    minion is worth depends on what it can attack and what blocks it). Only present entities
    and the NONE row are attended to, so no row ever attends to nothing."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads, self.scale = heads, 1.0 / math.sqrt(dim // heads)
        self.norm_attention, self.norm_ff = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.ff = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))

    def forward(self, x: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
        """x [B, N, D], visible [B, N] (1.0 = may be attended to) -> [B, N, D]."""
        b, n, d = x.shape
        q, k, v = self.qkv(self.norm_attention(x)).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        # an additive mask, not -inf: a fully masked row would give NaN (it cannot happen, NONE is visible)
        scores = (q @ k.transpose(-1, -2)) * self.scale + (visible[:, None, None, :] - 1.0) * 1e9
        mixed = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, n, d)
        x = x + self.proj(mixed)
        return x + self.ff(self.norm_ff(x))
