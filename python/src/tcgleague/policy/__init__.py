"""Policy families: the contract every game's policy and sampler keep (`family`), and Emberfront's
(`TCGPolicy`, `TCGSampler`)."""

from .sampling import PARAM_NAMES
from .tcg_policy import PolicyConfig, TCGPolicy, build_policy, gather_rows, policy_from_state
from .tcg_sampler import TCGSampler

__all__ = ["PolicyConfig", "TCGPolicy", "TCGSampler", "PARAM_NAMES", "build_policy", "gather_rows", "policy_from_state"]
