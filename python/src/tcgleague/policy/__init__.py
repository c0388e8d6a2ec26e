"""Policy network and action sampler for Emberfront."""
from .tcg_policy import PolicyConfig, TCGPolicy, gather_rows, legal_from_obs
from .tcg_sampler import PARAM_NAMES, TCGSampler

__all__ = ["PolicyConfig", "TCGPolicy", "TCGSampler", "PARAM_NAMES", "gather_rows", "legal_from_obs"]
