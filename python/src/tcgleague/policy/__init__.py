"""Policy families: the contract every game's policy and sampler keep (`family`), and Emberfront's
(`TCGPolicy`, `TCGSampler`)."""

from .tcg_policy import PolicyConfig, TCGPolicy, build_policy, gather_rows, policy_from_state
from .tcg_sampler import PARAM_NAMES, TCGSampler

__all__ = ["PolicyConfig", "TCGPolicy", "TCGSampler", "PARAM_NAMES", "build_policy", "gather_rows", "policy_from_state"]
