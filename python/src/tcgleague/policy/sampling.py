"""The sampling math every policy family shares: the parameters a sampler keeps
(`SamplingParameters`: primary_temperature, subaction_temperature, smoothing_eps, checked and set
in place) and one masked, tempered, smoothed softmax stage (`stage_logp`): Emberfront's sampler
runs it per stage of its actions, a small game's over its few actions."""

from __future__ import annotations

import math

import torch

PARAM_NAMES = ("primary_temperature", "subaction_temperature", "smoothing_eps")
MASKED = -1e9  # masked logit: exp underflows to exactly 0, but finite (no NaN in gradients)


def check_temperature(name: str, value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number > 0, got {value!r}") from None
    if isinstance(value, bool) or not math.isfinite(v) or not v > 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return v


def check_eps(value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"smoothing_eps must be a number in [0, 1), got {value!r}") from None
    if isinstance(value, bool) or not (0.0 <= v < 1.0):
        raise ValueError(f"smoothing_eps must be in [0, 1), got {value!r}")
    return v


def stage_logp(
    logits: torch.Tensor, mask: torch.Tensor, temperature: torch.Tensor, eps: torch.Tensor | None
) -> torch.Tensor:
    """log p of the stage distribution [B, n]; illegal values get ~-1e9 (p exactly 0)."""
    z = torch.where(mask, logits.float() / temperature[:, None], torch.full_like(logits, MASKED, dtype=torch.float32))
    logp = torch.log_softmax(z, -1)
    if eps is None:
        return logp
    n_legal = mask.sum(-1, keepdim=True).clamp(min=1).to(logp.dtype)
    e = eps[:, None]
    log_uniform = torch.where(mask, torch.log(e) - torch.log(n_legal), torch.full_like(logp, MASKED))
    # logaddexp(log((1-eps) p), log(eps / n)); log(0) = -inf when eps = 0 leaves logp unchanged.
    return torch.logaddexp(torch.log1p(-e) + logp, log_uniform)


class SamplingParameters:
    """The sampling parameters a sampler keeps, settable at run time: a float32 tensor [3] =
    PARAM_NAMES, changed in place so compiled code holding it never recompiles."""

    def __init__(
        self, primary_temperature: float = 1.0, subaction_temperature: float = 1.0, smoothing_eps: float = 0.0
    ):
        self._params = torch.zeros(3, dtype=torch.float32)
        self._params[:] = torch.tensor([1.0, 1.0, 0.0])
        self.set_sampling_params(primary_temperature, subaction_temperature, smoothing_eps)

    def set_sampling_params(self, primary_temperature=None, subaction_temperature=None, smoothing_eps=None) -> None:
        new = self._params.clone()
        if primary_temperature is not None:
            new[0] = check_temperature("primary_temperature", primary_temperature)
        if subaction_temperature is not None:
            new[1] = check_temperature("subaction_temperature", subaction_temperature)
        if smoothing_eps is not None:
            new[2] = check_eps(smoothing_eps)
        self._params.copy_(new)  # in place: compiled code holding the tensor sees the new values

    @classmethod
    def from_params(cls, params: dict | None) -> SamplingParameters:
        """A sampler set to `params` (a `get_sampling_params()` dict, e.g. a checkpoint's); keys
        that are not sampling parameters are ignored, missing ones keep their defaults."""
        sampler = cls()
        sampler.set_sampling_params(**{k: v for k, v in (params or {}).items() if k in PARAM_NAMES})
        return sampler

    def get_sampling_params(self) -> dict:
        return dict(zip(PARAM_NAMES, (float(v) for v in self._params.tolist())))

    def params_tensor(self, device=None) -> torch.Tensor:
        """A copy of the current parameters as a float32 tensor [3] (store it per step for PPO)."""
        return self._params.clone() if device is None else self._params.to(device, copy=True)

    def row_params(self, params, B: int, device) -> torch.Tensor:
        """The sampling parameters (these, or the sampler's own) for each of B rows: float32 [B, 3]."""
        params = (self._params if params is None else params).to(device=device, dtype=torch.float32)
        return params.reshape(-1, 3).expand(B, 3) if params.numel() == 3 else params.reshape(B, 3)
