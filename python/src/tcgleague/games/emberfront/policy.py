"""The Emberfront policy: entity encoder, LSTM core, value head and autoregressive action heads.

Every offset comes from the engine's exported `LAYOUT`; raw feature values (small integers) are
scaled here by fixed constants. The module is fully batched, never syncs with the host and has
no data-dependent shapes (masking only), so it runs under `torch.compile` with fixed shapes.

Shapes (`...` = any leading batch dims, N = n_entities + 1 rows, the last being the learned
NONE row at index `none_entity`):
    encode(obs [..., OBS_BYTES] compact rows, or their features) -> x [..., H], ent [..., N, D]
    step(x [B, H], (h, c))                -> out [B, H], (h, c)
    value(out [..., H])                   -> [...]
    type_logits(out)                      -> [..., n_action_types]
    a_logits(out, ent, type)              -> [..., n_a]      (pointer over entity rows)
    b_logits(out, ent, type, a)           -> [..., n_b]      (pointer, conditioned on ent[a])
    c_logits(out, ent, type, a, b)        -> [..., n_c]      (board-slot bins)
    legal_logits(out [B, H], ent, legal [B, L, 4], effects [B, L, K]) -> [B, L]  (one logit per
                                                  legal tuple: with legal_scorer_dim > 0, instead
                                                  of the four above)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import torch
import torch.nn.functional as F
from torch import nn

from ...policy.family import config_from_dict, seeded, with_weights
from ...recurrent import lstm_cell
from .attention import EntityAttention
from .engine import LAYOUT
from .features import (
    DEFAULT_SCALE,
    EFFECT_SCALES,
    ENTITY_CATEGORICAL,
    ENTITY_SCALES,
    GLOBAL_CATEGORICAL,
    GLOBAL_SCALES,
    entity_groups,
)
from .layout import wide_features

OPTIONAL_WIDTHS = (
    "entity_attention_layers",
    "legal_scorer_dim",
    "legal_effect_dim",
)  # PolicyConfig fields where 0 means "off"


FAMILY = "tcg"  # its name in a checkpoint (an architecture stored without a "family" is this one)


@dataclass
class PolicyConfig:
    """Architecture of a TCGPolicy; saved with checkpoints (`to_dict` / `from_dict`)."""

    n_cards: int
    card_embed_dim: int = 32
    entity_dim: int = 64
    hidden_size: int = 128
    n_decks: int = 32  # deck-id embedding rows (ids are clamped into range)
    entity_attention_layers: int = 0  # transformer layers over the entity rows (0 = none)
    legal_scorer_dim: int = 0  # > 0: score each legal action whole, factors this wide (0 = staged heads)
    legal_effect_dim: int = 0  # > 0 (with the scorer): also score what each action does, a layer this wide

    def __post_init__(self):
        for f in fields(self):
            v, least = getattr(self, f.name), 0 if f.name in OPTIONAL_WIDTHS else 1
            if isinstance(v, bool) or not isinstance(v, int) or v < least:
                raise ValueError(f"PolicyConfig.{f.name} must be an int >= {least}, got {v!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> PolicyConfig:
        return config_from_dict(cls, d)


def gather_rows(ent: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """ent [..., N, D], index [...] long -> ent[..., index, :] as [..., D] (torch.gather).
    index may carry one extra trailing dim K ([..., K] -> [..., K, D])."""
    squeeze = index.dim() == ent.dim() - 2
    idx = index.clamp(0, ent.shape[-2] - 1)
    if squeeze:
        idx = idx.unsqueeze(-1)
    out = torch.gather(ent, -2, idx.unsqueeze(-1).expand(*idx.shape, ent.shape[-1]))
    return out.squeeze(-2) if squeeze else out


class TCGPolicy(nn.Module):
    # The builders below create every parameter in a fixed order (the order of the RNG draws and
    # of the state-dict keys): layout, entity encoder, pooling, globals, core, heads.
    def __init__(self, config: PolicyConfig):
        super().__init__()
        self.config = config
        self._read_layout()
        self._build_entity_encoder()
        pooled = self._build_pooling()
        self._build_globals()
        self._build_core(pooled)
        self._build_heads()

    def _read_layout(self) -> None:
        L, config = LAYOUT, self.config
        self.n_entities = L["n_entities"]
        self.entity_width = L["entity_width"]
        self.entity_offset = L["entity_offset"]
        self.global_offset, self.global_size = L["global_offset"], L["global_size"]
        self.none_entity = L["none_entity"]
        self.n_action_types, self.n_a, self.n_b, self.n_c = L["n_action_types"], L["n_a"], L["n_b"], L["n_c"]
        self.n_card_types = len(L["card_types"])
        self.n_ops = len(L["ops"])
        assert self.n_a == self.n_b == self.n_entities + 1 == self.none_entity + 1
        self.entity_dim, self.hidden_size = config.entity_dim, config.hidden_size
        self.point_scale = 1.0 / math.sqrt(config.entity_dim)

    def _build_entity_encoder(self) -> None:
        """Entity features: card id embedded, type one-hot, the rest scaled numerics."""
        config, D, E = self.config, self.config.entity_dim, self.config.card_embed_dim
        ef = LAYOUT["entity_features"]
        self.ef_card, self.ef_type, self.ef_present = ef["card"], ef["type"], ef["present"]
        num_names = [n for n, _ in sorted(ef.items(), key=lambda kv: kv[1]) if n not in ENTITY_CATEGORICAL]
        self.register_buffer(
            "ent_num_idx", torch.tensor([ef[n] for n in num_names], dtype=torch.long), persistent=False
        )
        self.register_buffer(
            "ent_num_scale", torch.tensor([ENTITY_SCALES.get(n, DEFAULT_SCALE) for n in num_names]), persistent=False
        )
        # Entity rows 0..n-1 plus a NONE row at index none_entity (pointer target "none"); the NONE
        # row's input is a learned slot embedding with no card and zero numerics, so ent[none] is
        # a learned constant. First layer = Linear(cat[card_embed, slot one-hot, numerics, type
        # one-hot]), computed as one lookup into a per-call (slot, card) table (card embeddings
        # projected once, plus the slot embedding) added to a small matmul over the numerics.
        self.card_embed = nn.Embedding(config.n_cards, E)
        self.card_proj = nn.Linear(E, D)
        self.slot_embed = nn.Parameter(torch.randn(self.n_entities + 1, D) * 0.1)  # zone/side/slot, + NONE
        self.n_ent_num = len(num_names) + self.n_card_types
        self.ent_num = nn.Linear(self.n_ent_num, D, bias=False)
        self.ent_out = nn.Linear(D, D)
        heads = 4 if D % 4 == 0 else 1
        self.attention = nn.ModuleList(EntityAttention(D, heads) for _ in range(config.entity_attention_layers))
        self.register_buffer("slot_base", torch.arange(self.n_entities + 1) * config.n_cards, persistent=False)

    def _build_pooling(self) -> int:
        """Set pooling per zone: groups of size > 1 get masked mean + max, singletons the row.
        Returns the width of the pooled features."""
        D = self.entity_dim
        self.groups = entity_groups()
        assert [s for _, s, _ in self.groups] == [0] + [e for _, _, e in self.groups[:-1]], (
            "entity groups not contiguous"
        )
        self.group_sizes = [e - s for _, s, e in self.groups] + [1]  # + the NONE row
        return sum(2 * D if e - s > 1 else D for _, s, e in self.groups)

    def _build_globals(self) -> None:
        config, D, E = self.config, self.entity_dim, self.config.card_embed_dim
        gf = LAYOUT["global_features"]
        gnum = [n for n, _ in sorted(gf.items(), key=lambda kv: kv[1]) if n not in GLOBAL_CATEGORICAL]
        self.register_buffer("glob_num_idx", torch.tensor([gf[n] for n in gnum], dtype=torch.long), persistent=False)
        self.register_buffer(
            "glob_num_scale", torch.tensor([GLOBAL_SCALES.get(n, DEFAULT_SCALE) for n in gnum]), persistent=False
        )
        self.g_pending_card, self.g_pending_op = gf["pending_card"], gf["pending_op"]
        self.g_attacker, self.g_attack_target = gf["attacker_entity"], gf["attack_target_entity"]
        self.g_my_deck, self.g_opp_deck = gf["my_deck_id"], gf["opp_deck_id"]
        self.deck_embed = nn.Embedding(config.n_decks, 8)
        g_in = len(gnum) + E + self.n_ops + 2 * D + 2 * 8
        self.glob_mlp = nn.Sequential(nn.Linear(g_in, D), nn.ReLU(), nn.Linear(D, D), nn.ReLU())

    def _build_core(self, pooled: int) -> None:
        """The trunk over the pooled entities and the globals, then the LSTM."""
        D, H = self.entity_dim, self.hidden_size
        self.trunk = nn.Sequential(nn.Linear(pooled + D, H), nn.ReLU(), nn.Linear(H, H), nn.LayerNorm(H))
        self.lstm = nn.LSTMCell(H, H)

    def _build_heads(self) -> None:
        D, H = self.entity_dim, self.hidden_size
        self.value_head = nn.Sequential(nn.Linear(H, D), nn.ReLU(), nn.Linear(D, 1))
        self.scores_legal_list = self.config.legal_scorer_dim > 0
        self.scores_effects = self.scores_legal_list and self.config.legal_effect_dim > 0
        if self.scores_legal_list:
            near_uniform = self._build_legal_scorer()
        else:
            near_uniform = self._build_staged_heads()
        # near-uniform initial policy, small initial value (initialised in this order: RNG draws)
        for lin in near_uniform:
            nn.init.orthogonal_(lin.weight, gain=0.01)
            nn.init.zeros_(lin.bias)

    def _build_legal_scorer(self) -> tuple[nn.Linear, ...]:
        """One logit per legal tuple, a sum of small tables scored once per decision (so the
        cost does not grow with the list): the type, (type, source), (type, target), (type, slot)
        and (source, target). A softmax over the tuples weighs "attack" against "play" through
        the attacks and plays on offer, not through a type logit that must guess what the later
        stages will find. Returns the layers to initialise near uniform."""
        D, H, T = self.entity_dim, self.hidden_size, self.n_action_types
        S = self.config.legal_scorer_dim
        self.ls_type = nn.Linear(H, T)
        self.ls_qa, self.ls_ka = nn.Linear(H, T * S), nn.Linear(D, S, bias=False)
        self.ls_qb, self.ls_kb = nn.Linear(H, T * S), nn.Linear(D, S, bias=False)
        self.ls_c = nn.Linear(H, T * self.n_c)
        self.ls_gate = nn.Linear(H, S)
        self.ls_src, self.ls_tgt = nn.Linear(D, S, bias=False), nn.Linear(D, S, bias=False)
        near_uniform = (self.ls_type, self.ls_qa, self.ls_qb, self.ls_c, self.ls_gate, self.value_head[-1])
        if self.scores_effects:
            near_uniform += self._build_effect_scorer()
        return near_uniform

    def _build_effect_scorer(self) -> tuple[nn.Linear, ...]:
        """What an action does at once (the engine applies it to a public copy of the game):
        "this attack kills their unit and loses mine" as a feature instead of a threshold the
        factor tables would have to learn from attack and health values."""
        H, T, X = self.hidden_size, self.n_action_types, self.config.legal_effect_dim
        names = [n for n, _ in sorted(LAYOUT["effect_features"].items(), key=lambda kv: kv[1])]
        scales = [EFFECT_SCALES.get(n, DEFAULT_SCALE) for n in names]
        self.register_buffer("effect_scale", torch.tensor(scales), persistent=False)
        self.ls_fx = nn.Sequential(nn.Linear(len(names), X), nn.ReLU())
        self.ls_qfx = nn.Linear(H, T * X)
        return (self.ls_qfx,)

    def _build_staged_heads(self) -> tuple[nn.Linear, ...]:
        """The autoregressive heads: type, then pointers a and b, then the slot c. Returns the
        layers to initialise near uniform."""
        D, H, T = self.entity_dim, self.hidden_size, self.n_action_types
        self.type_head = nn.Linear(H, T)
        self.qa_out, self.qa_type = nn.Linear(H, D), nn.Embedding(T, D)
        self.qa = nn.Linear(D, D)  # pointer query; a key projection of ent would be redundant
        self.qb_out, self.qb_type, self.qb_a = nn.Linear(H, D), nn.Embedding(T, D), nn.Linear(D, D, bias=False)
        self.qb = nn.Linear(D, D)
        self.qc_out, self.qc_type = nn.Linear(H, D), nn.Embedding(T, D)
        self.qc_a, self.qc_b = nn.Linear(D, D, bias=False), nn.Linear(D, D, bias=False)
        self.c_head = nn.Linear(D, self.n_c)
        return (self.type_head, self.qa, self.qb, self.c_head, self.value_head[-1])

    # ------------------------------------------------------------------ encoder
    def encode(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        lead = obs.shape[:-1]
        obs = obs.reshape(-1, obs.shape[-1])
        B = obs.shape[0]
        n, w = self.n_entities, self.entity_width
        wide = wide_features(obs)  # compact rows cast here, on the device: only the part encoded
        raw = wide[:, self.entity_offset : self.entity_offset + n * w].reshape(B, n, w)
        card = raw[..., self.ef_card].long().clamp(0, self.config.n_cards - 1)
        ctype = F.one_hot(raw[..., self.ef_type].long().clamp(0, self.n_card_types - 1), self.n_card_types)
        num = torch.cat([raw.index_select(-1, self.ent_num_idx) * self.ent_num_scale, ctype.to(raw.dtype)], -1)
        num = F.pad(num, (0, 0, 0, 1))  # NONE row: zero numerics
        index = F.pad(card, (0, 1)) + self.slot_base  # [B, n + 1] into the table
        table = self.card_proj(self.card_embed.weight).unsqueeze(0) + self.slot_embed.unsqueeze(1)
        lookup = F.embedding(index, table.reshape(-1, self.entity_dim))  # [B, n + 1, D]
        h = torch.addmm(lookup.reshape(-1, self.entity_dim), num.reshape(-1, self.n_ent_num), self.ent_num.weight.t())
        h = F.relu(self.ent_out(F.relu(h))).reshape(B, n + 1, self.entity_dim)
        present = raw[..., self.ef_present].gt(0.5).to(h.dtype)  # [B, n]
        if len(self.attention):
            visible = F.pad(present, (0, 1), value=1.0)  # + the NONE row
            for layer in self.attention:
                h = layer(h, visible)
            h = F.relu(h)
        ent = h  # [B, n + 1, D], >= 0

        # set pooling per zone: masked mean and max (rows are >= 0 after ReLU, so zeroing absent
        # rows gives the max over present rows, and 0 for an empty zone)
        pf = F.pad(present, (0, 1))  # [B, n + 1], NONE row 0
        hm = h * pf.unsqueeze(-1)
        # one split (its backward is a single cat) instead of slices (each slice's backward
        # would zero-fill a full [B, n + 1, D] gradient)
        parts = torch.split(hm, self.group_sizes, dim=1)
        counts = torch.split(pf, self.group_sizes, dim=1)
        pooled = []
        for part, cnt in zip(parts[: len(self.groups)], counts):
            if part.shape[1] == 1:
                pooled.append(part[:, 0])
                continue
            pooled.append(part.sum(1) / cnt.sum(1, keepdim=True).clamp(min=1.0))
            pooled.append(part.amax(1))

        g = wide[:, self.global_offset : self.global_offset + self.global_size]
        gnum = g.index_select(-1, self.glob_num_idx) * self.glob_num_scale
        pcard = self.card_embed(g[:, self.g_pending_card].long().clamp(0, self.config.n_cards - 1))
        pop = F.one_hot(g[:, self.g_pending_op].long().clamp(0, self.n_ops - 1), self.n_ops).to(gnum.dtype)
        # stack of slices, not g[:, [i, j]]: a Python-list index is a new host tensor every call
        att_tgt = gather_rows(ent, torch.stack([g[:, self.g_attacker], g[:, self.g_attack_target]], -1).long())
        att_tgt = att_tgt.reshape(B, -1)
        decks = self.deck_embed(
            torch.stack([g[:, self.g_my_deck], g[:, self.g_opp_deck]], -1).long().clamp(0, self.config.n_decks - 1)
        ).reshape(B, -1)
        gl = self.glob_mlp(torch.cat([gnum, pcard, pop, att_tgt, decks], -1))

        x = self.trunk(torch.cat(pooled + [gl], -1))
        return x.reshape(*lead, -1), ent.reshape(*lead, n + 1, self.entity_dim)

    # ------------------------------------------------------------------ recurrence
    def step(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor]):
        """One LSTM step (recurrent.lstm_cell: the same math everywhere, vmap-able)."""
        h, c = lstm_cell(self.lstm, x, *state)
        return h, (h, c)

    # ------------------------------------------------------------------ heads
    def value(self, out: torch.Tensor) -> torch.Tensor:
        return self.value_head(out).squeeze(-1)

    def type_logits(self, out: torch.Tensor) -> torch.Tensor:
        return self.type_head(out)

    def _point(self, q: torch.Tensor, ent: torch.Tensor) -> torch.Tensor:
        # multiply-sum rather than einsum/bmm: as fast forward on CPU and much faster backward
        return (ent * (q * self.point_scale).unsqueeze(-2)).sum(-1)

    def a_logits(self, out: torch.Tensor, ent: torch.Tensor, type_: torch.Tensor) -> torch.Tensor:
        q = self.qa(F.relu(self.qa_out(out) + self.qa_type(type_)))
        return self._point(q, ent)

    def b_logits(self, out: torch.Tensor, ent: torch.Tensor, type_: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        ea = gather_rows(ent, a)
        q = self.qb(F.relu(self.qb_out(out) + self.qb_type(type_) + self.qb_a(ea)))
        return self._point(q, ent)

    def c_logits(
        self, out: torch.Tensor, ent: torch.Tensor, type_: torch.Tensor, a: torch.Tensor, b: torch.Tensor
    ) -> torch.Tensor:
        eab = gather_rows(ent, torch.stack([a, b], -1))  # one gather: [..., 2, D]
        ea, eb = eab[..., 0, :], eab[..., 1, :]
        z = F.relu(self.qc_out(out) + self.qc_type(type_) + self.qc_a(ea) + self.qc_b(eb))
        return self.c_head(z)

    def legal_logits(
        self, out: torch.Tensor, ent: torch.Tensor, legal: torch.Tensor, effects: torch.Tensor | None = None
    ) -> torch.Tensor:
        """out [B, H], ent [B, N, D], legal [B, L, 4] long, effects [B, L, K] (what each tuple
        does; read when legal_effect_dim > 0) -> one logit per legal tuple [B, L]."""
        B, N, T, C = out.shape[0], ent.shape[-2], self.n_action_types, self.n_c
        S = self.config.legal_scorer_dim
        scale = 1.0 / math.sqrt(S)
        by_source = self.ls_qa(out).reshape(B, T, S) @ self.ls_ka(ent).transpose(1, 2)  # [B, T, N]
        by_target = self.ls_qb(out).reshape(B, T, S) @ self.ls_kb(ent).transpose(1, 2)
        pair = (self.ls_src(ent) * self.ls_gate(out).unsqueeze(1)) @ self.ls_tgt(ent).transpose(1, 2)  # [B, N, N]
        t = legal[..., 0].clamp(0, T - 1)
        a, b, c = legal[..., 1].clamp(0, N - 1), legal[..., 2].clamp(0, N - 1), legal[..., 3].clamp(0, C - 1)
        logits = (
            self.ls_type(out).gather(1, t)
            + scale * by_source.reshape(B, T * N).gather(1, t * N + a)
            + scale * by_target.reshape(B, T * N).gather(1, t * N + b)
            + self.ls_c(out).gather(1, t * C + c)
            + scale * pair.reshape(B, N * N).gather(1, a * N + b)
        )
        if not self.scores_effects:
            return logits
        if effects is None:
            raise ValueError("this policy scores what each action does: pass effects (layout.effects_from_obs)")
        X = self.config.legal_effect_dim
        what = self.ls_fx(effects.to(out.dtype) * self.effect_scale)  # [B, L, X]
        # every type's score of every tuple [B, L, T], then the tuple's own: one batched matmul
        # instead of a query gathered per tuple (half the time of this term on the CPU)
        by_type = what @ self.ls_qfx(out).reshape(B, T, X).transpose(1, 2)
        return logits + by_type.gather(2, t[..., None]).squeeze(-1) / math.sqrt(X)


# ---- building and loading --------------------------------------------------------------------
def build_policy(config: PolicyConfig, seed: int = 0) -> TCGPolicy:
    """A TCGPolicy initialised from `seed` without touching the global torch RNG (building a
    policy, e.g. loading a league member, must not move anybody else's random stream)."""
    return seeded(lambda: TCGPolicy(config), seed)


def policy_from_state(state_dict: dict, config: PolicyConfig) -> TCGPolicy:
    """A TCGPolicy holding `state_dict` (compiled or not); raises on a mismatch."""
    return with_weights(build_policy(config), state_dict)
