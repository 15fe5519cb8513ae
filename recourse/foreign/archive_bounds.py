"""How much a weights file may make us read, decided from its layout before any entry or tensor
is read.

* A ``torch.export`` archive (``.pt2``) is a zip whose entries torch.export.save stores
  uncompressed, one after another. A zip's central directory may instead point many entries at
  the same bytes (each entry's local header lying inside the previous entry's data), so that a
  10 MB file reads as 40 entries of 10 MB each, and everything is read before any check.
  Entries are therefore accepted only when their spans (local header, name, extra field, data)
  do not intersect each other or the central directory, and what they declare adds up to no
  more than the archive itself and :data:`MAX_PROGRAM_BYTES`.
* A safetensors file starts with a little-endian u64 giving its JSON header's length; the
  safetensors library accepts headers up to 100 MB, and ``__metadata__`` (free text) of that
  size takes seconds and hundreds of MB to parse, for nothing a classifier needs.

Each check is a pure function of the bytes and returns why the file is refused, or None; the
caller names the file in the message.
"""

from __future__ import annotations

import json
import struct
import zipfile

# Every entry of a torch.export archive is read before the checks, then written again: the
# bytes held at once are about three times what the entries declare. 2 GiB of entries is a
# float32 classifier of 500 million parameters (a ViT-L is 300 million), far past a face
# attribute classifier, and still leaves what loading holds within a workstation's memory.
MAX_PROGRAM_BYTES = 2 * 2**30

# A safetensors header lists each tensor in about 100-150 bytes of JSON
# ("name": {"dtype": "F32", "shape": [...], "data_offsets": [a, b]}): 8 MiB holds some 60,000
# tensors, while the architectures a card may name have a few hundred and even the largest
# published checkpoints have a few thousand per file (under 1 MB of header).
MAX_SAFETENSORS_HEADER = 8 * 2**20
# ``__metadata__`` is a few short strings (format, a licence, a commit); 64 KiB is generous.
MAX_SAFETENSORS_METADATA = 64 * 2**10

_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # zipfile's own layout of a local file header
_LOCAL_SIGNATURE = b"PK\x03\x04"


def program_entries_problem(data: bytes, infos: list[zipfile.ZipInfo], directory_start: int) -> str | None:
    """Why the entries ``infos`` of the zip ``data`` (its central directory at
    ``directory_start``) are not each stored once, side by side, within budget; or None."""
    spans = []
    declared = 0
    for info in infos:
        if info.compress_type != zipfile.ZIP_STORED:
            # torch.export.save stores entries uncompressed; a compressed one may be a zip bomb
            return f"entry {info.filename!r} is compressed, which torch.export.save never does"
        if info.file_size != info.compress_size:
            return f"entry {info.filename!r} is stored with {info.compress_size} bytes but declares {info.file_size}"
        start = info.header_offset
        header = data[start:start + _LOCAL_HEADER.size] if start >= 0 else b""
        if len(header) != _LOCAL_HEADER.size or header[:4] != _LOCAL_SIGNATURE:
            return f"entry {info.filename!r} has no local header where the central directory says"
        fields = _LOCAL_HEADER.unpack(header)
        name_length, extra_length = fields[-2], fields[-1]
        spans.append((start, start + _LOCAL_HEADER.size + name_length + extra_length + info.compress_size,
                      info.filename))
        declared += info.file_size
    spans.sort()
    for (_, end, name), (next_start, _, next_name) in zip(spans, spans[1:]):
        if next_start < end:
            return (f"entries {name!r} and {next_name!r} share bytes (a zip whose entries overlap reads the same "
                    "data many times over; torch.export.save writes each entry once)")
    if spans and spans[-1][1] > directory_start:
        return f"entry {spans[-1][2]!r} runs into the archive's central directory"
    if declared > len(data):
        return f"its entries declare {declared} bytes, more than the archive's own {len(data)}"
    if declared > MAX_PROGRAM_BYTES:
        return (f"its entries declare {declared / 2**30:.1f} GB, more than the {MAX_PROGRAM_BYTES // 2**30} GB a "
                "classifier program is allowed")
    return None


def safetensors_header_problem(data: bytes) -> str | None:
    """Why the safetensors ``data``'s header is not a modest JSON table; or None."""
    if len(data) < 8:
        return "not a readable safetensors file (shorter than its 8-byte header length)"
    (length,) = struct.unpack("<Q", data[:8])
    if length > len(data) - 8:
        return (f"not a readable safetensors file (its header is said to take {length} bytes, the file has "
                f"{len(data) - 8} after the length)")
    if length > MAX_SAFETENSORS_HEADER:
        return (f"its header takes {length / 2**20:.1f} MB, more than the {MAX_SAFETENSORS_HEADER // 2**20} MB a "
                "table of tensors needs; refused")
    try:
        header = json.loads(data[8:8 + length].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        return f"not a readable safetensors file (its header is not JSON: {error})"
    if not isinstance(header, dict):
        return "not a readable safetensors file (its header is not a JSON object)"
    metadata = header.get("__metadata__")
    size = len(json.dumps(metadata, ensure_ascii=False).encode("utf-8")) if metadata is not None else 0
    if size > MAX_SAFETENSORS_METADATA:
        return (f"its __metadata__ takes {size / 2**10:.0f} KB, more than the {MAX_SAFETENSORS_METADATA // 2**10} KB "
                "of notes a weights file needs; refused")
    return None
