"""Reads the records of an offline W&B run log (shared by the logger and trainer tests)."""

import struct
import time


def read_wandb_records(path, timeout: float = 60.0):
    """Records of a W&B transaction log (`run-<id>.wandb`, LevelDB log framing). W&B's service
    process writes the log asynchronously, so on a loaded machine this waits (up to `timeout`)
    for the run's exit record, re-reading while the record being written does not parse yet."""
    from google.protobuf.message import DecodeError

    deadline = time.monotonic() + timeout
    while True:
        try:
            records = _parse(path)
        except DecodeError:
            if time.monotonic() > deadline:
                raise
            records = []
        if any(r.WhichOneof("record_type") == "exit" for r in records) or time.monotonic() > deadline:
            return records
        time.sleep(0.5)


def _parse(path):
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    block, hdr, pos, pending, out = 32768, 7, 7, b"", []
    while pos + hdr <= len(data):
        if block - pos % block < hdr:
            pos += block - pos % block
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + hdr])
        pos += hdr
        if pos + length > len(data):  # the chunk being written: read again later
            break
        if kind == 0:
            pos += (block - pos % block) % block
            continue
        chunk, pos = data[pos : pos + length], pos + length
        if kind == 1:
            out.append(chunk)
        elif kind == 2:
            pending = chunk
        elif kind == 3:
            pending += chunk
        elif kind == 4:
            out.append(pending + chunk)
    records = []
    for raw in out:
        rec = pb.Record()
        rec.ParseFromString(raw)
        records.append(rec)
    return records
