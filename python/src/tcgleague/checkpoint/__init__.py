"""Checkpoints: the file format, saving and THE load-and-validate path (files.py), the
structural check of every field (fields.py; its type checks and errors in field_types.py, the run state's
validators in run_state_fields.py), and converting older files (convert.py,
`python -m tcgleague.checkpoint convert`); whether a file fits this code (compatible.py)."""

from .field_types import CheckpointError, FieldError
from .fields import check_against_policy, check_fields, check_resume_fields
from .files import (
    FORMAT,
    FORMAT_VERSION,
    LoadedCheckpoint,
    checkpoint_path,
    latest_checkpoint,
    list_checkpoints,
    load_checkpoint,
    prune_checkpoints,
    save_checkpoint,
    save_policy,
    write_checkpoint,
)

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "CheckpointError",
    "FieldError",
    "LoadedCheckpoint",
    "check_against_policy",
    "check_fields",
    "check_resume_fields",
    "checkpoint_path",
    "latest_checkpoint",
    "list_checkpoints",
    "load_checkpoint",
    "prune_checkpoints",
    "save_checkpoint",
    "save_policy",
    "write_checkpoint",
]
